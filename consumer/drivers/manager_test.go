package drivers_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// samples collects a manager's samples and lets a test wait for one.
type samples struct {
	mu   sync.Mutex
	got  []plant.Sample
	note chan struct{}
}

func newSamples() *samples { return &samples{note: make(chan struct{}, 1)} }

func (s *samples) sink(x plant.Sample) {
	s.mu.Lock()
	s.got = append(s.got, x)
	s.mu.Unlock()
	select {
	case s.note <- struct{}{}:
	default:
	}
}

// wait returns the first sample from now on that satisfies ok.
func (s *samples) wait(t *testing.T, what string, ok func(plant.Sample) bool) plant.Sample {
	t.Helper()
	s.mu.Lock()
	from := len(s.got)
	s.mu.Unlock()
	deadline := time.After(30 * time.Second) // a backstop only: each poll is a second
	for {
		s.mu.Lock()
		for _, x := range s.got[from:] {
			if ok(x) {
				s.mu.Unlock()
				return x
			}
		}
		from = len(s.got)
		s.mu.Unlock()
		select {
		case <-s.note:
		case <-deadline:
			t.Fatalf("no sample: %s", what)
		}
	}
}

func switched(st plant.SwitchingState) func(plant.Sample) bool {
	return func(x plant.Sample) bool { return x.Consumer != nil && x.Consumer.Switch == st }
}

// marks is the store's marks in memory.
type marks struct {
	mu sync.Mutex
	m  map[string]int64
}

func (k *marks) Mark(_ context.Context, key string) (int64, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *marks) SetMark(_ context.Context, key string, v int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = v
	return nil
}

