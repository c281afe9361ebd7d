package sim

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"plantd/plant/kind"
)

// relayConfig is the default plant on a manual clock with a relay board
// "rb" (unit 3 behind the gateway "gw", with the grid meter as unit 1), a
// heater on coil 0 measured by the sub-meter "hm", and an SG-Ready heat
// pump on coils 2 and 3.
func relayConfig(clk *manualClock) Config {
	cfg := testConfig(clk)
	for i := range cfg.Devices {
		if cfg.Devices[i].ID == "meter" {
			cfg.Devices[i].Endpoint = "gw"
		}
	}
	cfg.Devices = append(cfg.Devices,
		DeviceConfig{ID: "rb", Relay: true, Unit: 3, Endpoint: "gw"},
		DeviceConfig{ID: "hm", Kind: kind.Meter, Measures: "heater"},
	)
	cfg.Loads = []LoadConfig{
		{ID: "heater", Kind: LoadHeater, Board: "rb", Coil: 0, RatedW: 3000},
		{ID: "hp", Kind: LoadSGReady, Board: "rb", Coil: 2},
	}
	return cfg
}

// relayState returns the board's state or fails.
func relayState(t *testing.T, d *Device) RelayState {
	t.Helper()
	st, ok := d.Relay()
	if !ok {
		t.Fatalf("%s is not a relay board", d.ID())
	}
	return st
}

func loadState(t *testing.T, p *Plant, id string) LoadState {
	t.Helper()
	st, ok := p.Load(id)
	if !ok {
		t.Fatalf("no load %q", id)
	}
	return st
}

