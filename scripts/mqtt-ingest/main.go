// Command mqtt-ingest is a reference ingest of plantd's MQTT uplink into
// PostgreSQL, written from docs/mqtt.md alone (it imports no plantd
// package; it is not part of the gateway). It subscribes with QoS 1 to
// the gateways' up/ topics (through a shared subscription with -share,
// where the broker offers one), and writes each envelope in a
// transaction: its seqs, seq..lastSeq expanded, into uplink_seq, whose
// primary key (gateway_id, stream, seq) absorbs duplicates, and the
// envelope with its items into uplink_envelope when one of its seqs is
// new. A gateway's state (gateway_state) is its newest state message,
// whatever order the broker delivers them in (writeState). A message is
// acknowledged (PUBACK) only after its transaction
// committed, so an ingest that dies loses nothing its broker keeps for
// its persistent session (-session). At the end it reports per stream
// the seqs, duplicates and gaps (exit 1 when a rollup, log or ack stream
// has a gap; live streams' gaps are plantd's dropped live values).
//
//	go run ./scripts/mqtt-ingest -broker tcp://127.0.0.1:1883 -pgtemp /tmp/ingest -for 10m
//
// -pgtemp DIR starts a throwaway PostgreSQL in DIR (initdb on first use;
// as user postgres when run as root; initdb and pg_ctl from PATH or
// Debian's /usr/lib/postgresql/VERSION/bin) and stops it at the end; -db
// gives a connection string instead. -report only prints the report of
// the database; -v logs each state message. The schema and example
// queries are in docs/mqtt.md.
//
// Imports: none
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/jackc/pgx/v5"
)

const schema = `
CREATE TABLE IF NOT EXISTS uplink_envelope (
  id          bigserial PRIMARY KEY,
  gateway_id  text NOT NULL,
  stream      text NOT NULL,
  seq         bigint NOT NULL,
  last_seq    bigint NOT NULL,
  boot_id     text NOT NULL,
  historical  boolean NOT NULL,
  items       jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS uplink_seq (
  gateway_id  text NOT NULL,
  stream      text NOT NULL,
  seq         bigint NOT NULL,
  envelope_id bigint NOT NULL REFERENCES uplink_envelope (id),
  PRIMARY KEY (gateway_id, stream, seq)
);
CREATE TABLE IF NOT EXISTS uplink_stream (
  gateway_id  text NOT NULL,
  stream      text NOT NULL,
  messages    bigint NOT NULL DEFAULT 0,
  duplicates  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (gateway_id, stream)
);
CREATE TABLE IF NOT EXISTS gateway_state (
  gateway_id  text PRIMARY KEY,
  state       text NOT NULL,
  boot_id     text NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT '-infinity',
  since       timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE gateway_state ADD COLUMN IF NOT EXISTS started_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE gateway_state ADD COLUMN IF NOT EXISTS since timestamptz NOT NULL DEFAULT now();`

// envelope is what plantd publishes on up/... topics.
type envelope struct {
	GatewayID  string          `json:"gatewayId"`
	BootID     string          `json:"bootId"`
	Stream     string          `json:"stream"`
	Seq        uint64          `json:"seq"`
	LastSeq    uint64          `json:"lastSeq"`
	Historical bool            `json:"historical"`
	Items      json.RawMessage `json:"items"`
}