// TestManagerSurplusAndModes drives a manager with one Shelly plug (the
// simulator's, over HTTP) through surplus, the guard, a manual Off that
// holds against surplus, and the mode kept across a new manager.
func TestManagerSurplusAndModes(t *testing.T) {
	p, plug, _ := simPlug(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plantClock := simtest.NewClock(noon)
	smp := newSamples()
	keep := &marks{m: map[string]int64{}}
	var logMu sync.Mutex
	var logs []plant.LogEntry
	spec := consumer.Spec{ID: "plug", PlantID: "p", Name: "Plug", DriverName: "shelly",
		Driver: newShelly(t, plug.URL(), 30*time.Second), RatedW: 1200, Mode: plant.ModeAuto, Priority: 1,
		MinOn: 10 * time.Minute, MinOff: 5 * time.Minute, MaxSwitchesPerHour: 6, OnW: 1200, OffW: 1080,
		Interval: 50 * time.Millisecond, Timeout: time.Second}
	m, err := consumer.New(ctx, []consumer.Spec{spec}, consumer.Deps{Sink: smp.sink, Marks: keep, Now: plantClock.Now,
		Log: func(e plant.LogEntry) { logMu.Lock(); logs = append(logs, e); logMu.Unlock() }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	first := smp.wait(t, "first poll", switched(plant.SwitchedOff))
	if !first.Consumer.HasPower || first.Consumer.Estimated || first.State != plant.StateOnline {
		t.Fatalf("first sample %+v: want measured power, online", first.Consumer)
	}
	absorb := func(exportW float64) {
		m.Absorb(ctx, "p", plant.Surplus{Time: plantClock.Now(), GridW: -exportW, GridOK: true})
	}
	// 1000 W export: not enough for 1200 W.
	absorb(1000)
	if st := m.Consumers()[0]; st.Reason != plant.ReasonNoSurplus || st.SwitchingState != plant.SwitchedOff {
		t.Fatalf("at 1000 W: %+v", st)
	}
	// 1500 W: on, written at once (the loop is kicked), read back on.
	absorb(1500)
	on := smp.wait(t, "switched on", switched(plant.SwitchedOn))
	if !plug.State().On || on.Consumer.PowerW != 1200 {
		t.Fatalf("plug state %+v, sample %+v: want on at 1200 W", plug.State(), on.Consumer)
	}
	// The surplus is gone (the plug now draws 1200 W: importing 300 W), but
	// its min on time holds it.
	plantClock.Add(time.Minute)
	absorb(-300)
	if st := m.Consumers()[0]; st.Reason != plant.ReasonMinOnTime || !plug.State().On {
		t.Fatalf("in min on time: %+v, plug %+v", st, plug.State())
	}
	// After it: off.
	plantClock.Add(10 * time.Minute)
	absorb(-300)
	smp.wait(t, "switched off", switched(plant.SwitchedOff))
	// Manual Off holds against surplus, after the min off time too.
	if _, err := m.SetMode(ctx, "plug", plant.ModeOff, "test"); err != nil {
		t.Fatal(err)
	}
	plantClock.Add(6 * time.Minute)
	absorb(5000)
	if st := m.Consumers()[0]; st.Reason != plant.ReasonManual || plug.State().On {
		t.Fatalf("manual Off with surplus: %+v, plug %+v", st, plug.State())
	}
	// Manual On switches it on without surplus.
	if st, err := m.SetMode(ctx, "plug", plant.ModeOn, "test"); err != nil || st.Mode != plant.ModeOn {
		t.Fatalf("SetMode On: %+v %v", st, err)
	}
	smp.wait(t, "manual on", switched(plant.SwitchedOn))
	if _, err := m.SetMode(ctx, "nope", plant.ModeOn, "test"); !errors.Is(err, plant.ErrUnknownDevice) {
		t.Errorf("unknown consumer: %v", err)
	}
	cancel()
	<-done
	// A new manager (a restart) keeps the mode set over the API.
	m2, err := consumer.New(context.Background(), []consumer.Spec{spec}, consumer.Deps{Sink: func(plant.Sample) {}, Marks: keep, Now: plantClock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := m2.Consumers()[0]; st.Mode != plant.ModeOn {
		t.Errorf("mode after restart = %s, want On", st.Mode)
	}
	logMu.Lock()
	defer logMu.Unlock()
	var codes []string
	for _, e := range logs {
		codes = append(codes, e.Code)
	}
	want := []string{"ConsumerSwitched", "ConsumerSwitched", "ConsumerModeSet", "ConsumerModeSet", "ConsumerSwitched"}
	if len(codes) != len(want) {
		t.Errorf("log codes %v, want %v", codes, want)
	}
	_ = p
}

// TestManagerDimming: two controllable plugs (1200 W each, the simulator's
// Shelly twins) in manual On, dimmed to 1500 W: the lower-priority one goes
// off whatever its mode and min on time, at once (before the next control
// cycle), the other stays; the end of the signal brings it back.
func TestManagerDimming(t *testing.T) {
	p := twoPlugs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	smp := newSamples()
	clk := simtest.NewClock(noon)
	specs := plugSpecs(t, p, func(s *consumer.Spec) { s.Controllable, s.Mode, s.MinOn = true, plant.ModeOn, time.Hour })
	m, err := consumer.New(ctx, specs, consumer.Deps{Sink: smp.sink, Now: clk.Now, DimmingMinW: 1500}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(ctx)
	on := func(id string) bool { return p.Shelly(id).State().On }
	absorb := func() { m.Absorb(ctx, "p", plant.Surplus{Time: clk.Now(), GridW: 500, GridOK: true}) }
	// waitFor waits for cond, running a control cycle between polls.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		proctest.WaitFor(t, what, 10*time.Second, func() bool {
			if cond() {
				return true
			}
			absorb()
			return false
		})
	}
	waitFor("both on by hand, their draw read", func() bool {
		st := m.Consumers()
		return on("a") && on("b") && st[0].ConsumptionW != nil && *st[0].ConsumptionW > 0 && st[1].ConsumptionW != nil && *st[1].ConsumptionW > 0
	})
	absorb() // a control cycle that saw both draw
	m.Dim("p", true)
	// At once, with the last cycle's surplus: no further cycle needed.
	proctest.WaitFor(t, "b off by the dimming, without a control cycle", 10*time.Second, func() bool { return !on("b") })
	waitFor("b off by the dimming", func() bool { return on("a") && !on("b") })
	if st := m.Consumers(); st[1].Reason != plant.ReasonDimmed || st[0].Reason != plant.ReasonManual {
		t.Errorf("reasons %s, %s; want Manual, Dimmed", st[0].Reason, st[1].Reason)
	}
	m.Dim("p", false)
	clk.Add(2 * time.Minute) // b's min off time
	waitFor("b back on", func() bool { return on("a") && on("b") })
}

// TestManagerModeUnderLimit: a manual On while the grid operator's cap
// holds gets only what the cap leaves, decided with the plant's other
// consumers and at once, from a fresh manager that has run no control
// cycle yet (no guard history, no surplus seen): two controllable plugs of
// 1200 W under a cap of 1500 W. b on by hand fits; a on by hand (higher
// priority) switches b off, and b is off on the device before a is on.
func TestManagerModeUnderLimit(t *testing.T) {
	for _, cap := range []struct {
		name  string
		apply func(m *consumer.Manager)
	}{
		{"LPC", func(m *consumer.Manager) { m.LimitConsumption("p", true, 1000) }}, // below the minimum: 1500 W
		{"dimming", func(m *consumer.Manager) { m.Dim("p", true) }},
	} {
		t.Run(cap.name, func(t *testing.T) {
			p := twoPlugs(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			smp := newSamples()
			clk := simtest.NewClock(noon)
			var specs []consumer.Spec
			for i, id := range []string{"a", "b"} {
				specs = append(specs, consumer.Spec{ID: id, PlantID: "p", DriverName: "shelly", Driver: newShelly(t, p.Shelly(id).URL(), 0),
					Controllable: true, RatedW: 1200, Mode: plant.ModeOff, Priority: i,
					OnW: 1200, OffW: 1080, Interval: 20 * time.Millisecond, Timeout: time.Second})
			}
			m, err := consumer.New(ctx, specs, consumer.Deps{Sink: smp.sink, Now: clk.Now, DimmingMinW: 1500}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cap.apply(m)
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			defer func() { cancel(); <-done }()
			on := func(id string) bool { return p.Shelly(id).State().On }
			read := func(id string) bool {
				return slices.ContainsFunc(m.Consumers(), func(s plant.ConsumerStatus) bool { return s.DeviceID == id && s.ConsumptionW != nil })
			}
			proctest.WaitFor(t, "both read", 10*time.Second, func() bool { return read("a") && read("b") && !on("a") && !on("b") })
			if _, err := m.SetMode(ctx, "b", plant.ModeOn, "test"); err != nil {
				t.Fatal(err)
			}
			// b on, and read drawing: a consumer's measured draw is what the
			// cap counts once it is read (a device just switched on counts
			// its rating until then, a read 0 W as 0 W: the next cycle
			// corrects, as with every other change of draw).
			proctest.WaitFor(t, "b on by hand (1200 W fits 1500 W), drawing", 10*time.Second, func() bool {
				st := m.Consumers()
				return on("b") && st[1].ConsumptionW != nil && *st[1].ConsumptionW >= 1000
			})
			if _, err := m.SetMode(ctx, "a", plant.ModeOn, "test"); err != nil {
				t.Fatal(err)
			}
			proctest.WaitFor(t, "a on by hand", 10*time.Second, func() bool {
				a, b := on("a"), on("b")
				if a && b {
					t.Fatalf("a and b on together: 2400 W under a cap of 1500 W: %+v", m.Consumers())
				}
				return a
			})
			if st := m.Consumers(); st[1].Reason != plant.ReasonDimmed {
				t.Errorf("b's reason %s, want %s", st[1].Reason, plant.ReasonDimmed)
			}
			// The first control cycle keeps it so.
			m.Absorb(ctx, "p", plant.Surplus{Time: clk.Now(), GridW: 500, GridOK: true})
			smp.wait(t, "a poll after the cycle", func(x plant.Sample) bool { return x.Device == "a" })
			smp.wait(t, "b poll after the cycle", func(x plant.Sample) bool { return x.Device == "b" })
			if !on("a") || on("b") {
				t.Errorf("after a control cycle: a on %v, b on %v; want a on, b off", on("a"), on("b"))
			}
			// Past the start's settling, a's measured draw counts: still
			// no room for b.
			clk.Add(3 * time.Minute)
			smp.wait(t, "a read after the settling", func(x plant.Sample) bool {
				return x.Device == "a" && x.Consumer != nil && x.Consumer.PowerW >= 1000
			})
			m.Absorb(ctx, "p", plant.Surplus{Time: clk.Now(), GridW: 500, GridOK: true})
			smp.wait(t, "b poll after the second cycle", func(x plant.Sample) bool { return x.Device == "b" })
			if !on("a") || on("b") {
				t.Errorf("after the settling: a on %v, b on %v; want a on, b off", on("a"), on("b"))
			}
		})
	}
}

// TestManagerFailedProbeHolds: under a feed-in limit the manager switches
// one consumer on that only curtailed PV would carry (a probe); when the
// battery then pays for it, the probe failed and the next consumer is not
// probed on the battery too, at the next probe period or after the first
// consumer's minimum on time; a probe once the hold is over that the PV
// carries ends the run of failures. Two simulated Shelly plugs of 1200 W.
func TestManagerFailedProbeHolds(t *testing.T) {
	p := twoPlugs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	smp := newSamples()
	clk := simtest.NewClock(noon)
	specs := plugSpecs(t, p, func(s *consumer.Spec) { s.Mode, s.MinOn = plant.ModeAuto, time.Minute })
	m, err := consumer.New(ctx, specs, consumer.Deps{Sink: smp.sink, Now: clk.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(ctx)
	on := func(id string) bool { return p.Shelly(id).State().On }
	// The meter at 0 under the limit, the battery full; curtailedW held
	// back (an upper bound, as grid control reports it while the
	// inverters sit at their limit), the battery paying dischargeW.
	absorb := func(dischargeW, curtailedW float64) {
		m.Absorb(ctx, "p", plant.Surplus{Time: clk.Now(), GridW: 0, GridOK: true, CurtailedW: curtailedW,
			BatteryOK: true, BatteryDischargeW: dischargeW, BatterySoCOK: true, BatterySoCPct: 100})
	}
	proctest.WaitFor(t, "both polled", 10*time.Second, func() bool {
		st := m.Consumers()
		return st[0].ConsumptionW != nil && st[1].ConsumptionW != nil
	})
	absorb(0, 10000)
	proctest.WaitFor(t, "a on by the probe", 10*time.Second, func() bool { return on("a") })
	if on("b") {
		t.Fatal("b on in the same probe as a")
	}
	// The PV was not there (a cloud): the inverters' limit rose, their
	// output did not, and the battery pays a's 1200 W.
	for range 3 {
		clk.Add(20 * time.Second)
		absorb(1200, 0)
	}
	proctest.WaitFor(t, "a off after its min on time", 10*time.Second, func() bool { absorb(1200, 0); return !on("a") })
	// a off: the inverters back at their limit, the battery idle, the
	// same 10 kW reported held back. The next consumer in line is not
	// probed on the battery too, past the probe period.
	for range 2 {
		clk.Add(20 * time.Second)
		absorb(0, 10000)
		if st := m.Consumers()[1]; on("b") || st.Reason != plant.ReasonProbing {
			t.Fatalf("b %v (%s) %s after a's failed probe", on("b"), st.Reason, clk.Now().Sub(noon))
		}
	}
	// After the hold (10 minutes): a probe again (a, the first in line),
	// which the PV carries this time; then b's probe follows one probe
	// period later.
	clk.Add(10 * time.Minute)
	absorb(0, 10000)
	proctest.WaitFor(t, "a on by a probe after the hold", 10*time.Second, func() bool { return on("a") })
	clk.Add(20 * time.Second)
	absorb(0, 8800)
	clk.Add(15 * time.Second)
	absorb(0, 8800)
	proctest.WaitFor(t, "b on by the next probe", 10*time.Second, func() bool { absorb(0, 8800); return on("b") })
}

// twoPlugs runs a simulated plant with a meter and two Shelly plugs of
// 1200 W, a and b, until the test ends.
func twoPlugs(t *testing.T) *sim.Plant {
	t.Helper()
	return simtest.Start(t, sim.Config{ClearSky: true, Devices: []sim.DeviceConfig{{ID: "meter", Kind: kind.Meter}},
		Shellies: []sim.ShellyConfig{{ID: "a", RatedW: 1200}, {ID: "b", RatedW: 1200}}})
}

// plugSpecs are the consumers of twoPlugs' plugs, a before b in priority
// (1200 W, on at 1200 W of surplus, off below 1080 W, a minute's minimum
// off time), each changed by edit.
func plugSpecs(t *testing.T, p *sim.Plant, edit func(*consumer.Spec)) []consumer.Spec {
	t.Helper()
	var specs []consumer.Spec
	for i, id := range []string{"a", "b"} {
		s := consumer.Spec{ID: id, PlantID: "p", DriverName: "shelly", Driver: newShelly(t, p.Shelly(id).URL(), 0),
			RatedW: 1200, Priority: i, MinOff: time.Minute, OnW: 1200, OffW: 1080, Interval: 50 * time.Millisecond, Timeout: time.Second}
		edit(&s)
		specs = append(specs, s)
	}
	return specs
}