func TestRelayBoard(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, relayConfig(clk))
	rb := p.Device("rb")
	if rb.Kind() != "" || rb.Label() != "relay" || len(rb.Models()) != 0 {
		t.Fatalf("relay board: kind %q, label %q, models %v", rb.Kind(), rb.Label(), rb.Models())
	}
	c := dial(t, rb)
	base := p.Balance().LoadW

	// Switching: coils read back, the loads draw, the plant's load follows.
	tests := []struct {
		name      string
		write     func() error
		coils     []bool
		heaterW   float64
		sgState   int
		hpW       float64
		extraLoad float64
	}{
		{"all off", func() error { return c.WriteCoils(0, make([]bool, RelayChannels)) },
			make([]bool, 8), 0, 2, 700, 700},
		{"heater on", func() error { return c.WriteCoil(0, true) },
			[]bool{true, false, false, false, false, false, false, false}, 3000, 2, 700, 3700},
		{"SG-Ready 1 locked", func() error { return c.WriteCoils(2, []bool{true, false}) },
			[]bool{true, false, true, false, false, false, false, false}, 3000, 1, 0, 3000},
		{"SG-Ready 3 recommended", func() error { return c.WriteCoils(2, []bool{false, true}) },
			[]bool{true, false, false, true, false, false, false, false}, 3000, 3, 1600, 4600},
		{"SG-Ready 4 forced", func() error { return c.WriteCoils(2, []bool{true, true}) },
			[]bool{true, false, true, true, false, false, false, false}, 3000, 4, 2400, 5400},
		{"heater off, SG-Ready 2", func() error { return c.WriteCoils(0, make([]bool, 4)) },
			make([]bool, 8), 0, 2, 700, 700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); err != nil {
				t.Fatal(err)
			}
			got, err := c.ReadCoils(0, RelayChannels)
			if err != nil || !slices.Equal(got, tt.coils) {
				t.Fatalf("coils %v, %v; want %v", got, err, tt.coils)
			}
			h, hp := loadState(t, p, "heater"), loadState(t, p, "hp")
			if h.PowerW != tt.heaterW || hp.SGReady != tt.sgState || hp.PowerW != tt.hpW {
				t.Errorf("heater %v W, heat pump state %d %v W; want %v W, %d %v W",
					h.PowerW, hp.SGReady, hp.PowerW, tt.heaterW, tt.sgState, tt.hpW)
			}
			// The base load also counts the heat pump's 700 W (state 2)
			// it drew from the start.
			if d := p.Balance().LoadW - base; math.Abs(d-(tt.extraLoad-700)) > 1e-6 {
				t.Errorf("plant load moved by %v W, want %v", d, tt.extraLoad-700)
			}
		})
	}

	if err := rb.SetInput(5, true); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadDiscreteInputs(4, 4); err != nil || !slices.Equal(got, []bool{false, true, false, false}) {
		t.Errorf("discrete inputs 4..7 = %v, %v; want input 5 on", got, err)
	}
	if got := relayState(t, rb).Inputs; !got[5] || got[4] {
		t.Errorf("state inputs %v", got)
	}
	if err := rb.SetInput(8, true); err == nil {
		t.Error("SetInput(8): no error")
	}
	if err := p.Device("meter").SetInput(0, true); !errors.Is(err, ErrNotRelay) {
		t.Errorf("meter SetInput: %v, want ErrNotRelay", err)
	}

	// Addresses outside the board, and the other devices on the endpoint.
	exceptions := []struct {
		name string
		unit byte
		do   func() error
		want error
	}{
		{"read coil 8", 3, func() error { _, err := c.ReadCoils(8, 1); return err }, mb.ErrIllegalDataAddress},
		{"read coils 4+5", 3, func() error { _, err := c.ReadCoils(4, 5); return err }, mb.ErrIllegalDataAddress},
		{"write coil 8", 3, func() error { return c.WriteCoil(8, true) }, mb.ErrIllegalDataAddress},
		{"write coils 7+2", 3, func() error { return c.WriteCoils(7, []bool{true, true}) }, mb.ErrIllegalDataAddress},
		{"read input 8", 3, func() error { _, err := c.ReadDiscreteInputs(8, 1); return err }, mb.ErrIllegalDataAddress},
		{"read register 0x1000", 3, func() error { _, err := c.ReadRegisters(0x1000, 1, mb.HOLDING_REGISTER); return err },
			mb.ErrIllegalDataAddress},
		{"read across both blocks", 3, func() error { _, err := c.ReadRegisters(0x1021, 2, mb.HOLDING_REGISTER); return err },
			mb.ErrIllegalDataAddress},
		{"write trips", 3, func() error { return c.WriteRegister(RegWatchdogTrips, 0) }, mb.ErrIllegalDataAddress},
		{"write time 0", 3, func() error { return c.WriteRegister(RegWatchdogTime, 0) }, mb.ErrIllegalDataValue},
		{"write time 60001", 3, func() error { return c.WriteRegister(RegWatchdogTime, 60001) }, mb.ErrIllegalDataValue},
		{"write mode 3", 3, func() error { return c.WriteRegister(RegWatchdogMode, 3) }, mb.ErrIllegalDataValue},
		{"write fallback 2", 3, func() error { return c.WriteRegister(RegFallbackMode, 2) }, mb.ErrIllegalDataValue},
		{"input registers", 3, func() error { _, err := c.ReadRegisters(0, 1, mb.INPUT_REGISTER); return err }, mb.ErrIllegalFunction},
		{"meter coils", 1, func() error { _, err := c.ReadCoils(0, 1); return err }, mb.ErrIllegalFunction},
		{"meter inputs", 1, func() error { _, err := c.ReadDiscreteInputs(0, 1); return err }, mb.ErrIllegalFunction},
		{"unknown unit coils", 9, func() error { _, err := c.ReadCoils(0, 1); return err }, mb.ErrGWTargetFailedToRespond},
	}
	for _, tt := range exceptions {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.SetUnitId(tt.unit); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.SetUnitId(3) })
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if got, err := c.ReadRegisters(RegWatchdogTime, 4, mb.HOLDING_REGISTER); err != nil ||
		!slices.Equal(got, []uint16{1000, 0, WatchdogDisabled, FallbackZero}) {
		t.Errorf("watchdog registers %v, %v; want the defaults", got, err)
	}
	// Every write is in the trace, refused ones with their exception.
	var coilWrites, refused int
	for _, e := range p.Trace("rb") {
		if _, ok := e.Point("coil[0]"); ok && e.Error == "" {
			coilWrites++
		}
		if e.Error != "" {
			refused++
		}
	}
	if coilWrites != 3 || refused != 7 {
		t.Errorf("trace: %d accepted writes of coil 0, %d refused writes; want 3 and 7", coilWrites, refused)
	}
}

