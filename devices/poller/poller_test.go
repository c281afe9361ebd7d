package poller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

const interval = 250 * time.Millisecond

// collector keeps the samples of a run.
type collector struct {
	mu      sync.Mutex
	samples []plant.Sample
}

func (c *collector) sink(s plant.Sample) {
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
}

// since returns the samples of a device from time t on.
func (c *collector) since(id string, t time.Time) []plant.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []plant.Sample
	for _, s := range c.samples {
		if s.Device == id && !s.Time.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// hasModel reports whether the poll read model id.
func hasModel(s plant.Sample, id uint16) bool {
	for _, m := range s.Registers {
		if m.Model == id {
			return true
		}
	}
	return false
}

func (c *collector) last(id string) (plant.Sample, bool) {
	s := c.since(id, time.Time{})
	if len(s) == 0 {
		return plant.Sample{}, false
	}
	return s[len(s)-1], true
}

func deviceConfigs(p *sim.Plant, timeout time.Duration) []poller.DeviceConfig {
	var out []poller.DeviceConfig
	for _, d := range p.Devices() {
		out = append(out, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: interval, Timeout: timeout})
	}
	return out
}

// runPoller starts a poller in the background; the returned stop waits
// for it to end.
func runPoller(t *testing.T, cfgs []poller.DeviceConfig, sink poller.Sink) (*poller.Poller, *modbus.Pool, func()) {
	t.Helper()
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	pl, err := poller.New(cfgs, pool, sink, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { pl.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done; pool.Close() }
	t.Cleanup(stop)
	return pl, pool, sync.OnceFunc(stop)
}

func TestAllDevicesOnline(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	var c collector
	runPoller(t, deviceConfigs(p, time.Second), c.sink)
	for _, d := range p.Devices() {
		proctest.WaitFor(t, d.ID()+" online", 10*time.Second, func() bool {
			s, ok := c.last(d.ID())
			return ok && s.State == plant.StateOnline && len(s.Registers) > 0
		})
	}
}

// TestSharedEndpointOneClient puts two devices behind one gateway address
// that keeps a single client: plantd must use one connection for both and
// poll each at its rate.
func TestSharedEndpointOneClient(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Devices = []sim.DeviceConfig{
		{ID: "inv1", Kind: kind.Inverter, Unit: 1, Endpoint: "gw"},
		{ID: "meter", Kind: kind.Meter, Unit: 2, Endpoint: "gw"},
	}
	p := simtest.Start(t, cfg)
	for _, d := range p.Devices() {
		d.SetFault(sim.Fault{Kind: sim.FaultOneClient})
	}
	if p.Devices()[0].Addr() != p.Devices()[1].Addr() {
		t.Fatal("the simulated devices do not share an address")
	}
	var c collector
	_, pool, _ := runPoller(t, deviceConfigs(p, time.Second), c.sink)
	// Both are polled on, each 8 times, none failing: a second connection
	// would be refused by the one-client gateway. The rates are logged,
	// not asserted (a loaded machine slows them, not the rule).
	start := time.Now()
	proctest.WaitFor(t, "8 good polls of both devices", 30*time.Second, func() bool {
		for _, d := range p.Devices() {
			if countOK(c.since(d.ID(), start)) < 8 {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	for _, d := range p.Devices() {
		ss := c.since(d.ID(), start)
		ok := countOK(ss)
		t.Logf("%s (unit %d on %s): %d good polls in %v = %.2f/s (target %.2f/s)", d.ID(), d.Unit(), d.Addr(), ok, took.Round(time.Millisecond),
			float64(ok)/took.Seconds(), 1/interval.Seconds())
		if ok != len(ss) {
			t.Errorf("%s: %d of %d polls failed behind the one-client gateway", d.ID(), len(ss)-ok, len(ss))
		}
	}
	st := pool.Endpoint(modbus.EndpointConfig{Address: p.Devices()[0].Addr()}).Stats()
	if st.Connects != 1 {
		t.Errorf("%d connections to the shared endpoint, want 1", st.Connects)
	}
}

func countOK(ss []plant.Sample) int {
	n := 0
	for _, s := range ss {
		if s.Err == nil {
			n++
		}
	}
	return n
}

// TestFaultIsolation switches each simulator fault on for inv1 and checks
// that the poller reports it with a reason, that the other devices keep
// their poll rate, and that inv1 recovers by itself when the fault ends.
// Faults that answer (exceptions, crossed or garbled answers,
// not-implemented values) are tried with inv1 behind a gateway address it
// shares with the meter; faults that take a connection down (drop,
// offline) with inv1 on its own address, where they belong.
func TestFaultIsolation(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, s plant.Sample)
	failsWith := func(target error, words string) check {
		return func(t *testing.T, s plant.Sample) {
			if s.Err == nil || (target != nil && !errors.Is(s.Err, target)) || !strings.Contains(s.Err.Error(), words) {
				t.Errorf("poll error %v, want %v mentioning %q", s.Err, target, words)
			}
			if s.State == plant.StateOnline {
				t.Errorf("state %s after a failed poll", s.State)
			}
		}
	}
	valuesAbsent := func(t *testing.T, s plant.Sample) {
		if s.Err != nil {
			t.Fatalf("poll failed: %v", s.Err)
		}
		if !hasModel(s, 103) {
			t.Fatalf("poll without model 103: %+v", s.Registers)
		}
		for _, r := range s.Readings {
			if r.Channel == plant.ActivePower {
				t.Errorf("activePower = %v: want W not implemented (absent), not a number", r.Value)
			}
		}
	}
	shared := []sim.DeviceConfig{
		{ID: "inv1", Kind: kind.Inverter, Unit: 1, Endpoint: "gw"},
		{ID: "meter", Kind: kind.Meter, Unit: 2, Endpoint: "gw"},
		{ID: "wx", Kind: kind.Sensor, Unit: 1},
	}
	own := sim.DefaultConfig().Devices[:3] // inv1, inv2, meter
	tests := []struct {
		fault  sim.Fault
		layout []sim.DeviceConfig
		// sharedOK says whether a device sharing inv1's endpoint keeps its
		// rate: not when each failed request of inv1 costs a timeout on the
		// connection they take turns on.
		sharedOK bool
		check    check
	}{
		{sim.Fault{Kind: sim.FaultSlow, Delay: 2 * time.Second}, shared, false, failsWith(modbus.ErrTimeout, "timeout")},
		// Some garbage frames are cut short: the client waits for the rest
		// until its timeout, and the device sharing the connection with it.
		{sim.Fault{Kind: sim.FaultGarbage}, shared, false, failsWith(nil, "modbus read")},
		{sim.Fault{Kind: sim.FaultWrongTID}, shared, true, failsWith(modbus.ErrMismatch, "transaction id")},
		{sim.Fault{Kind: sim.FaultException, Code: 4}, shared, true, failsWith(nil, "server device failure")},
		{sim.Fault{Kind: sim.FaultNotImplemented}, shared, true, valuesAbsent},
		{sim.Fault{Kind: sim.FaultSlow, Delay: 2 * time.Second}, own, true, failsWith(modbus.ErrTimeout, "timeout")},
		{sim.Fault{Kind: sim.FaultGarbage}, own, true, failsWith(nil, "modbus read")},
		{sim.Fault{Kind: sim.FaultDrop}, own, true, failsWith(nil, "EOF")},
		{sim.Fault{Kind: sim.FaultOffline}, own, true, failsWith(nil, "modbus")},
	}
	for _, tc := range tests {
		name := tc.fault.Kind.String() + "/shared"
		if tc.layout[0].Endpoint == "" {
			name = tc.fault.Kind.String() + "/own"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each subtest has its own simulated plant
			cfg := sim.DefaultConfig()
			cfg.Devices = tc.layout
			p := simtest.Start(t, cfg)
			var c collector
			runPoller(t, deviceConfigs(p, 500*time.Millisecond), c.sink)
			proctest.WaitFor(t, "all online", 10*time.Second, func() bool {
				for _, d := range p.Devices() {
					if s, ok := c.last(d.ID()); !ok || s.State != plant.StateOnline {
						return false
					}
				}
				return true
			})
			inv := p.Devices()[0]
			start := time.Now()
			inv.SetFault(tc.fault)
			// The other devices go on: 12 good polls each (3 s at their
			// interval). The bound is 4× that, a backstop a loaded machine
			// stays inside, where a device that waited out inv1's timeouts
			// (2 s per poll) would not; rates are logged.
			const polls = 12
			isolated := func(d *sim.Device) bool { return d.Addr() != inv.Addr() || tc.sharedOK }
			proctest.WaitFor(t, fmt.Sprintf("%d good polls of every device isolated from inv1", polls), 4*polls*interval, func() bool {
				for _, d := range p.Devices()[1:] {
					if isolated(d) && countOK(c.since(d.ID(), start)) < polls {
						return false
					}
				}
				return true
			})
			took := time.Since(start)
			for _, d := range p.Devices()[1:] {
				rate := float64(countOK(c.since(d.ID(), start))) / took.Seconds()
				where := "own endpoint"
				if d.Addr() == inv.Addr() {
					where = "same endpoint"
				}
				t.Logf("fault %s on inv1: %s (%s) %.2f good polls/s over %v (target %.2f/s)", tc.fault, d.ID(), where, rate,
					took.Round(10*time.Millisecond), 1/interval.Seconds())
			}
			s, _ := c.last("inv1")
			tc.check(t, s)
			t.Logf("fault %s: inv1 %s: %v", tc.fault, s.State, s.Err)

			inv.SetFault(sim.Fault{Kind: sim.FaultNone})
			cleared := time.Now()
			proctest.WaitFor(t, "inv1 back online", 40*time.Second, func() bool {
				s, ok := c.last("inv1")
				return ok && s.State == plant.StateOnline && s.Time.After(cleared) && hasModel(s, 103)
			})
			t.Logf("fault %s: inv1 recovered %v after the fault ended", tc.fault, time.Since(cleared).Round(10*time.Millisecond))
		})
	}
}

// TestOneClientTakenOver has another Modbus client (a vendor logger) keep
// connecting to a device that keeps only one client: plantd loses its
// connection each time, reconnects, and keeps polling.
func TestOneClientTakenOver(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Devices = cfg.Devices[:1]
	p := simtest.Start(t, cfg)
	inv := p.Devices()[0]
	inv.SetFault(sim.Fault{Kind: sim.FaultOneClient})
	var c collector
	runPoller(t, deviceConfigs(p, time.Second), c.sink)
	proctest.WaitFor(t, "inv1 online", 10*time.Second, func() bool { s, ok := c.last("inv1"); return ok && s.State == plant.StateOnline })
	start := time.Now()
	window := 3 * time.Second
	for time.Since(start) < window {
		conn, err := net.Dial("tcp", inv.Addr())
		if err == nil {
			time.Sleep(50 * time.Millisecond)
			conn.Close()
		}
		time.Sleep(450 * time.Millisecond)
	}
	ss := c.since("inv1", start)
	rate := float64(countOK(ss)) / window.Seconds()
	t.Logf("inv1 with another client taking its connection every 0.5 s: %d polls, %.2f good polls/s (target %.2f/s)", len(ss), rate, 1/interval.Seconds())
	if rate < 0.5/interval.Seconds() {
		t.Errorf("inv1 polled at %.2f/s while its connection was taken over", rate)
	}
	proctest.WaitFor(t, "inv1 online", 10*time.Second, func() bool { s, ok := c.last("inv1"); return ok && s.State == plant.StateOnline })
}

// TestNoGoroutineLeak connects and disconnects a device 1,000 times: a
// poller started, polling once and stopped, and a connection dropped by the
// device under a running poller. The goroutine count ends where it began.
//
// It counts the goroutines of its own simulator and pollers alone, which
// carry a pprof label (goroutines inherit their creator's labels; the
// simulator's accept loop starts one per connection, so a socket left
// open counts too): it runs in parallel with the other tests.
func TestNoGoroutineLeak(t *testing.T) {
	t.Parallel() // counts its own goroutines only
	labels := pprof.Labels("leaktest", t.Name())
	cfg := sim.DefaultConfig()
	cfg.Devices = cfg.Devices[2:3] // the meter
	var p *sim.Plant
	pprof.Do(t.Context(), labels, func(context.Context) { p = simtest.Start(t, cfg) })
	d := p.Devices()[0]
	before := labelled(t, "leaktest", t.Name())
	if before == 0 {
		t.Fatal("none of the simulator's goroutines carries the label: the count would prove nothing")
	}
	n := 1000
	if testing.Short() {
		n = 100
	}
	// Every pool stays reachable to the end: a socket left open must not
	// be closed by the garbage collector's finalizer before the count.
	var pools []*modbus.Pool
	defer runtime.KeepAlive(&pools)
	pprof.Do(t.Context(), labels, func(ctx context.Context) {
		for i := 0; i < n; i++ {
			got := make(chan struct{}, 1)
			pool := modbus.NewPool(nil)
			pools = append(pools, pool)
			pl, err := poller.New([]poller.DeviceConfig{{ID: "meter", Address: d.Addr(), Unit: d.Unit(), Interval: time.Second}}, pool,
				func(s plant.Sample) {
					select {
					case got <- struct{}{}:
					default:
					}
				}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { pl.Run(ctx); close(done) }()
			<-got
			if i == 0 && labelled(t, "leaktest", t.Name()) <= before {
				t.Fatal("a running poller's goroutines carry no label: the count would prove nothing")
			}
			cancel()
			<-done
			pool.Close()
		}
	})
	// The simulator ends a closed connection's goroutine a moment after
	// the close.
	for deadline := time.Now().Add(30 * time.Second); labelled(t, "leaktest", t.Name()) > before && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if after := labelled(t, "leaktest", t.Name()); after > before {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("%d goroutines before %d connect/disconnect cycles, %d after:\n%s", before, n, after, b.String())
	}
}

// labelled counts the goroutines whose pprof labels include key=value.
func labelled(t *testing.T, key, value string) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	// debug=1: a record a stack, "N @ pcs", then "# labels: {...}" when
	// the goroutines have labels.
	want := strconv.Quote(key) + ":" + strconv.Quote(value)
	total := 0
	// The first record follows the header line "goroutine profile: total N".
	_, body, _ := strings.Cut(b.String(), "\n")
	for rec := range strings.SplitSeq(body, "\n\n") {
		head, rest, _ := strings.Cut(rec, "\n")
		if !strings.Contains(rest, "# labels: {") || !strings.Contains(rest, want) {
			continue
		}
		if k, _, ok := strings.Cut(head, " @ "); ok {
			if v, err := strconv.Atoi(k); err == nil {
				total += v
			}
		}
	}
	return total
}

// TestFirstRoundAndStalled holds the sink of a device's first poll: the
// first round is not over, and the device counts as stalled once the poll
// has run longer than its stall bound (asked with a later now); released,
// the first round ends. Without devices the first
// round is over at once.
func TestFirstRoundAndStalled(t *testing.T) {
	empty, err := poller.New(nil, modbus.NewPool(nil), func(plant.Sample) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-empty.FirstRound():
	default:
		t.Error("a poller without devices: first round not over")
	}

	p := simtest.Start(t, sim.DefaultConfig())
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pl, _, _ := runPoller(t, deviceConfigs(p, time.Second)[:1], func(plant.Sample) {
		once.Do(func() { close(entered); <-release })
	})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no first poll within 10 s")
	}
	select {
	case <-pl.FirstRound():
		t.Fatal("first round over while its sink runs")
	default:
	}
	if s := pl.Stalled(time.Now()); len(s) != 0 {
		t.Errorf("stalled at once: %v", s)
	}
	if s := pl.Stalled(time.Now().Add(poller.MinStallAfter + time.Second)); len(s) != 1 {
		t.Errorf("stalled after MinStallAfter: %v, want the one device", s)
	}
	close(release)
	select {
	case <-pl.FirstRound():
	case <-time.After(10 * time.Second):
		t.Fatal("first round not over 10 s after the sink returned")
	}
}

// TestUpdate changes the device list of a running poller: a device
// removed stops (no sample after Update returns), one added comes online,
// one whose config changed is polled anew, and the device left alone keeps
// its goroutine and counters and is polled throughout.
func TestUpdate(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	all := deviceConfigs(p, time.Second)
	if len(all) < 4 {
		t.Fatalf("%d simulated devices, the test needs 4", len(all))
	}
	var c collector
	pl, _, _ := runPoller(t, []poller.DeviceConfig{all[0], all[1], all[3]}, c.sink)
	<-pl.FirstRound()
	kept, removed, added, changed := all[0].ID, all[1].ID, all[2].ID, all[3].ID
	statsOf := func(id string) (poller.DeviceStats, bool) {
		for _, s := range pl.Stats() {
			if s.ID == id {
				return s, true
			}
		}
		return poller.DeviceStats{}, false
	}
	before, _ := statsOf(kept)

	if _, err := pl.Update([]poller.DeviceConfig{all[0], all[0]}); err == nil {
		t.Error("a list with a device twice was accepted")
	}
	slower := all[3]
	slower.Interval = 2 * interval
	ch, err := pl.Update([]poller.DeviceConfig{all[0], all[2], slower})
	if err != nil {
		t.Fatal(err)
	}
	updated := time.Now()
	if got := strings.Join(ch.Added, ",") + "|" + strings.Join(ch.Removed, ",") + "|" + strings.Join(ch.Changed, ","); got != added+"|"+removed+"|"+changed {
		t.Errorf("changes %q, want %q", got, added+"|"+removed+"|"+changed)
	}
	proctest.WaitFor(t, added+" online", 10*time.Second, func() bool {
		s, ok := c.last(added)
		return ok && s.State == plant.StateOnline
	})
	proctest.WaitFor(t, changed+" polled again", 10*time.Second, func() bool { return countOK(c.since(changed, updated)) > 0 })
	if n := len(c.since(removed, updated)); n > 0 {
		t.Errorf("%d samples of %s after it was removed", n, removed)
	}
	if _, ok := statsOf(removed); ok {
		t.Errorf("%s still in Stats", removed)
	}
	after, _ := statsOf(kept)
	if after.Polls < before.Polls {
		t.Errorf("%s's counters restarted: %d polls before the update, %d after", kept, before.Polls, after.Polls)
	}
	// The kept device was polled on its schedule throughout: no gap in
	// its samples around the update longer than a few intervals.
	proctest.WaitFor(t, kept+" polled after the update", 10*time.Second, func() bool { return len(c.since(kept, updated)) >= 4 })
	ss := c.since(kept, time.Time{})
	for i := 1; i < len(ss); i++ {
		if gap := ss[i].Time.Sub(ss[i-1].Time); gap > 4*interval {
			t.Errorf("%s not polled for %v (until %v; update at %v)", kept, gap, ss[i].Time.Format("15:04:05.000"), updated.UTC().Format("15:04:05.000"))
		}
	}
	var ids []string
	for _, s := range pl.Stats() {
		ids = append(ids, s.ID)
	}
	if got, want := strings.Join(ids, ","), kept+","+added+","+changed; got != want {
		t.Errorf("Stats in order %s, want %s", got, want)
	}
}

// TestUpdateBeforeFirstRound: a device removed before its first poll does
// not hold up FirstRound.
func TestUpdateBeforeFirstRound(t *testing.T) {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	pl, err := poller.New([]poller.DeviceConfig{{ID: "x", Address: "127.0.0.1:1"}}, pool, func(plant.Sample) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-pl.FirstRound():
		t.Fatal("first round done before Run")
	default:
	}
	if _, err := pl.Update(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pl.FirstRound():
	case <-time.After(10 * time.Second):
		t.Fatal("first round not done without devices")
	}
}
