package drivers

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// rig is a simulated plant with a relay board "rb" (unit 3): an immersion
// heater on coil 0 with its sub-meter "hm", an SG-Ready heat pump on coils
// 2 and 3; its wall clock stands still until the test moves it.
type rig struct {
	clk  *simtest.Clock
	p    *sim.Plant
	rb   *sim.Device
	pool *modbus.Pool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	clk := simtest.NewClock(time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC))
	p := simtest.Start(t, sim.Config{
		Now:   clk.Now,
		Speed: 288, // the watchdog runs on the wall clock all the same
		Devices: []sim.DeviceConfig{
			{ID: "meter", Kind: kind.Meter},
			{ID: "rb", Relay: true, Unit: 3},
			{ID: "hm", Kind: kind.Meter, Measures: "heater"},
		},
		Loads: []sim.LoadConfig{
			{ID: "heater", Kind: sim.LoadHeater, Board: "rb", Coil: 0, RatedW: 3000},
			{ID: "hp", Kind: sim.LoadSGReady, Board: "rb", Coil: 2},
		},
	})
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	return &rig{clk: clk, p: p, rb: simtest.Device(t, p, "rb"), pool: pool}
}

// client is a plantd Modbus client of a simulated device.
func (r *rig) client(id string) *modbus.Client {
	d := r.p.Device(id)
	return r.pool.Endpoint(modbus.EndpointConfig{Address: d.Addr()}).Unit(d.Unit(), 0)
}

func (r *rig) board(t *testing.T) sim.RelayState {
	t.Helper()
	st, ok := r.rb.Relay()
	if !ok {
		t.Fatal("rb is not a relay board")
	}
	return st
}

func (r *rig) load(t *testing.T, id string) sim.LoadState {
	t.Helper()
	st, ok := r.p.Load(id)
	if !ok {
		t.Fatalf("no load %q", id)
	}
	return st
}