func TestRelayWatchdog(t *testing.T) {
	const wd = 2 * time.Second
	tests := []struct {
		name      string
		mode      uint16
		fallback  uint16
		talk      func(c *mb.ModbusClient) error // every 1.5 s, twice, before the silence
		triggers  bool                           // talk triggers the watchdog
		wantTrips uint64
		wantOn    bool // coil 0 after the silence
		wantRun   bool
	}{
		{name: "telegram: reads keep it alive, then silence", mode: WatchdogTelegram,
			talk:     func(c *mb.ModbusClient) error { _, err := c.ReadDiscreteInputs(0, 1); return err },
			triggers: true, wantTrips: 1},
		{name: "write telegram: reads do not count", mode: WatchdogWriteTelegram,
			talk:      func(c *mb.ModbusClient) error { _, err := c.ReadCoils(0, 1); return err },
			wantTrips: 1},
		{name: "write telegram: writes keep it alive", mode: WatchdogWriteTelegram,
			talk:     func(c *mb.ModbusClient) error { return c.WriteCoil(0, true) },
			triggers: true, wantTrips: 1},
		{name: "write telegram: the reset register keeps it alive", mode: WatchdogWriteTelegram,
			talk:     func(c *mb.ModbusClient) error { return c.WriteRegister(RegWatchdogReset, 1) },
			triggers: true, wantTrips: 1},
		{name: "freeze keeps the outputs", mode: WatchdogTelegram, fallback: FallbackFreeze,
			talk:     func(c *mb.ModbusClient) error { _, err := c.ReadCoils(0, 1); return err },
			triggers: true, wantTrips: 1, wantOn: true},
		{name: "disabled", mode: WatchdogDisabled,
			talk:   func(c *mb.ModbusClient) error { _, err := c.ReadCoils(0, 1); return err },
			wantOn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(summerNoon)
			cfg := relayConfig(clk)
			cfg.Speed = 288 // the watchdog runs on the wall clock all the same
			p := startPlant(t, cfg)
			rb := p.Device("rb")
			c := dial(t, rb)
			if err := c.WriteRegisters(RegWatchdogTime, []uint16{uint16(wd.Milliseconds()), 0, tt.mode, tt.fallback}); err != nil {
				t.Fatal(err)
			}
			if st := relayState(t, rb); st.WatchdogRunning || st.WatchdogTime != wd {
				t.Fatalf("before a coil write: running %v, time %v", st.WatchdogRunning, st.WatchdogTime)
			}
			if err := c.WriteCoil(0, true); err != nil { // starts it
				t.Fatal(err)
			}
			armed := clk.Now()
			e0 := loadState(t, p, "heater").EnergyWh
			if st := relayState(t, rb); st.WatchdogRunning != (tt.mode != WatchdogDisabled) {
				t.Fatalf("after a coil write: running %v", st.WatchdogRunning)
			}
			lastTrigger := armed
			for range 2 {
				clk.Add(1500 * time.Millisecond)
				if err := tt.talk(c); err != nil {
					t.Fatal(err)
				}
				if tt.triggers {
					lastTrigger = clk.Now()
				}
			}
			tripAt := lastTrigger.Add(wd)
			st := relayState(t, rb)
			switch {
			case tt.mode == WatchdogDisabled:
			case !tt.triggers:
				// 3 s passed since the coil write: the talk after 1.5 s
				// did not trigger, the one after 3 s found it expired.
				if st.Trips != 1 || st.Coils[0] {
					t.Fatalf("talk that does not trigger kept the watchdog alive: %+v", st)
				}
			case st.Trips != 0:
				t.Fatalf("tripped while talking: %+v", st)
			}

			clk.Add(wd + time.Millisecond) // silence, then one read
			got, err := c.ReadCoils(0, RelayChannels)
			if err != nil {
				t.Fatal(err)
			}
			st = relayState(t, rb)
			if got[0] != tt.wantOn || st.Coils[0] != tt.wantOn || st.Trips != tt.wantTrips || st.WatchdogRunning != tt.wantRun {
				t.Fatalf("after silence: coil 0 read %v, state %+v; want on %v, %d trips, running %v",
					got[0], st, tt.wantOn, tt.wantTrips, tt.wantRun)
			}
			if regs, err := c.ReadRegisters(RegWatchdogTrips, 1, mb.HOLDING_REGISTER); err != nil || regs[0] != uint16(tt.wantTrips) {
				t.Errorf("trips register %v, %v; want %d", regs, err, tt.wantTrips)
			}
			if tt.wantTrips == 0 || tt.wantOn {
				return
			}
			if !st.LastTrip.Equal(tripAt) {
				t.Errorf("tripped at %v, want %v", st.LastTrip, tripAt)
			}
			// The heater drew its 3 kW until the trip, to the simulated
			// instant (288 × the wall time), and nothing since.
			h := loadState(t, p, "heater")
			wantWh := 3000 * 288 * tripAt.Sub(armed).Hours()
			if h.PowerW != 0 || math.Abs(h.EnergyWh-e0-wantWh) > 1e-6 {
				t.Errorf("heater %v W, %v Wh since armed; want 0 W, %v Wh", h.PowerW, h.EnergyWh-e0, wantWh)
			}
			// A new write starts it again.
			if err := c.WriteCoil(0, true); err != nil {
				t.Fatal(err)
			}
			if st := relayState(t, rb); !st.WatchdogRunning || !st.Coils[0] {
				t.Errorf("after a new write: %+v", st)
			}
		})
	}
}

