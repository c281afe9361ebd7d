package sim

import (
	"context"
	"errors"
	"io"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"plantd/devices"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// manualClock is a wall clock the test moves by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *manualClock { return &manualClock{t: t} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// summerNoon is close to solar noon at the default location (11.6° E).
var summerNoon = time.Date(2025, 6, 21, 11, 15, 0, 0, time.UTC)

// testConfig is the default plant on a manual clock.
func testConfig(clk *manualClock) Config {
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	return cfg
}

// startPlant builds and starts a plant, closed when the test ends.
func startPlant(t *testing.T, cfg Config) *Plant {
	t.Helper()
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// dial connects a simonvetter client to a device.
func dial(t *testing.T, d *Device) *mb.ModbusClient {
	t.Helper()
	c, err := mb.NewClient(&mb.ClientConfiguration{
		URL:     "tcp://" + d.Addr(),
		Timeout: 3 * time.Second,
		Logger:  log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := c.Open(); err != nil {
		t.Fatalf("open %s: %v", d.Addr(), err)
	}
	if err := c.SetUnitId(d.Unit()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rw adapts a simonvetter client to sunspec.ReadWriter.
type rw struct{ c *mb.ModbusClient }

func (r rw) ReadHoldingRegisters(_ context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	v, err := r.c.ReadRegisters(addr, quantity, mb.HOLDING_REGISTER)
	return append(dst[:0], v...), err
}

func (r rw) WriteRegisters(_ context.Context, addr uint16, values []uint16) error {
	return r.c.WriteRegisters(addr, values)
}

// modelInfo returns where model id sits in d's map.
func modelInfo(t *testing.T, d *Device, id uint16) ModelInfo {
	t.Helper()
	for _, m := range d.Models() {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("%s has no model %d", d.ID(), id)
	return ModelInfo{}
}

// readModel reads model id of d over Modbus and decodes it.
func readModel(t *testing.T, c *mb.ModbusClient, d *Device, id uint16) *sunspec.Instance {
	t.Helper()
	m := modelInfo(t, d, id)
	n := int(m.Len) + 2
	regs := make([]uint16, 0, n)
	for len(regs) < n {
		q := min(125, n-len(regs))
		r, err := c.ReadRegisters(m.Addr+uint16(len(regs)), uint16(q), mb.HOLDING_REGISTER)
		if err != nil {
			t.Fatalf("%s: read model %d: %v", d.ID(), id, err)
		}
		regs = append(regs, r...)
	}
	inst, err := sunspec.NewInstance(sunspec.ModelByID(id), m.Addr, regs)
	if err != nil {
		t.Fatalf("%s: model %d: %v", d.ID(), id, err)
	}
	return inst
}

// num decodes a point that must be implemented.
func num(t *testing.T, inst *sunspec.Instance, name string) float64 {
	t.Helper()
	v, err := inst.Float(name)
	if err != nil {
		t.Fatalf("model %d %s: %v", inst.Model.ID, name, err)
	}
	return v
}

// implemented reports whether a point holds a value.
func implemented(t *testing.T, inst *sunspec.Instance, name string) bool {
	t.Helper()
	v, err := inst.Value(name)
	if err != nil {
		t.Fatal(err)
	}
	return v.OK
}

// writePoints writes points of a model the way plantd does, with read-back.
func writePoints(t *testing.T, c *mb.ModbusClient, d *Device, id uint16, values ...sunspec.PointValue) {
	t.Helper()
	m := modelInfo(t, d, id)
	ref := sunspec.ModelRef{ID: id, Addr: m.Addr, Len: m.Len}
	if _, err := sunspec.WritePoints(t.Context(), rw{c}, ref, values); err != nil {
		t.Fatalf("%s: write model %d: %v", d.ID(), id, err)
	}
}

func TestDefaultMaps(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, testConfig(clk))
	want := map[string]struct {
		label  string
		md     string
		models []uint16
		dkind  kind.Kind
	}{
		"inv1":  {"inverter", "SIM-INV-10K", []uint16{1, 103, 120, 121, 122, 123, 126, 127, 129, 130, 132, 134, 135, 136}, kind.Inverter},
		"inv2":  {"der-inverter", "SIM-DER-8K", []uint16{1, 701, 702, 704, 705, 706, 707, 708, 709, 710, 711}, kind.Inverter},
		"meter": {"meter", "SIM-METER-3P", []uint16{1, 203}, kind.Meter},
		"bat":   {"battery", "SIM-BAT-10", []uint16{1, 124, 713, 802}, kind.Battery},
		"wx":    {"sensor", "SIM-WX", []uint16{1, 308}, kind.Sensor},
	}
	if len(p.Devices()) != len(want) {
		t.Fatalf("%d devices, want %d", len(p.Devices()), len(want))
	}
	addrs := map[string]bool{}
	for _, d := range p.Devices() {
		w := want[d.ID()]
		t.Run(d.ID(), func(t *testing.T) {
			if d.Label() != w.label || d.Kind() != w.dkind || d.Unit() != 1 {
				t.Errorf("label %s kind %s unit %d, want %s %s unit 1", d.Label(), d.Kind(), d.Unit(), w.label, w.dkind)
			}
			if addrs[d.Addr()] {
				t.Errorf("address %s shared", d.Addr())
			}
			addrs[d.Addr()] = true
			c := dial(t, d)

			// Walk the chain as a client would.
			r, err := c.ReadRegisters(40000, 2, mb.HOLDING_REGISTER)
			if err != nil || r[0] != 0x5375 || r[1] != 0x6E53 {
				t.Fatalf("SunS: %04x, %v", r, err)
			}
			var ids []uint16
			addr := uint16(40002)
			for range 50 {
				hdr, err := c.ReadRegisters(addr, 2, mb.HOLDING_REGISTER)
				if err != nil {
					t.Fatalf("model header at %d: %v", addr, err)
				}
				if hdr[0] == 0xFFFF {
					if hdr[1] != 0 {
						t.Errorf("end marker L = %d", hdr[1])
					}
					break
				}
				ids = append(ids, hdr[0])
				if m := sunspec.ModelByID(hdr[0]); m == nil {
					t.Fatalf("unknown model %d at %d", hdr[0], addr)
				}
				addr += 2 + hdr[1]
			}
			if !slices.Equal(ids, w.models) {
				t.Errorf("models %v, want %v", ids, w.models)
			}
			// Nothing past the end, nothing at the other SunSpec bases.
			for _, a := range []uint16{0, 50000, addr + 2} {
				if _, err := c.ReadRegisters(a, 2, mb.HOLDING_REGISTER); !errors.Is(err, mb.ErrIllegalDataAddress) {
					t.Errorf("read at %d: %v, want illegal data address", a, err)
				}
			}

			common := readModel(t, c, d, 1)
			for pt, s := range map[string]string{"Mn": "plantd", "Md": w.md, "Vr": "1.0.0", "SN": "SIM-" + d.ID()} {
				if got := common.String(pt); got != s {
					t.Errorf("%s = %q, want %q", pt, got, s)
				}
			}
			if da := num(t, common, "DA"); da != 1 {
				t.Errorf("DA = %v", da)
			}

			// plantd's own discovery classifies the device.
			dev, err := devices.Discover(t.Context(), rw{c})
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			if dev.Kind != w.dkind || dev.Manufacturer != "plantd" {
				t.Errorf("discovered %s by %q, want %s", dev.Kind, dev.Manufacturer, w.dkind)
			}
		})
	}
}

// TestNotImplementedDefaults checks that unused points are not implemented
// and that implemented accumulators are never 0.
func TestNotImplementedDefaults(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, testConfig(clk))
	cases := []struct {
		dev         string
		model       uint16
		absent, acc []string
	}{
		{"inv1", 103, []string{"StVnd", "TmpTrns", "TmpOt", "EvtVnd1"}, []string{"WH"}},
		{"inv1", 122, []string{"ActVArhQ1"}, []string{"ActWh"}},
		{"inv1", 120, []string{"WHRtg", "MaxChaRte"}, nil},
		{"inv2", 701, []string{"ThrotPct", "TmpAmb", "TotVarhInj"}, nil},
		{"meter", 203, []string{"TotVAhImp", "TotVArhImpQ1"}, []string{"TotWhImp", "TotWhExp", "TotWhImpPhA"}},
		{"bat", 802, []string{"DisChaRte", "StateVnd", "ReqW", "WarrDt"}, nil},
	}
	for _, tc := range cases {
		d := p.Device(tc.dev)
		c := dial(t, d)
		inst := readModel(t, c, d, tc.model)
		for _, n := range tc.absent {
			if implemented(t, inst, n) {
				t.Errorf("%s %d %s is implemented", tc.dev, tc.model, n)
			}
		}
		for _, n := range tc.acc {
			if v := num(t, inst, n); v <= 0 {
				t.Errorf("%s %d %s = %v", tc.dev, tc.model, n, v)
			}
		}
	}
}

func TestWriteRules(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, testConfig(clk))
	inv1 := p.Device("inv1")
	c := dial(t, inv1)
	m103 := modelInfo(t, inv1, 103)
	m123 := modelInfo(t, inv1, 123)
	in123 := readModel(t, c, inv1, 123)
	off := func(name string) uint16 { return m123.Addr + in123.Model.Point(name).Offset }

	cases := []struct {
		name   string
		single bool // function 6
		addr   uint16
		values []uint16
		want   error
	}{
		{"read-only W", false, m103.Addr + 14, []uint16{1}, mb.ErrIllegalDataAddress},
		{"read-only model id", true, m103.Addr, []uint16{103}, mb.ErrIllegalDataAddress},
		{"SunS marker", false, 40000, []uint16{0, 0}, mb.ErrIllegalDataAddress},
		{"outside the map", false, 60000, []uint16{1}, mb.ErrIllegalDataAddress},
		{"span into read-only", false, off("VArPct_Ena"), []uint16{0, 0}, mb.ErrIllegalDataAddress},
		{"enum out of range", true, off("WMaxLim_Ena"), []uint16{7}, mb.ErrIllegalDataValue},
		{"limit above 100 %", true, off("WMaxLimPct"), []uint16{1001}, mb.ErrIllegalDataValue},
		{"limit, function 6", true, off("WMaxLimPct"), []uint16{500}, nil},
		{"timers, function 16", false, off("WMaxLimPct_WinTms"), []uint16{0, 0, 0}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.single {
				err = c.WriteRegister(tc.addr, tc.values[0])
			} else {
				err = c.WriteRegisters(tc.addr, tc.values)
			}
			if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
				t.Fatalf("write %d: %v, want %v", tc.addr, err, tc.want)
			}
			if tc.want == nil {
				got, err := c.ReadRegisters(tc.addr, uint16(len(tc.values)), mb.HOLDING_REGISTER)
				if err != nil || !slices.Equal(got, tc.values) {
					t.Fatalf("read back %v, %v; want %v", got, err, tc.values)
				}
			}
		})
	}
	// WMax (WMax_SF 0) within the 10 kW rating is taken, above it refused,
	// as real inverters bound the setting by WRtg.
	in121 := readModel(t, c, inv1, 121)
	wmax := in121.Addr + in121.Model.Point("WMax").Offset
	if err := c.WriteRegister(wmax, 30000); !errors.Is(err, mb.ErrIllegalDataValue) {
		t.Errorf("121 WMax 30000 W on a 10 kW inverter: %v, want exception 3", err)
	}
	if err := c.WriteRegister(wmax, 7000); err != nil {
		t.Errorf("121 WMax 7000 W on a 10 kW inverter: %v", err)
	}
	if err := c.WriteRegister(wmax, in121.Regs[in121.Model.Point("WMax").Offset]); err != nil {
		t.Errorf("121 WMax back to its rating: %v", err)
	}
	// A block written back as read passes, though it holds an enum that is
	// not implemented (121 ConnPh).
	from, to := in121.Model.Point("WMax").Offset, in121.Model.Point("ConnPh").Offset+1
	if err := c.WriteRegisters(in121.Addr+from, in121.Regs[from:to]); err != nil {
		t.Errorf("write back 121 settings: %v", err)
	}
	// Refused writes left the image alone; accepted ones were logged.
	in123 = readModel(t, c, inv1, 123)
	if v := num(t, in123, "WMaxLim_Ena"); v != 0 {
		t.Errorf("WMaxLim_Ena = %v after refused write", v)
	}
	ws := inv1.Writes()
	if len(ws) != 5 || !slices.Contains(ws[0].Points, "123.WMaxLimPct") || ws[0].Time != summerNoon || !slices.Equal(ws[2].Values, []uint16{7000}) {
		t.Errorf("writes %+v", ws)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
	}{
		{"no devices", func(c *Config) { c.Devices = nil }},
		{"bad kind", func(c *Config) { c.Devices[0].Kind = "toaster" }},
		{"gateway kind", func(c *Config) { c.Devices[0].Kind = kind.Gateway }},
		{"DER meter", func(c *Config) { c.Devices[2].DER = true }},
		{"duplicate id", func(c *Config) { c.Devices[1].ID = c.Devices[0].ID }},
		{"duplicate unit on an endpoint", func(c *Config) {
			c.Devices[0].Endpoint, c.Devices[1].Endpoint = "gw", "gw"
		}},
		{"two ports for one endpoint", func(c *Config) {
			c.Devices[0].Endpoint, c.Devices[1].Endpoint = "gw", "gw"
			c.Devices[1].Unit = 2
			c.Devices[0].Port, c.Devices[1].Port = 1502, 1503
		}},
		{"latitude", func(c *Config) { c.Latitude = 91 }},
		{"time zone", func(c *Config) { c.TimeZone = "Mars/Olympus" }},
		{"speed", func(c *Config) { c.Speed = -1 }},
		{"rating", func(c *Config) { c.Devices[0].RatedW = 1e6 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			if _, err := New(cfg, nil); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
}

func TestSharedEndpoint(t *testing.T) {
	clk := newClock(summerNoon)
	cfg := testConfig(clk)
	cfg.Devices = []DeviceConfig{
		{ID: "inv1", Kind: kind.Inverter, Unit: 1, Endpoint: "gw"},
		{ID: "meter", Kind: kind.Meter, Unit: 240, Endpoint: "gw"},
		{ID: "wx", Kind: kind.Sensor},
	}
	p := startPlant(t, cfg)
	inv, met := p.Device("inv1"), p.Device("meter")
	if inv.Addr() != met.Addr() || inv.Addr() == p.Device("wx").Addr() {
		t.Fatalf("addresses %s %s %s", inv.Addr(), met.Addr(), p.Device("wx").Addr())
	}
	c := dial(t, inv)
	for _, d := range []*Device{inv, met} {
		if err := c.SetUnitId(d.Unit()); err != nil {
			t.Fatal(err)
		}
		if got := readModel(t, c, d, 1).String("Md"); got != modelName(d.cfg) {
			t.Errorf("unit %d: Md %q", d.Unit(), got)
		}
	}
	if err := c.SetUnitId(7); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadRegisters(40000, 2, mb.HOLDING_REGISTER); !errors.Is(err, mb.ErrGWTargetFailedToRespond) {
		t.Errorf("unknown unit: %v, want exception 0x0B", err)
	}
	// One dead device behind the gateway does not take the others down.
	met.SetFault(Fault{Kind: FaultOffline})
	_ = c.SetUnitId(240)
	if _, err := c.ReadRegisters(40000, 2, mb.HOLDING_REGISTER); !errors.Is(err, mb.ErrGWTargetFailedToRespond) {
		t.Errorf("offline unit: %v, want exception 0x0B", err)
	}
	_ = c.SetUnitId(1)
	if _, err := c.ReadRegisters(40000, 2, mb.HOLDING_REGISTER); err != nil {
		t.Errorf("live unit: %v", err)
	}
}
