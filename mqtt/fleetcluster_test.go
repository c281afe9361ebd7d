package mqtt

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/proctest"
)

// BenchmarkFleetCluster runs PLANTD_FLEET gateway uplinks (default 100)
// against the 3-node NATS cluster of scripts/fleet-cluster (mqtt.brokers:
// its three MQTT URLs), with scripts/mqtt-ingest writing into a
// throwaway PostgreSQL as the consumer. After the steady state it kills
// the node with the most gateways (SIGKILL), while an hour of backlog
// (12 rollups, 60 log entries) drains from every outbox, for PLANTD_FLEET_DOWN
// (default 60 s) and starts it again; it reports each moved gateway's
// time to reconnect (p50, p99), the messages/s and each node's CPU; at
// the end the ingest's database must hold every seq of every rollup and
// log stream, duplicates absorbed by its key and counted. Skipped without
// nats-server or PostgreSQL.
//
// PLANTD_FLEET_KILL=K runs the last K of the gateways in a process of
// their own (TestFleetChild), killed with SIGKILL 2 s after the node and
// started again at once (same outboxes), during the node's outage.
//
//	PLANTD_FLEET=200 go test -run '^$' -bench FleetCluster -benchtime 1x -timeout 30m ./mqtt/
func BenchmarkFleetCluster(b *testing.B) {
	for _, tool := range []string{"nats-server", "psql", "initdb"} {
		if _, err := exec.LookPath(tool); err != nil {
			// nats-server is in /usr/sbin, Debian's initdb in
			// /usr/lib/postgresql/VERSION/bin (the ingest finds it there).
			if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + tool); len(m) == 0 {
				if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
					b.Skipf("%s is not installed", tool)
				}
			}
		}
	}
	n := fleetSize(b)
	steady, down := 20*time.Second, 60*time.Second
	if d := getenvDuration(b, "PLANTD_FLEET_STEADY"); d > 0 {
		steady = d
	}
	if d := getenvDuration(b, "PLANTD_FLEET_DOWN"); d > 0 {
		down = d
	}
	// Directories postgres (as user postgres under root) can reach.
	dir, err := os.MkdirTemp("", "fleet-cluster-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() { // the nodes' logs and the database, to look at
			b.Logf("kept %s (nats/nN.log: the nodes' logs)", dir)
			return
		}
		os.RemoveAll(dir)
	})
	os.Chmod(dir, 0o755)
	cl := startCluster(b, filepath.Join(dir, "nats"))
	ing := startIngest(b, dir, cl.urls)

	kill := 0
	if v := os.Getenv("PLANTD_FLEET_KILL"); v != "" {
		if kill, err = strconv.Atoi(v); err != nil || kill < 0 || kill >= n {
			b.Fatalf("PLANTD_FLEET_KILL=%q", v)
		}
	}
	f := startFleet(b, cl.urls, b.TempDir(), 0, n-kill)
	var child *fleetChild
	childDir := b.TempDir()
	if kill > 0 {
		if child, err = startFleetChild(b, cl.urls, childDir, n-kill, kill); err != nil {
			b.Fatal(err)
		}
		b.Logf("gw%04d..gw%04d in a process of their own", n-kill, n-1)
	}

	for b.Loop() {
		time.Sleep(10 * time.Second) // past the first ticks
		p0, _, _ := f.total()
		cpu0, t0 := cl.cpu(b), time.Now()
		time.Sleep(steady)
		p1, _, _ := f.total()
		cpu1, el := cl.cpu(b), time.Since(t0)
		b.ReportMetric(float64(p1-p0)/el.Seconds(), "steady-msgs/s")
		for i := range cpu0 {
			b.Logf("node %d: %.1f %% of a core, %d gateways", i+1, 100*(cpu1[i]-cpu0[i]).Seconds()/el.Seconds(), f.on(cl.urls[i]))
		}

		// The node with the most gateways dies.
		k := 0
		for i := range cl.urls {
			if f.on(cl.urls[i]) > f.on(cl.urls[k]) {
				k = i
			}
		}
		var moved []int
		connects := make([]uint64, n)
		for i, u := range f.ups {
			st := u.Status()
			connects[i] = st.Connects
			if st.Broker == cl.urls[k] {
				moved = append(moved, i)
			}
		}
		// An hour of backlog (12 rollups, 60 log entries) in every outbox,
		// draining while the node dies.
		f.queueHour(b)
		for _, u := range f.ups {
			u.notify("rollup/p1", "log/p1") // as the producer does after its commit
		}
		if child != nil {
			if err := child.say("hour", "fleet-child queued"); err != nil {
				b.Fatal(err)
			}
		}
		killed := time.Now()
		cl.kill(b, k)
		// The child's gateways die with SIGKILL while the node is down and
		// start again at once, on the same outboxes.
		type restart struct {
			c   *fleetChild
			err error
		}
		restarted := make(chan restart, 1)
		if child != nil {
			go func(old *fleetChild) {
				time.Sleep(2 * time.Second)
				old.cmd.Process.Kill()
				old.cmd.Wait()
				t := time.Now()
				c, err := startFleetChild(b, cl.urls, childDir, n-kill, kill)
				if err == nil {
					b.Logf("%d gateways killed (SIGKILL) %s after the node, started again: all connected %s after the restart",
						kill, t.Sub(killed).Round(time.Millisecond), time.Since(t).Round(time.Millisecond))
				}
				restarted <- restart{c, err}
			}(child)
		}
		took := map[int]time.Duration{}
		proctest.WaitFor(b, "every moved gateway reconnected", 5*time.Minute, func() bool {
			for _, i := range moved {
				if _, ok := took[i]; ok {
					continue
				}
				if st := f.ups[i].Status(); st.Connected && st.Connects > connects[i] {
					took[i] = time.Since(killed)
				}
			}
			return len(took) == len(moved)
		})
		times := make([]time.Duration, 0, len(took))
		for _, d := range took {
			times = append(times, d)
		}
		slices.Sort(times)
		pct := func(p float64) time.Duration { return times[min(len(times)-1, int(p*float64(len(times))))] }
		b.ReportMetric(pct(0.5).Seconds(), "reconnect-p50-s")
		b.ReportMetric(pct(0.99).Seconds(), "reconnect-p99-s")
		b.Logf("node %d killed at %s with %d of the %d gateways in this process: reconnected p50 %s, p99 %s, last %s", k+1, killed.UTC().Format("15:04:05.000"), len(moved), len(f.ups),
			pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
		// From the moved gateways' logs: when each noticed the loss, and
		// how long it took from there to connect again.
		var noticed, after []time.Duration
		late, latest := 0, -1 // noticed 5 s or more after the kill; the last to notice
		for _, i := range moved {
			if lost, ok := f.logs[i].first(`msg="mqtt connection lost`, killed); ok {
				d := lost.Sub(killed)
				noticed = append(noticed, d)
				if d >= 5*time.Second {
					late++
				}
				if latest < 0 || d >= slices.Max(noticed) {
					latest = i
				}
				if c, ok := f.logs[i].first(`msg="mqtt connected"`, lost); ok {
					after = append(after, c.Sub(lost))
				}
			}
		}
		b.Logf("the moved gateways noticed the loss (their log): %s after the kill, %d of them 5 s or more after; connected again %s after noticing",
			spread(noticed), late, spread(after))
		if latest >= 0 {
			b.Logf("the last to notice, gw%04d:\n%s", latest, f.logs[latest])
		}
		if child != nil {
			r := <-restarted
			if r.err != nil {
				b.Fatal(r.err)
			}
			child = r.c
		}
		time.Sleep(max(0, down-time.Since(killed)))
		cl.start1(b, k)
		b.Logf("node %d back after %s", k+1, time.Since(killed).Round(time.Second))
		time.Sleep(10 * time.Second)
	}
	stopped := time.Now()
	f.stop()
	if child != nil {
		if err := child.say("stop", "fleet-child stopped"); err != nil {
			b.Error(err)
		}
		child.cmd.Wait()
	}
	took := slices.Clone(f.stopTook)
	slices.Sort(took)
	slow := len(took) - sort.Search(len(took), func(i int) bool { return took[i] >= 2*time.Second })
	b.Logf("fleet stopped in %s: a gateway's stop (offline state's PUBACK, disconnect) p50 %s, max %s, %d of %d took 2 s or more",
		time.Since(stopped).Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), slow, len(took))
	if !ing.check(b, n) {
		ing.explain(b, f, cl, stopped)
	}
}