// write stores one envelope in tx and returns how many of its seqs were
// there already.
func write(ctx context.Context, tx pgx.Tx, e envelope) (dups int64, err error) {
	last := max(e.LastSeq, e.Seq)
	items := e.Items
	if len(items) == 0 {
		items = json.RawMessage("[]")
	}
	var id, fresh int64
	err = tx.QueryRow(ctx, `
WITH env AS (
  INSERT INTO uplink_envelope (gateway_id, stream, seq, last_seq, boot_id, historical, items)
  VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id),
ins AS (
  INSERT INTO uplink_seq (gateway_id, stream, seq, envelope_id)
  SELECT $1, $2, s, (SELECT id FROM env) FROM generate_series($3::bigint, $4::bigint) s
  ON CONFLICT DO NOTHING RETURNING 1)
SELECT (SELECT id FROM env), count(*) FROM ins`,
		e.GatewayID, e.Stream, int64(e.Seq), int64(last), e.BootID, e.Historical, items).Scan(&id, &fresh)
	if err != nil {
		return 0, fmt.Errorf("envelope %s %s %d: %w", e.GatewayID, e.Stream, e.Seq, err)
	}
	if fresh == 0 { // every seq seen before: no second copy of the items
		if _, err := tx.Exec(ctx, `DELETE FROM uplink_envelope WHERE id = $1`, id); err != nil {
			return 0, err
		}
	}
	dups = int64(last-e.Seq+1) - fresh
	_, err = tx.Exec(ctx, `
INSERT INTO uplink_stream (gateway_id, stream, messages, duplicates) VALUES ($1, $2, 1, $3)
ON CONFLICT (gateway_id, stream) DO UPDATE
SET messages = uplink_stream.messages + 1, duplicates = uplink_stream.duplicates + EXCLUDED.duplicates`,
		e.GatewayID, e.Stream, dups)
	return dups, err
}

