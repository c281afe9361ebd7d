package mqtt

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/store"
)

// fleetPlant is a synthetic plant of five devices with new values at
// every call.
type fleetPlant struct{}

func (fleetPlant) Plants() []plant.Plant {
	return []plant.Plant{{ID: "p1", Name: "P1", Location: time.UTC}}
}

func (fleetPlant) EnergyBalance(string) (plant.Balance, error) {
	pv, load, grid := 7400.0, 650.0, 6750.0
	return plant.Balance{PlantID: "p1", Time: time.Now(), PVGenerationW: &pv, TotalConsumptionW: &load, GridFeedInW: &grid}, nil
}

func (fleetPlant) Devices(string) ([]plant.DeviceLive, error) {
	now := time.Now()
	rs := []plant.Reading{{Channel: plant.ActivePower, Value: 3700}, {Channel: plant.GridFrequency, Value: 50.01},
		{Channel: plant.VoltagePhaseA, Value: 231.2}, {Channel: plant.CurrentPhaseA, Value: 5.3}}
	out := make([]plant.DeviceLive, 0, 5)
	for _, id := range []string{"inv1", "inv2", "meter", "bat", "wx"} {
		out = append(out, plant.DeviceLive{Info: plant.DeviceInfo{ID: id, PlantID: "p1"}, LastUpdate: now, Readings: rs})
	}
	return out, nil
}

// procCPU is the user and system CPU time of a process from /proc.
func procCPU(t testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// BenchmarkFleet runs PLANTD_FLEET gateway uplinks (default 100; the
// issue's figure is 1000) in this process, each with its own SQLite
// outbox and a five-device plant published every 10 s, against one
// mosquitto; scripts/mqtt-subscriber (a persistent session) checks every
// stream. It reports the steady-state message rate and the CPU of the
// broker and of this process; then the broker is stopped, an hour of
// backlog (12 rollup and 60 log messages) is queued in every outbox, the
// broker started again, and the time until every gateway's backlog is
// acknowledged is reported. Finally every uplink stops (offline state)
// and the subscriber's summary must show every seq of every stream.
//
//	PLANTD_FLEET=1000 go test -run '^$' -bench Fleet -benchtime 1x -timeout 30m ./mqtt/
func BenchmarkFleet(b *testing.B) {
	n := fleetSize(b)
	steady := 30 * time.Second
	if d := getenvDuration(b, "PLANTD_FLEET_STEADY"); d > 0 {
		steady = d
	}
	br := mqtttest.Start(b, mqtttest.Options{})
	if br.Embedded() {
		b.Skip("the fleet benchmark measures mosquitto")
	}
	dir := b.TempDir()
	sub := startFleetSubscriber(b, br, dir)
	defer sub.cmd.Process.Kill()

	f := startFleet(b, []string{br.URL()}, dir, 0, n)

	for b.Loop() {
		// Steady state.
		time.Sleep(10 * time.Second) // past the first ticks
		p0, by0, _ := f.total()
		bc0, sc0, t0 := procCPU(b, br.Pid()), cpuTime(b), time.Now()
		time.Sleep(steady)
		p1, by1, _ := f.total()
		bc1, sc1, el := procCPU(b, br.Pid()), cpuTime(b), time.Since(t0)
		b.ReportMetric(float64(p1-p0)/el.Seconds(), "steady-msgs/s")
		b.ReportMetric(float64(by1-by0)/el.Seconds(), "steady-bytes/s")
		b.ReportMetric(100*(bc1-bc0).Seconds()/el.Seconds(), "broker-%core")
		b.ReportMetric(100*(sc1-sc0).Seconds()/el.Seconds(), "fleet-%core")
		f.outage(b, br)
	}

	// Stop every uplink (each publishes its offline state last); the
	// subscriber's summary must show every stream complete.
	f.stop()
	proctest.WaitFor(b, "every offline state at the subscriber", 5*time.Minute, func() bool { return sub.offlineCount() >= n })
	sub.check(b, n)
}

// fleetSubscriber is scripts/mqtt-subscriber running with a persistent
// session, its output read as it comes.
type fleetSubscriber struct {
	cmd     *exec.Cmd
	offline sync.Map // gateway → true, once its offline state arrived
	summary []string // the summary's stream lines, once lines is closed
	lines   chan struct{}
}

// startFleetSubscriber builds and starts the subscriber and waits until
// its subscription is in place: it printed the retained state of a probe
// gateway, which comes with the subscription.
func startFleetSubscriber(b *testing.B, br *mqtttest.Broker, dir string) *fleetSubscriber {
	path := filepath.Join(dir, "mqtt-subscriber")
	if out, err := exec.Command("go", "build", "-o", path, "../scripts/mqtt-subscriber").CombinedOutput(); err != nil {
		b.Fatalf("build the subscriber: %v\n%s", err, out)
	}
	s := &fleetSubscriber{cmd: exec.Command(path, "-broker", br.URL(), "-session", "fleet-check", "-from1"), lines: make(chan struct{})}
	out, _ := s.cmd.StdoutPipe()
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	const probe = "fleet-probe"
	subscribed := make(chan struct{})
	var probed sync.Once
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		inSummary := false
		for sc.Scan() {
			l := sc.Text()
			f := strings.Fields(l)
			switch {
			case len(f) >= 3 && f[0] == "state" && f[1] == probe:
				probed.Do(func() { close(subscribed) })
			case len(f) >= 3 && f[0] == "state" && f[2] == "offline":
				s.offline.Store(f[1], true)
			case len(f) > 0 && f[0] == "gateway":
				inSummary = true
			case inSummary:
				s.summary = append(s.summary, l)
			}
		}
	}()
	publishRetained(b, br.URL(), "plantd/v1/"+probe+"/state", `{"gatewayId":"`+probe+`","state":"probe"}`)
	select {
	case <-subscribed:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		b.Fatal("the subscriber did not print the probe's state")
	}
	return s
}

