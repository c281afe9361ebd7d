package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
)

// TestIngest: envelopes through a real broker into a throwaway
// PostgreSQL: seq..lastSeq expanded, a resent seq absorbed by the key and
// counted, a batch of seqs all seen stored no second time, a gap in a log
// stream reported (and one in a live stream not failed), the state kept.
func TestIngest(t *testing.T) {
	db, dsn := testDB(t)
	b := mqtttest.Start(t, mqtttest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- subscribe(ctx, db, b.URL(), "plantd/v1/+/up/#", "", "ingest-test", 0) }()

	// The ingest's subscription is in place when a probe message it takes
	// (a state) is in the database.
	pub := mqtttest.Collect(t, b).Client()
	publish := func(topic, payload string) {
		t.Helper()
		if tok := pub.Publish(topic, 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish %s: %v", topic, tok.Error())
		}
	}
	query := func(sql string, args ...any) (n int64) {
		t.Helper()
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if err := c.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	proctest.WaitFor(t, "the ingest subscribed", 10*time.Second, func() bool {
		publish("plantd/v1/gw1/state", `{"gatewayId":"gw1","bootId":"b1","state":"online"}`)
		return query(`SELECT count(*) FROM gateway_state WHERE state = 'online'`) == 1
	})
	for i, p := range []struct{ topic, payload string }{
		{"plantd/v1/gw1/up/log/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"log/p1","seq":1,"items":[{"code":"A"}]}`},
		{"plantd/v1/gw1/up/log/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"log/p1","seq":2,"lastSeq":4,"items":[{"code":"B"},{"code":"C"},{"code":"D"}]}`},
		{"plantd/v1/gw1/up/log/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"log/p1","seq":3,"lastSeq":4,"items":[{"code":"C"},{"code":"D"}]}`},
		{"plantd/v1/gw1/up/log/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"log/p1","seq":6,"items":[{"code":"F"}]}`},
		{"plantd/v1/gw1/up/live/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"live/p1","seq":1,"items":[{}]}`},
		{"plantd/v1/gw1/up/live/p1", `{"gatewayId":"gw1","bootId":"b1","stream":"live/p1","seq":3,"items":[{}]}`},
		{"plantd/v1/gw2/up/rollup/p2", `{"gatewayId":"gw2","bootId":"b2","stream":"rollup/p2","seq":1,"lastSeq":2,"historical":true,"items":[{},{},{}]}`},
	} {
		// One at a time, each in the database before the next: the
		// resend (seq 3..4) comes after its original (2..4), as a
		// gateway's does; the ingest's handler need not keep the order
		// of messages that are in flight together.
		publish(p.topic, p.payload)
		proctest.WaitFor(t, "the message in the database", 10*time.Second, func() bool {
			return query(`SELECT coalesce(sum(messages), 0) FROM uplink_stream`) == int64(i+1)
		})
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		sql  string
		args []any
		want int64
	}{
		{"log/p1 seqs", `SELECT count(*) FROM uplink_seq WHERE stream = $1`, []any{"log/p1"}, 5},
		{"log/p1 duplicates", `SELECT duplicates FROM uplink_stream WHERE stream = $1`, []any{"log/p1"}, 2},
		{"log/p1 envelopes (the resent batch not stored)", `SELECT count(*) FROM uplink_envelope WHERE stream = $1`, []any{"log/p1"}, 3},
		{"log/p1 items", `SELECT count(*) FROM uplink_envelope, jsonb_array_elements(items) WHERE stream = $1`, []any{"log/p1"}, 5},
		{"rollup/p2 seqs of gw2", `SELECT count(*) FROM uplink_seq WHERE gateway_id = 'gw2' AND stream = $1`, []any{"rollup/p2"}, 2},
		{"historical envelopes", `SELECT count(*) FROM uplink_envelope WHERE historical AND stream = $1`, []any{"rollup/p2"}, 1},
	} {
		if got := query(c.sql, c.args...); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	ok, err := report(context.Background(), db, false)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("report: no gap, want log/p1's seq 5 missing")
	}
}

// shared is the package's throwaway PostgreSQL, started by the first
// test that needs one (testDB) and stopped by TestMain.
var shared struct {
	once sync.Once
	dsn  string
	stop func()
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	os.Exit(code)
}

// testDB is a new database with the ingest's schema in the package's
// PostgreSQL, connected; it returns the connection and its connection
// string.
func testDB(t *testing.T) (*pgx.Conn, string) {
	t.Helper()
	needPostgres(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "mqtt-ingest-test-")
		if err != nil {
			shared.err = err
			return
		}
		os.Chmod(dir, 0o755) // reachable for user postgres under root
		dsn, stop, err := pgTemp(context.Background(), filepath.Join(dir, "pg"))
		shared.dsn, shared.err = dsn, err
		shared.stop = func() {
			if stop != nil {
				stop()
			}
			os.RemoveAll(dir)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, shared.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	dsn := strings.Replace(shared.dsn, "/postgres?", "/"+name+"?", 1)
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, schema); err != nil {
		t.Fatal(err)
	}
	return db, dsn
}

// needPostgres skips the test where PostgreSQL's server programs are
// absent, but fails it under CI=true (CI installs postgresql).
func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := pgBin("initdb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not installed; CI must install it: %v", err)
		}
		t.Skip(err)
	}
}

// TestPgBin: with PostgreSQL's server programs off PATH, as Debian's
// postgresql package installs them, they are found in
// /usr/lib/postgresql/VERSION/bin, and -pgtemp's PostgreSQL starts with
// Debian's default PATH; a program that is nowhere is an error naming
// the package.
func TestPgBin(t *testing.T) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no /usr/lib/postgresql/*/bin/initdb; CI must install postgresql")
		}
		t.Skip("PostgreSQL is not installed as Debian installs it")
	}
	t.Setenv("PATH", t.TempDir())
	for _, name := range []string{"initdb", "pg_ctl"} {
		p, err := pgBin(name)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := filepath.Match("/usr/lib/postgresql/*/bin/"+name, p); !ok {
			t.Errorf("pgBin(%q) = %s, want /usr/lib/postgresql/*/bin/%s", name, p, name)
		}
	}
	if p, err := pgBin("no-such-postgres-program"); err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("pgBin of a missing program: %q, %v; want an error naming the package", p, err)
	}

	t.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin") // runuser, chown; no initdb on Debian
	dsn, stop, err := pgTemp(context.Background(), pgDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	db, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var one int
	if err := db.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
}