func TestSubMeter(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, relayConfig(clk))
	hm := p.Device("hm")
	c := dial(t, hm)
	rc := dial(t, p.Device("rb"))
	if err := rc.WriteCoil(0, true); err != nil {
		t.Fatal(err)
	}
	before := num(t, readModel(t, c, hm, 203), "TotWhImp")
	if w := num(t, readModel(t, c, hm, 203), "W"); w != 3000 {
		t.Errorf("sub-meter W = %v, want the heater's 3000", w)
	}
	clk.Add(time.Hour)
	m := readModel(t, c, hm, 203)
	if got := num(t, m, "TotWhImp") - before; math.Abs(got-3000) > 1 {
		t.Errorf("sub-meter imported %v Wh in an hour, want 3000", got)
	}
	if st := hm.State(); st.PowerW != 3000 {
		t.Errorf("sub-meter state %v W", st.PowerW)
	}
	if err := rc.WriteCoil(0, false); err != nil {
		t.Fatal(err)
	}
	if w := num(t, readModel(t, c, hm, 203), "W"); w != 0 {
		t.Errorf("heater off: sub-meter W = %v", w)
	}
	// The grid meter still sees the whole house.
	if g, b := p.Device("meter").State().PowerW, p.Balance(); g != b.GridW {
		t.Errorf("grid meter %v W, balance grid %v W", g, b.GridW)
	}
}

func TestRelayConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
	}{
		{"relay with kind", func(c *Config) { c.Devices[5].Kind = kind.Meter }},
		{"relay with rating", func(c *Config) { c.Devices[5].RatedW = 100 }},
		{"consumer kind", func(c *Config) { c.Devices[0].Kind = kind.Consumer }},
		{"inverter measures", func(c *Config) { c.Devices[0].Measures = "heater" }},
		{"measures no load", func(c *Config) { c.Devices[6].Measures = "boiler" }},
		{"load without id", func(c *Config) { c.Loads[0].ID = "" }},
		{"load id twice", func(c *Config) { c.Loads[1].ID = "heater" }},
		{"load id of a device", func(c *Config) { c.Loads[0].ID = "inv1" }},
		{"unknown board", func(c *Config) { c.Loads[0].Board = "nope" }},
		{"board not a relay", func(c *Config) { c.Loads[0].Board = "meter" }},
		{"coil 8", func(c *Config) { c.Loads[0].Coil = 8 }},
		{"coil -1", func(c *Config) { c.Loads[0].Coil = -1 }},
		{"SG-Ready on coil 7", func(c *Config) { c.Loads[1].Coil = 7 }},
		{"shared coil", func(c *Config) { c.Loads[0].Coil = 3 }},
		{"unknown kind", func(c *Config) { c.Loads[0].Kind = "kettle" }},
		{"heater rating", func(c *Config) { c.Loads[0].RatedW = -1 }},
		{"heater states", func(c *Config) { c.Loads[0].StateW = [4]float64{1, 2, 3, 4} }},
		{"SG-Ready rating", func(c *Config) { c.Loads[1].RatedW = 2000 }},
		{"SG-Ready state", func(c *Config) { c.Loads[1].StateW = [4]float64{0, 1, 2, 1e6} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := relayConfig(newClock(summerNoon))
			tc.edit(&cfg)
			_, err := New(cfg, nil)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
			t.Log(err)
		})
	}
	cfg := relayConfig(newClock(summerNoon))
	c, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Loads[0].RatedW != 3000 || c.Loads[1].StateW != defaultSGReadyW || cfg.Loads[1].StateW != ([4]float64{}) {
		t.Errorf("defaults %+v (input %+v)", c.Loads, cfg.Loads)
	}
}

// TestInputsFollowCoils: an I/O module's discrete input N follows a write
// of its coil N over Modbus; a plain relay board's inputs do not.
func TestInputsFollowCoils(t *testing.T) {
	clk := newClock(summerNoon)
	cfg := relayConfig(clk)
	cfg.Devices = append(cfg.Devices, DeviceConfig{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1})
	p := startPlant(t, cfg)
	tests := []struct {
		id     string
		label  string
		follow bool
	}{
		{"rcr", "io-module", true},
		{"rb", "relay", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			d := p.Device(tt.id)
			if d.Label() != tt.label {
				t.Fatalf("label %q, want %q", d.Label(), tt.label)
			}
			c := dial(t, d)
			if err := c.WriteCoils(1, []bool{true, false, true}); err != nil {
				t.Fatal(err)
			}
			want := []bool{false, tt.follow, false, tt.follow, false, false, false, false}
			got, err := c.ReadDiscreteInputs(0, RelayChannels)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("inputs %v, %v; want %v", got, err, want)
			}
			// The read is recorded at the board's wall time.
			if st := relayState(t, d); len(st.InputReads) != 1 || !st.InputReads[0].Equal(clk.Now()) {
				t.Errorf("input reads %v, want the one at %v", st.InputReads, clk.Now())
			}
			for range maxInputReads + 8 {
				if _, err := c.ReadDiscreteInputs(0, 1); err != nil {
					t.Fatal(err)
				}
			}
			if st := relayState(t, d); len(st.InputReads) != maxInputReads {
				t.Errorf("%d input reads kept, want the last %d", len(st.InputReads), maxInputReads)
			}
			if err := c.WriteCoil(1, false); err != nil {
				t.Fatal(err)
			}
			if st := relayState(t, d); st.Inputs[1] {
				t.Errorf("input 1 still on after coil 1 off")
			}
		})
	}
	if _, err := New(Config{Devices: []DeviceConfig{{ID: "x", Kind: kind.Meter, InputsFollowCoils: true}}}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("inputsFollowCoils on a meter: %v, want ErrConfig", err)
	}
}