// ingest writes the messages of in, in batches of up to 500 or 50 ms, each
// in one transaction, and acknowledges them after the commit.
func ingest(ctx context.Context, db *pgx.Conn, in <-chan paho.Message) error {
	var batch []paho.Message
	var applied []bool // per message of the batch: a state that became the gateway's
	flush := func(ctx context.Context) error {
		if len(batch) == 0 {
			return nil
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		applied = applied[:0]
		for _, m := range batch {
			a, err := handle(ctx, tx, m)
			if err != nil {
				return err
			}
			applied = append(applied, a)
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		for i, m := range batch {
			m.Ack()
			if verbose && strings.HasSuffix(m.Topic(), "/state") {
				logState(m, applied[i])
			}
		}
		batch = batch[:0]
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return flush(context.Background()) // what was taken is written and acknowledged
		case m := <-in:
			batch = append(batch, m)
			if len(batch) >= 500 {
				if err := flush(ctx); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(ctx); err != nil {
				return err
			}
		}
	}
}

// verbose (-v): each state message written is logged (logState).
var verbose bool

// logState writes a state message, once its transaction committed, to
// stderr as one line: "state", the gateway, its state, boot id and time,
// the message's MQTT flags, and whether it became the gateway's state
// (applied) or an older one was ignored.
func logState(m paho.Message, applied bool) {
	var s struct{ GatewayID, State, BootID, Time string }
	_ = json.Unmarshal(m.Payload(), &s)
	fmt.Fprintf(os.Stderr, "state %s %s boot %s time %q retained %v dup %v id %d applied %v at %s\n",
		s.GatewayID, s.State, s.BootID, s.Time, m.Retained(), m.Duplicate(), m.MessageID(), applied, time.Now().UTC().Format(time.RFC3339Nano))
}

// handle stores one message: an envelope, a state, or nothing (commands).
// For a state it returns whether it became the gateway's state.
func handle(ctx context.Context, tx pgx.Tx, m paho.Message) (applied bool, err error) {
	topic := m.Topic()
	if strings.HasSuffix(topic, "/state") {
		return writeState(ctx, tx, m.Payload())
	}
	if !strings.Contains(topic, "/up/") {
		return false, nil
	}
	var e envelope
	if err := json.Unmarshal(m.Payload(), &e); err != nil || e.Stream == "" || e.Seq == 0 || e.GatewayID == "" {
		fmt.Fprintf(os.Stderr, "bad envelope on %s: %v\n", topic, err)
		return false, nil
	}
	_, err = write(ctx, tx, e)
	return false, err
}

// writeState makes a state message the gateway's state unless the one
// stored is newer: a later plantd run (startedAt), or in the same run a
// later time (a message's "time", or its arrival for the last will, which
// has none; on a tie offline wins). A broker may deliver an older state
// after a newer one: NATS 2.9 redelivered a gateway's online state after
// its offline state once a node had died (docs/mqtt.md).
func writeState(ctx context.Context, tx pgx.Tx, payload []byte) (applied bool, err error) {
	var s struct{ GatewayID, State, BootID, Time, StartedAt string }
	if json.Unmarshal(payload, &s) != nil || s.GatewayID == "" {
		return false, nil
	}
	ts := func(v string) any { // NULL when absent or not a time
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil
		}
		return t
	}
	tag, err := tx.Exec(ctx, `
INSERT INTO gateway_state AS g (gateway_id, state, boot_id, started_at, since)
VALUES ($1, $2, $3, coalesce($4::timestamptz, '-infinity'), coalesce($5::timestamptz, now()))
ON CONFLICT (gateway_id) DO UPDATE
SET state = EXCLUDED.state, boot_id = EXCLUDED.boot_id, started_at = EXCLUDED.started_at, since = EXCLUDED.since, updated_at = now()
WHERE (EXCLUDED.started_at, EXCLUDED.since, EXCLUDED.state = 'offline') >= (g.started_at, g.since, g.state = 'offline')`,
		s.GatewayID, s.State, s.BootID, ts(s.StartedAt), ts(s.Time))
	if err != nil {
		return false, fmt.Errorf("state of %s: %w", s.GatewayID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// report prints per stream the seqs, duplicates and gaps; it reports
// whether every stream but live ones is without a gap (from seq 1 with
// from1).
func report(ctx context.Context, db *pgx.Conn, from1 bool) (bool, error) {
	lo := "min(q.seq)"
	if from1 {
		lo = "1"
	}
	rows, err := db.Query(ctx, `
SELECT q.gateway_id, q.stream, `+lo+`, max(q.seq), count(*), coalesce(max(s.messages), 0), coalesce(max(s.duplicates), 0),
       max(q.seq) - `+lo+` + 1 - count(*)
FROM uplink_seq q LEFT JOIN uplink_stream s USING (gateway_id, stream)
GROUP BY q.gateway_id, q.stream ORDER BY q.gateway_id, q.stream`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	ok := true
	fmt.Printf("%-40s %14s %10s %10s %6s %s\n", "gateway stream", "seqs", "distinct", "messages", "dups", "missing")
	for rows.Next() {
		var gw, stream string
		var first, last, n, msgs, dups, missing int64
		if err := rows.Scan(&gw, &stream, &first, &last, &n, &msgs, &dups, &missing); err != nil {
			return false, err
		}
		if missing > 0 && !strings.HasPrefix(stream, "live/") {
			ok = false
		}
		fmt.Printf("%-40s %14s %10d %10d %6d %d\n", gw+" "+stream, fmt.Sprintf("%d..%d", first, last), n, msgs, dups, missing)
	}
	return ok, rows.Err()
}

// pgBin finds a PostgreSQL server program (initdb, pg_ctl): on PATH, else
// in /usr/lib/postgresql/VERSION/bin, the newest version there, where
// Debian's postgresql package keeps them (only its client programs are on
// PATH).
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	for _, d := range dirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not on PATH nor in /usr/lib/postgresql/*/bin (apt-get install postgresql)", name)
}

// pgVersion is the major version of a /usr/lib/postgresql/VERSION/bin
// directory (0 when it is not a number).
func pgVersion(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// pgTemp starts a throwaway PostgreSQL in dir (initdb when new) on a free
// loopback port and returns its connection string and a stop function.
func pgTemp(ctx context.Context, dir string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	dir, _ = filepath.Abs(dir)
	data := filepath.Join(dir, "data")
	initdb, err := pgBin("initdb")
	if err != nil {
		return "", nil, err
	}
	pgCtl, err := pgBin("pg_ctl")
	if err != nil {
		return "", nil, err
	}
	// PostgreSQL refuses to run as root: then as user postgres (the
	// Debian package's).
	run := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
		return exec.CommandContext(ctx, name, args...)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return "", nil, fmt.Errorf("PostgreSQL refuses to run as root, and there is no user postgres to run it as: %w", err)
		}
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		if out, err := run(initdb, "-D", data, "-A", "trust", "-U", "ingest").CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("initdb: %v: %s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on", port, dir)
	if out, err := run(pgCtl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "postgres.log"), "-w", "start").CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	stop := func() { run(pgCtl, "-D", data, "-m", "fast", "-w", "stop").Run() }
	return fmt.Sprintf("postgres://ingest@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}

func main() {
	brokers := flag.String("broker", "tcp://127.0.0.1:1883", "broker URL; several separated by commas (the nodes of a cluster)")
	filter := flag.String("topic", "plantd/v1/+/up/#", "topic filter of the envelopes (the state topics are taken beside it)")
	share := flag.String("share", "", "shared subscription group ($share/GROUP/...), where the broker offers one")
	session := flag.String("session", "mqtt-ingest", "client id of the persistent session (clean session off)")
	dsn := flag.String("db", "", "PostgreSQL connection string")
	tmp := flag.String("pgtemp", "", "start a throwaway PostgreSQL in this directory (instead of -db)")
	dur := flag.Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	from1 := flag.Bool("from1", false, "report seqs missing from 1 (fresh gateway databases)")
	onlyReport := flag.Bool("report", false, "only print the report of the database")
	flag.BoolVar(&verbose, "v", false, "log each state message written, and whether it became the gateway's state (a line on stderr)")
	flag.Parse()
	if err := run(*brokers, *filter, *share, *session, *dsn, *tmp, *dur, *from1, *onlyReport); err != nil {
		fmt.Fprintf(os.Stderr, "mqtt-ingest: %v\n", err)
		var gaps errGaps
		if errors.As(err, &gaps) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

// errGaps: a stream has a gap.
type errGaps struct{}

func (errGaps) Error() string { return "a stream has a gap" }

func run(brokers, filter, share, session, dsn, tmp string, dur time.Duration, from1, onlyReport bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if tmp != "" {
		var pgStop func()
		var err error
		dsn, pgStop, err = pgTemp(context.Background(), tmp)
		if err != nil {
			return err
		}
		defer pgStop()
		fmt.Fprintf(os.Stderr, "postgres: %s (psql %q)\n", tmp, dsn)
	}
	if dsn == "" {
		return errors.New("give -db or -pgtemp")
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if !onlyReport {
		if err := subscribe(ctx, db, brokers, filter, share, session, dur); err != nil {
			return err
		}
	}
	ok, err := report(context.Background(), db, from1)
	if err != nil {
		return err
	}
	if !ok {
		return errGaps{}
	}
	return nil
}

// subscribe ingests until ctx ends or dur passed.
func subscribe(ctx context.Context, db *pgx.Conn, brokers, filter, share, session string, dur time.Duration) error {
	in := make(chan paho.Message, 4096)
	o := paho.NewClientOptions().SetClientID(session).SetCleanSession(false).SetAutoAckDisabled(true).
		SetAutoReconnect(true).SetMaxReconnectInterval(2 * time.Second).SetConnectRetry(true).SetOrderMatters(false)
	for _, b := range strings.Split(brokers, ",") {
		o.AddBroker(b)
	}
	topics := []string{filter, strings.TrimSuffix(filter, "/up/#") + "/state"}
	if share != "" {
		for i, t := range topics {
			topics[i] = "$share/" + share + "/" + t
		}
	}
	o.SetOnConnectHandler(func(cl paho.Client) {
		for _, t := range topics {
			cl.Subscribe(t, 1, func(_ paho.Client, m paho.Message) { in <- m })
		}
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) { fmt.Fprintf(os.Stderr, "connection lost: %v\n", err) })
	cl := paho.NewClient(o)
	if tok := cl.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("connect %s: %v", brokers, tok.Error())
	}
	defer cl.Disconnect(250)
	if dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}
	return ingest(ctx, db, in)
}