// offlineCount is the number of gateways whose offline state arrived.
func (s *fleetSubscriber) offlineCount() int {
	c := 0
	s.offline.Range(func(any, any) bool { c++; return true })
	return c
}

// check stops the subscriber and wants its summary to show n gateways'
// streams complete: every backlog stream seq 1..72 of the hour (12
// rollups, 60 log entries).
func (s *fleetSubscriber) check(b *testing.B, n int) {
	s.cmd.Process.Signal(syscall.SIGINT)
	err := s.cmd.Wait()
	<-s.lines
	streams, dups, missing, short := 0, 0, 0, 0
	for _, l := range s.summary {
		f := strings.Fields(l)
		if len(f) < 9 {
			continue
		}
		streams++
		d, _ := strconv.Atoi(f[6])
		m, _ := strconv.Atoi(f[8])
		dups, missing = dups+d, missing+m
		if want := map[string]string{"rollup/p1": "1..12", "log/p1": "1..60"}[f[1]]; want != "" && f[2] != want {
			short++
			b.Errorf("%s %s: seqs %s, want %s", f[0], f[1], f[2], want)
		}
	}
	b.Logf("reference subscriber: %d streams of %d gateways, %d missing seqs, %d duplicates, %d incomplete backlog streams, exit %v",
		streams, n, missing, dups, short, err)
	if err != nil || missing > 0 || streams < n*8 {
		b.Errorf("subscriber: exit %v, %d streams (want %d), %d missing:\n%s", err, streams, n*8, missing, strings.Join(s.summary, "\n"))
	}
}

// fleet is n gateways, each an uplink with its own store.
type fleet struct {
	ups    []*Uplink
	stores []*store.Store
	stops  []func()
	// logs: each gateway's log (its last lines); stopTook: how long each
	// gateway's stop took (its offline state's PUBACK and disconnect).
	logs     []*gatewayLog
	stopTook []time.Duration
}