// natsCluster is scripts/fleet-cluster's cluster.
type natsCluster struct {
	script, dir string
	urls        []string
}

func (c *natsCluster) do(b *testing.B, args ...string) string {
	out, err := exec.Command(c.script, args...).Output()
	if err != nil {
		b.Fatalf("fleet-cluster %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func startCluster(b *testing.B, dir string) *natsCluster {
	script, _ := filepath.Abs("../scripts/fleet-cluster")
	c := &natsCluster{script: script, dir: dir}
	c.urls = strings.Split(c.do(b, "start", dir), ",")
	b.Cleanup(func() { exec.Command(script, "stop", dir).Run() })
	return c
}

func (c *natsCluster) kill(b *testing.B, i int)   { c.do(b, "kill", c.dir, strconv.Itoa(i+1)) }
func (c *natsCluster) start1(b *testing.B, i int) { c.do(b, "start1", c.dir, strconv.Itoa(i+1)) }

// cpu is each node's CPU time.
func (c *natsCluster) cpu(b *testing.B) []time.Duration {
	var out []time.Duration
	for i := range c.urls {
		p, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("n%d.pid", i+1)))
		if err != nil {
			b.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(p)))
		out = append(out, procCPU(b, pid))
	}
	return out
}

// on is the number of gateways connected to broker.
func (f *fleet) on(broker string) int {
	n := 0
	for _, u := range f.ups {
		if st := u.Status(); st.Connected && st.Broker == broker {
			n++
		}
	}
	return n
}