// pgDir is a directory for a throwaway PostgreSQL that user postgres can
// reach when the test runs as root (t.TempDir's parents are root's only).
func pgDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "mqtt-ingest-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "pg")
}

// TestIngestReportLiveGap: a gap in a live stream alone is shown, not
// failed.
func TestIngestReportLiveGap(t *testing.T) {
	db, _ := testDB(t)
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []envelope{
		{GatewayID: "gw", BootID: "b", Stream: "live/p1", Seq: 1},
		{GatewayID: "gw", BootID: "b", Stream: "live/p1", Seq: 5},
		{GatewayID: "gw", BootID: "b", Stream: "log/p1", Seq: 1, LastSeq: 3},
	} {
		if _, err := write(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ok, err := report(ctx, db, false)
	if err != nil || !ok {
		t.Errorf("report: ok %v, %v; want ok (only a live stream has a gap)", ok, err)
	}
	ok, err = report(ctx, db, true)
	if err != nil || !ok {
		t.Errorf("report from 1: ok %v, %v", ok, err)
	}
}

// TestIngestStateOrder: a gateway's state in the database is the newest
// state message, whatever order the broker delivers them in: a later
// plantd run beats an earlier one, in one run a later time beats an
// earlier one, the last will (no time) counts at its arrival, and on a
// tie offline wins.
func TestIngestStateOrder(t *testing.T) {
	db, _ := testDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	msg := func(state, started, since string) string {
		m := map[string]string{"gatewayId": "", "bootId": "b-" + started, "state": state}
		if started != "" {
			m["startedAt"] = started
		}
		if since != "" {
			m["time"] = since
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	runA, runB := at(-time.Hour), at(-time.Minute)
	for _, c := range []struct {
		name    string
		msgs    []string
		applied []bool
		want    string
	}{
		{"in order", []string{msg("online", runA, at(-50*time.Minute)), msg("offline", runA, at(-40*time.Minute))},
			[]bool{true, true}, "offline"},
		// NATS 2.9 after a node's death: the online of a reconnect came
		// after the clean stop's offline.
		{"an online redelivered after the offline", []string{msg("online", runA, at(-50*time.Minute)),
			msg("offline", runA, at(-40*time.Minute)), msg("online", runA, at(-45*time.Minute))},
			[]bool{true, true, false}, "offline"},
		{"offline and online in the same second", []string{msg("offline", runA, at(-40*time.Minute)), msg("online", runA, at(-40*time.Minute))},
			[]bool{true, false}, "offline"},
		{"the will after the online", []string{msg("online", runA, at(-50*time.Minute)), msg("offline", runA, "")},
			[]bool{true, true}, "offline"},
		{"an online older than the will", []string{msg("offline", runA, ""), msg("online", runA, at(-50*time.Minute))},
			[]bool{true, false}, "offline"},
		{"a reconnect's online after the will", []string{msg("offline", runA, ""), msg("online", runA, at(time.Minute))},
			[]bool{true, true}, "online"},
		{"a new run", []string{msg("offline", runA, at(-40*time.Minute)), msg("online", runB, at(-time.Minute))},
			[]bool{true, true}, "online"},
		{"the old run's will after a new run", []string{msg("online", runB, at(-time.Minute)), msg("offline", runA, "")},
			[]bool{true, false}, "online"},
		{"no time, no run", []string{msg("probe", "", "")}, []bool{true}, "probe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gw := strings.ReplaceAll(c.name, " ", "-")
			for i, m := range c.msgs {
				m = strings.Replace(m, `"gatewayId":""`, `"gatewayId":"`+gw+`"`, 1)
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				applied, err := writeState(ctx, tx, []byte(m))
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if applied != c.applied[i] {
					t.Errorf("message %d %s: applied %v, want %v", i+1, m, applied, c.applied[i])
				}
			}
			var state string
			if err := db.QueryRow(ctx, `SELECT state FROM gateway_state WHERE gateway_id = $1`, gw).Scan(&state); err != nil {
				t.Fatal(err)
			}
			if state != c.want {
				t.Errorf("state %s, want %s", state, c.want)
			}
		})
	}
}