// gatewayLog keeps a gateway's last 100 log lines, for a failed check to
// show what its uplink did.
type gatewayLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *gatewayLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 100 {
		l.lines = l.lines[1:]
	}
	l.lines = append(l.lines, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (l *gatewayLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// fleetSize is PLANTD_FLEET (default 100).
func fleetSize(b *testing.B) int {
	n := 100
	if s := os.Getenv("PLANTD_FLEET"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("PLANTD_FLEET=%q", s)
		}
	}
	return n
}

// startFleet opens n gateways (gw{first} on) to brokers and runs them
// until every one is connected; they stop and close at the benchmark's
// end.
func startFleet(b testing.TB, brokers []string, dir string, first, n int) *fleet {
	start := time.Now()
	f := openFleet(b, brokers, dir, first, n)
	b.Cleanup(f.close)
	f.run()
	b.Cleanup(f.stop) // before close
	proctest.WaitFor(b, "every gateway connected", 10*time.Minute, f.connected(1))
	b.Logf("%d gateways opened and connected in %s", n, time.Since(start).Round(time.Millisecond))
	return f
}

// openFleet opens the stores and uplinks (to brokers) of the gateways
// gw{first}..gw{first+n-1}, four at a time.
func openFleet(b testing.TB, brokers []string, dir string, first, n int) *fleet {
	f := &fleet{ups: make([]*Uplink, n), stores: make([]*store.Store, n), logs: make([]*gatewayLog, n), stopTook: make([]time.Duration, n)}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				st, err := store.Open(context.Background(), store.Config{Path: filepath.Join(dir, fmt.Sprintf("gw%04d.db", first+i)), Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
				if err != nil {
					b.Error(err)
					return
				}
				f.stores[i] = st
				f.logs[i] = &gatewayLog{}
				log := slog.New(slog.NewTextHandler(f.logs[i], &slog.HandlerOptions{Level: slog.LevelDebug}))
				u, err := New(Config{Brokers: brokers, GatewayID: fmt.Sprintf("gw%04d", first+i), LiveInterval: 10 * time.Second}, Deps{Outbox: st, Live: fleetPlant{}}, log)
				if err != nil {
					b.Error(err)
					return
				}
				f.ups[i] = u
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		f.close()
		b.FailNow()
	}
	return f
}

// run starts every uplink; stop stops them (each once) and waits.
func (f *fleet) run() {
	for i, u := range f.ups {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { u.Run(ctx); close(done) }()
		var once sync.Once
		f.stops = append(f.stops, func() {
			once.Do(func() {
				t := time.Now()
				cancel()
				<-done
				f.stopTook[i] = time.Since(t)
			})
		})
	}
}

func (f *fleet) stop() {
	for _, s := range f.stops {
		s()
	}
}

func (f *fleet) close() {
	for _, st := range f.stores {
		if st != nil {
			st.Close()
		}
	}
}

// connected reports whether every gateway is connected and has connected
// at least min times.
func (f *fleet) connected(min uint64) func() bool {
	return func() bool {
		for _, u := range f.ups {
			if u.Status().Connects < min || !u.connected.Load() {
				return false
			}
		}
		return true
	}
}

// total sums the gateways' counters.
func (f *fleet) total() (pub, bytes, acked uint64) {
	for _, u := range f.ups {
		s := u.Status()
		pub, bytes, acked = pub+s.Published, bytes+s.PublishedBytes, acked+s.Acked
	}
	return
}

// outage stops the broker, queues an hour of backlog in every outbox,
// starts the broker again and reports how long until every gateway
// reconnected and every backlog was acknowledged.
func (f *fleet) outage(b *testing.B, br *mqtttest.Broker) {
	stopped := time.Now()
	br.Stop()
	proctest.WaitFor(b, "every gateway disconnected", 2*time.Minute, func() bool {
		for _, u := range f.ups {
			if u.connected.Load() {
				return false
			}
		}
		return true
	})
	_, _, a0 := f.total()
	f.queueHour(b)
	backlog := uint64(len(f.ups) * 72)
	br.Start()
	t1 := time.Now()
	outage := t1.Sub(stopped)
	proctest.WaitFor(b, "every gateway reconnected", 10*time.Minute, f.connected(2))
	reconnected := time.Since(t1)
	proctest.WaitFor(b, "every backlog acknowledged", 10*time.Minute, func() bool {
		for _, st := range f.stores {
			ss, err := st.OutboxStreams(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range ss {
				if classOf(s.Stream).backlog() && s.Depth > 0 {
					return false
				}
			}
		}
		return true
	})
	replay := time.Since(t1)
	_, _, a1 := f.total()
	b.ReportMetric(reconnected.Seconds(), "reconnect-all-s")
	b.ReportMetric(replay.Seconds(), "replay-s")
	b.Logf("%d gateways, broker down %s: %d backlog messages (and the live ones since) acknowledged: %d in %s after the broker's restart; all reconnected after %s (the backoff after that outage)",
		len(f.ups), outage.Round(time.Millisecond), backlog, a1-a0, replay.Round(time.Millisecond), reconnected.Round(time.Millisecond))
	b.ReportMetric(outage.Seconds(), "outage-s")
}

// queueHour queues an hour of backlog in every outbox: 12 rollups and 60
// log entries, an hour old.
func (f *fleet) queueHour(b testing.TB) {
	hour := time.Now().Add(-time.Hour)
	for _, st := range f.stores {
		var msgs []store.OutboxAppend
		for m := range 60 {
			at := hour.Add(time.Duration(m) * time.Minute)
			if m%5 == 4 {
				msgs = append(msgs, store.OutboxAppend{Stream: "rollup/p1", Created: at, Payload: fmt.Appendf(nil,
					`[{"time":%q,"pvGeneration":612.5,"gridFeedIn":540.1,"gridConsumption":0,"totalConsumption":72.4,"selfConsumption":72.4,"autarkyRate":1}]`,
					at.UTC().Format(time.RFC3339))})
			}
			msgs = append(msgs, store.OutboxAppend{Stream: "log/p1", Created: at, Payload: fmt.Appendf(nil,
				`[{"time":%q,"level":"warning","code":"DeviceStale","message":"device inv1 stale: read timeout","deviceId":"inv1"}]`,
				at.UTC().Format(time.RFC3339))})
		}
		if _, err := st.EnqueueBatch(context.Background(), msgs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// publishRetained publishes a retained message (QoS 1) with a client of
// its own and waits for the PUBACK.
func publishRetained(t testing.TB, broker, topic, payload string) {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID(fmt.Sprintf("probe-%d", time.Now().UnixNano())))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", broker, tok.Error())
	}
	defer c.Disconnect(250)
	if tok := c.Publish(topic, 1, true, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}