// fleetIngest is scripts/mqtt-ingest with its throwaway PostgreSQL.
type fleetIngest struct {
	cmd    *exec.Cmd
	dsn    string
	report chan []string
	// notOffline: the database's gateways not offline at the check
	// (id=state@time ...).
	notOffline string
	// states: each gateway's state messages the ingest stored (its -v
	// lines), in order.
	mu     sync.Mutex
	states map[string][]string
}

// startIngest builds and starts the ingest and waits until its
// subscription is in place: a probe's retained state is in its database.
func startIngest(b *testing.B, dir string, urls []string) *fleetIngest {
	path := filepath.Join(dir, "mqtt-ingest")
	if out, err := exec.Command("go", "build", "-o", path, "../scripts/mqtt-ingest").CombinedOutput(); err != nil {
		b.Fatalf("build the ingest: %v\n%s", err, out)
	}
	in := &fleetIngest{cmd: exec.Command(path, "-broker", strings.Join(urls, ","), "-pgtemp", filepath.Join(dir, "pg"),
		"-session", "fleet-ingest", "-from1", "-v"), report: make(chan []string, 1), states: map[string][]string{}}
	stdout, _ := in.cmd.StdoutPipe()
	stderr, _ := in.cmd.StderrPipe()
	if err := in.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.cmd.Process.Kill() })
	dsn := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			if _, rest, ok := strings.Cut(l, `(psql "`); ok {
				dsn <- strings.TrimSuffix(rest, `")`)
			}
			if f := strings.Fields(l); len(f) > 2 && f[0] == "state" {
				in.mu.Lock()
				in.states[f[1]] = append(in.states[f[1]], l)
				in.mu.Unlock()
				continue
			}
			fmt.Fprintln(os.Stderr, time.Now().UTC().Format("15:04:05.000"), "ingest:", l)
		}
	}()
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		in.report <- lines
	}()
	select {
	case in.dsn = <-dsn:
	case <-time.After(60 * time.Second):
		b.Fatal("the ingest did not start its database")
	}
	publishRetained(b, urls[0], "plantd/v1/fleet-probe/state", `{"gatewayId":"fleet-probe","bootId":"x","state":"probe"}`)
	proctest.WaitFor(b, "the probe in the ingest's database", 60*time.Second, func() bool {
		return in.query(b, `SELECT count(*) FROM gateway_state WHERE gateway_id = 'fleet-probe'`) == "1"
	})
	return in
}