func TestRelaySwitch(t *testing.T) {
	r := newRig(t)
	d, err := NewRelay(r.client("rb"), RelayConfig{Coil: 0, Watchdog: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Watchdog() != 2*time.Second {
		t.Errorf("Watchdog() = %v", d.Watchdog())
	}
	ctx := t.Context()
	base := r.p.Balance().LoadW
	for _, tt := range []struct {
		on bool
		w  float64
	}{{true, 3000}, {false, 0}, {true, 3000}} {
		if err := d.Set(ctx, consumer.Output{On: tt.on}); err != nil {
			t.Fatalf("Set(%v): %v", tt.on, err)
		}
		got, err := d.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Output != (consumer.Output{On: tt.on}) || got.HasPower || got.HasEnergy {
			t.Errorf("Read after Set(%v) = %+v", tt.on, got)
		}
		if w := r.load(t, "heater").PowerW; w != tt.w {
			t.Errorf("heater draws %v W, want %v", w, tt.w)
		}
		if dw := r.p.Balance().LoadW - base; math.Abs(dw-tt.w) > 1e-6 {
			t.Errorf("plant load moved by %v W, want %v", dw, tt.w)
		}
	}
	// The first Set armed the module's watchdog: 2 s, write telegram.
	st := r.board(t)
	if st.WatchdogTime != 2*time.Second || st.WatchdogMode != sim.WatchdogWriteTelegram || !st.WatchdogRunning {
		t.Errorf("board %+v: want the watchdog armed with 2 s, write telegram", st)
	}
	if err := d.Set(ctx, consumer.Output{SGReady: consumer.SGForced}); err == nil {
		t.Error("a plain relay took an SG-Ready state")
	}
}

// TestRelayWatchdog arms the watchdog with 2 s, stops talking, moves the
// wall clock past 2 s and reads once: the module dropped the coil to its
// safe state and counted the trip.
func TestRelayWatchdog(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	d, err := NewRelay(r.client("rb"), RelayConfig{Coil: 0, Watchdog: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set(ctx, consumer.Output{On: true}); err != nil {
		t.Fatal(err)
	}
	// Reads do not renew a write telegram watchdog; Sets do.
	r.clk.Add(1500 * time.Millisecond)
	if _, err := d.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Set(ctx, consumer.Output{On: true}); err != nil {
		t.Fatal(err)
	}
	renewed := r.clk.Now()
	r.clk.Add(1500 * time.Millisecond)
	if got, err := d.Read(ctx); err != nil || !got.Output.On || r.board(t).Trips != 0 {
		t.Fatalf("1.5 s after the renewal: %+v, %v, board %+v", got, err, r.board(t))
	}

	r.clk.Add(600 * time.Millisecond) // 2.1 s of silence
	got, err := d.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := r.board(t)
	if got.Output.On || st.Coils[0] || st.Trips != 1 || !st.LastTrip.Equal(renewed.Add(2*time.Second)) {
		t.Fatalf("after the silence: read %+v, board %+v; want off, one trip at %v", got, st, renewed.Add(2*time.Second))
	}
	// The heater drew 3 kW from the arming to the trip on the simulated
	// clock (288 × 3.5 s), and nothing since.
	h := r.load(t, "heater")
	if want := 3000 * 288 * 3.5 / 3600; h.PowerW != 0 || math.Abs(h.EnergyWh-want) > 1e-6 {
		t.Errorf("heater %v W, %v Wh; want 0 W, %v Wh", h.PowerW, h.EnergyWh, want)
	}

	// A module that lost its settings (a restart) is armed again by the
	// next Set, after a Read saw it.
	other := r.client("rb")
	if err := other.WriteRegisters(ctx, sim.RegWatchdogMode, []uint16{sim.WatchdogDisabled}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Set(ctx, consumer.Output{On: true}); err != nil {
		t.Fatal(err)
	}
	if st := r.board(t); st.WatchdogMode != sim.WatchdogWriteTelegram || !st.WatchdogRunning || !st.Coils[0] {
		t.Errorf("after the re-arm: %+v", st)
	}
}

func TestRelayWithoutWatchdog(t *testing.T) {
	r := newRig(t)
	d, err := NewRelay(r.client("rb"), RelayConfig{Coil: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set(t.Context(), consumer.Output{On: true}); err != nil {
		t.Fatal(err)
	}
	r.clk.Add(time.Minute)
	got, err := d.Read(t.Context())
	if st := r.board(t); err != nil || !got.Output.On || st.WatchdogMode != sim.WatchdogDisabled || st.Trips != 0 {
		t.Errorf("read %+v, %v, board %+v: want on, the watchdog untouched", got, err, st)
	}
	if d.Watchdog() != 0 {
		t.Errorf("Watchdog() = %v", d.Watchdog())
	}
}

// TestCoilOutOfRange: the module's exception 2 names the coil.
func TestCoilOutOfRange(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	relay, err := NewRelay(r.client("rb"), RelayConfig{Coil: 9})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := NewSGReady(r.client("rb"), SGReadyConfig{CoilA: 7, CoilB: 8})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"relay read", func() error { _, err := relay.Read(ctx); return err }, "read coil 9: the module has no such coil"},
		{"relay set", func() error { return relay.Set(ctx, consumer.Output{On: true}) }, "set coil 9: the module has no such coil"},
		{"SG-Ready read", func() error { _, err := sg.Read(ctx); return err }, "read SG-Ready coils A 7, B 8: the module has no such coil"},
		{"SG-Ready set", func() error { return sg.Set(ctx, consumer.Output{SGReady: consumer.SGForced}) }, "set SG-Ready coils A 7, B 8: the module has no such coil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			var ex *modbus.ExceptionError
			if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalDataAddress {
				t.Fatalf("err = %v, want exception 2", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestDriverConfigErrors(t *testing.T) {
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	c := pool.Endpoint(modbus.EndpointConfig{Address: "127.0.0.1:1"}).Unit(1, 0)
	tests := []struct {
		name string
		new  func() error
	}{
		{"relay without client", func() error { _, err := NewRelay(nil, RelayConfig{}); return err }},
		{"watchdog over a minute", func() error { _, err := NewRelay(c, RelayConfig{Watchdog: 61 * time.Second}); return err }},
		{"watchdog under a ms", func() error { _, err := NewRelay(c, RelayConfig{Watchdog: time.Microsecond}); return err }},
		{"watchdog negative", func() error { _, err := NewRelay(c, RelayConfig{Watchdog: -time.Second}); return err }},
		{"watchdog not whole ms", func() error { _, err := NewRelay(c, RelayConfig{Watchdog: 1500 * time.Microsecond}); return err }},
		{"SG-Ready without client", func() error { _, err := NewSGReady(nil, SGReadyConfig{CoilB: 1}); return err }},
		{"SG-Ready one coil", func() error { _, err := NewSGReady(c, SGReadyConfig{CoilA: 4, CoilB: 4}); return err }},
		{"SG-Ready bad profile", func() error {
			_, err := NewSGReady(c, SGReadyConfig{CoilB: 1, Watchdog: time.Second, Profile: WatchdogProfile{Name: "x", TimeReg: 1}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.new(); !errors.Is(err, ErrConfig) {
				t.Errorf("err = %v, want ErrConfig", err)
			}
		})
	}
}

// TestSubMeter reads the heater's sub-meter (SunSpec model 203) with
// plantd's own client: it shows the heater's draw, not the grid's.
func TestSubMeter(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	d, err := NewRelay(r.client("rb"), RelayConfig{Coil: 0})
	if err != nil {
		t.Fatal(err)
	}
	hm := r.p.Device("hm")
	var m203 sim.ModelInfo
	for _, m := range hm.Models() {
		if m.ID == 203 {
			m203 = m
		}
	}
	read := func() *sunspec.Instance {
		t.Helper()
		regs, err := r.client("hm").ReadHoldingRegisters(ctx, m203.Addr, m203.Len+2, nil)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := sunspec.NewInstance(sunspec.ModelByID(203), m203.Addr, regs)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	watts := func(inst *sunspec.Instance) float64 {
		t.Helper()
		w, err := inst.Float("W")
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, on := range []bool{true, false, true} {
		if err := d.Set(ctx, consumer.Output{On: on}); err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if on {
			want = 3000
		}
		if w := watts(read()); w != want {
			t.Errorf("heater on %v: sub-meter W = %v, want %v", on, w, want)
		}
	}
	if g := r.p.Device("meter").State().PowerW; g == 3000 {
		t.Errorf("grid meter shows the heater alone (%v W)", g)
	}
	before, err := read().Float("TotWhImp")
	if err != nil {
		t.Fatal(err)
	}
	r.clk.Add(12500 * time.Millisecond) // an hour at 288×
	after, err := read().Float("TotWhImp")
	if err != nil {
		t.Fatal(err)
	}
	if got := after - before; math.Abs(got-3000) > 1 {
		t.Errorf("sub-meter imported %v Wh in an hour, want 3000", got)
	}
}