// query runs sql with psql and returns its one value.
func (in *fleetIngest) query(b *testing.B, sql string) string {
	out, err := exec.Command("psql", in.dsn, "-tAc", sql).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// check waits until every gateway's offline state is in the database,
// stops the ingest and wants its report to show every rollup and log
// stream without a gap. It reports whether every offline state came.
func (in *fleetIngest) check(b *testing.B, n int) (allOffline bool) {
	// Not waitFor: the report below says what is there when it is not all.
	offline := ""
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if offline = in.query(b, `SELECT count(*) FROM gateway_state WHERE state = 'offline'`); offline == strconv.Itoa(n) {
			break
		}
	}
	allOffline = offline == strconv.Itoa(n)
	if !allOffline {
		b.Errorf("after 5 min, %s of %d gateways offline in the database; states %s", offline, n,
			in.query(b, `SELECT string_agg(state || ' ' || c, ', ') FROM (SELECT state, count(*) AS c FROM gateway_state GROUP BY state) s`))
		in.notOffline = in.query(b, `SELECT string_agg(gateway_id || '=' || state || '@' || updated_at, ' ') FROM gateway_state WHERE state <> 'offline' AND gateway_id LIKE 'gw%'`)
	}
	in.mu.Lock()
	var older []string // state messages older than the one stored, ignored
	for _, ls := range in.states {
		for _, l := range ls {
			if strings.Contains(l, " applied false ") {
				older = append(older, l)
			}
		}
	}
	in.mu.Unlock()
	slices.Sort(older)
	b.Logf("%d state messages older than the gateway's state in the database, ignored:\n%s", len(older), strings.Join(older, "\n"))
	dups := in.query(b, `SELECT coalesce(sum(duplicates), 0) FROM uplink_stream`)
	msgs := in.query(b, `SELECT coalesce(sum(messages), 0) FROM uplink_stream`)
	seqs := in.query(b, `SELECT count(*) FROM uplink_seq`)
	in.cmd.Process.Signal(syscall.SIGINT)
	err := in.cmd.Wait()
	lines := <-in.report
	streams, missing := 0, 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 7 || f[0] == "gateway" {
			continue
		}
		streams++
		if m, _ := strconv.Atoi(f[6]); m > 0 && !strings.HasPrefix(f[1], "live/") {
			missing += m
			b.Errorf("%s %s: %s seqs missing", f[0], f[1], f[6])
		}
	}
	b.Logf("ingest (PostgreSQL): %d streams of %d gateways, %s messages, %s distinct seqs, %s duplicates absorbed, %d seqs missing in rollup and log streams, exit %v",
		streams, n, msgs, seqs, dups, missing, err)
	if err != nil || streams < n*8 {
		b.Errorf("ingest: exit %v, %d streams, want %d:\n%s", err, streams, n*8, strings.Join(lines, "\n"))
	}
	return allOffline
}

// explain logs, for each gateway whose offline state is not in the
// database (at most 20 in detail), what each part saw: the uplink (its
// status, its stop's duration, its last log lines), the broker (the
// retained state each running node holds now, the nodes' log lines
// naming it) and the ingest (the state messages it stored).
func (in *fleetIngest) explain(b *testing.B, f *fleet, cl *natsCluster, stopped time.Time) {
	var missing []int
	for i := range f.ups {
		id := fmt.Sprintf("gw%04d", i)
		in.mu.Lock()
		st := in.states[id]
		in.mu.Unlock()
		// Not offline in the database, or no offline state came.
		if strings.Contains(in.notOffline, id+"=") || !slices.ContainsFunc(st, func(l string) bool { return strings.Fields(l)[2] == "offline" }) {
			missing = append(missing, i)
		}
	}
	b.Logf("not offline in the database: %s; the fleet's stop began %s", in.notOffline, stopped.UTC().Format("15:04:05.000"))
	retained := make([]map[string]string, len(cl.urls))
	for k, u := range cl.urls {
		retained[k] = retainedStates(b, u, len(f.ups))
	}
	var natsLogs []string
	for k := range cl.urls {
		l, _ := os.ReadFile(filepath.Join(cl.dir, fmt.Sprintf("n%d.log", k+1)))
		natsLogs = append(natsLogs, strings.Split(string(l), "\n")...)
	}
	for j, i := range missing {
		if j == 20 {
			b.Logf("... and %d more", len(missing)-20)
			break
		}
		id := fmt.Sprintf("gw%04d", i)
		st := f.ups[i].Status()
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s: connects %d, connected %v, broker %s, last error %q, stop took %s\n", id, st.Connects, st.Connected, st.Broker, st.LastError, f.stopTook[i].Round(time.Millisecond))
		for k := range cl.urls {
			fmt.Fprintf(&sb, "  retained on node %d: %s\n", k+1, retained[k][id])
		}
		in.mu.Lock()
		for _, l := range in.states[id] {
			fmt.Fprintf(&sb, "  ingest: %s\n", l)
		}
		in.mu.Unlock()
		for _, l := range natsLogs {
			if strings.Contains(l, `"`+id+`"`) || strings.Contains(l, "Client ID: "+id) || strings.Contains(l, id+" ") {
				fmt.Fprintf(&sb, "  nats: %s\n", l)
			}
		}
		fmt.Fprintf(&sb, "  uplink log:\n%s", f.logs[i])
		b.Log(sb.String())
	}
}

// retainedStates reads the retained state messages a node holds (a
// clean session subscribing to every gateway's state), until it has n or
// none came for 5 s; a node that does not answer gives none.
func retainedStates(b *testing.B, broker string, n int) map[string]string {
	got := map[string]string{}
	var mu sync.Mutex
	more := make(chan struct{}, 1)
	c := paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID(fmt.Sprintf("retained-%d", time.Now().UnixNano())).SetCleanSession(true))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		b.Logf("retained states on %s: connect: %v", broker, tok.Error())
		return got
	}
	defer c.Disconnect(250)
	c.Subscribe("plantd/v1/+/state", 1, func(_ paho.Client, m paho.Message) {
		mu.Lock()
		got[strings.Split(m.Topic(), "/")[2]] = string(m.Payload())
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	})
	for {
		select {
		case <-more:
			mu.Lock()
			k := len(got)
			mu.Unlock()
			if k >= n {
				mu.Lock()
				defer mu.Unlock()
				return maps.Clone(got)
			}
		case <-time.After(5 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(got)
		}
	}
}

// first is the time of the first of the log's lines at or after t that
// holds s.
func (l *gatewayLog) first(s string, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		v, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, v)
		if err == nil && !at.Before(t) && strings.Contains(line, s) {
			return at, true
		}
	}
	return time.Time{}, false
}

// spread is "p50 X, p99 Y, max Z (n N)" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	p := func(q float64) time.Duration {
		return ds[min(len(ds)-1, int(q*float64(len(ds))))].Round(time.Millisecond)
	}
	return fmt.Sprintf("p50 %s, p99 %s, max %s (n %d)", p(0.5), p(0.99), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}

// fleetChild is a process of its own running gateways of the fleet
// (TestFleetChild), to be killed with SIGKILL.
type fleetChild struct {
	cmd   *exec.Cmd
	in    io.Writer
	lines chan string // its stdout, closed at its end
}

// startFleetChild starts the gateways gw{first}..gw{first+n-1} with their
// outboxes in dir in a new process and waits until every one is
// connected; the process is killed at the benchmark's end if still there.
func startFleetChild(b *testing.B, brokers []string, dir string, first, n int) (*fleetChild, error) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFleetChild$", "-test.timeout", "0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PLANTD_FLEET_CHILD=%s;%s;%d;%d", strings.Join(brokers, ","), dir, first, n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fleet child: %w", err)
	}
	b.Cleanup(func() { cmd.Process.Kill() })
	c := &fleetChild{cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	if err := c.wait("fleet-child connected"); err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	return c, nil
}

// wait waits (up to 10 min) for the child's line want.
func (c *fleetChild) wait(want string) error {
	deadline := time.After(10 * time.Minute)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return fmt.Errorf("fleet child ended before %q", want)
			}
			if l == want {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("fleet child: no %q in 10 min", want)
		}
	}
}

// say sends the child a command and waits for its answer.
func (c *fleetChild) say(cmd, answer string) error {
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return fmt.Errorf("fleet child %s: %w", cmd, err)
	}
	return c.wait(answer)
}

// TestFleetChild is the process of BenchmarkFleetCluster's gateways that
// are killed (PLANTD_FLEET_CHILD=brokers;dir;first;n; skipped without):
// it runs them, says "fleet-child connected" once all are, and on stdin
// takes "hour" (queue an hour of backlog in every outbox) and "stop" (a
// clean stop: each publishes its offline state).
func TestFleetChild(t *testing.T) {
	spec := os.Getenv("PLANTD_FLEET_CHILD")
	if spec == "" {
		t.Skip("a process of BenchmarkFleetCluster's (PLANTD_FLEET_KILL)")
	}
	p := strings.Split(spec, ";")
	if len(p) != 4 {
		t.Fatalf("PLANTD_FLEET_CHILD=%q", spec)
	}
	first, _ := strconv.Atoi(p[2])
	n, _ := strconv.Atoi(p[3])
	f := startFleet(t, strings.Split(p[0], ","), p[1], first, n)
	fmt.Println("fleet-child connected")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "hour":
			f.queueHour(t)
			for _, u := range f.ups {
				u.notify("rollup/p1", "log/p1")
			}
			fmt.Println("fleet-child queued")
		case "stop":
			f.stop()
			fmt.Println("fleet-child stopped")
			return
		}
	}
}
