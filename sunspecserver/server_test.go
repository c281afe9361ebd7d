package sunspecserver

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/netip"
	"testing"
	"time"

	"plantd/devices"

	"plantd/devices/channels"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// loopback allows the test's masters.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// reading is a channel value of a test device.
type reading = plant.Reading

// testLive is a real live state of plant p (two inverters, a grid meter,
// a battery) holding the readings given, as the poller's samples of
// template devices bring them.
func testLive(t testing.TB, vals map[string][]reading) *plant.Live {
	t.Helper()
	infos := []plant.DeviceInfo{
		{ID: "inv1", PlantID: "p", Kind: kind.Inverter},
		{ID: "inv2", PlantID: "p", Kind: kind.Inverter},
		{ID: "meter", PlantID: "p", Kind: kind.Meter},
		{ID: "bat", PlantID: "p", Kind: kind.Battery},
	}
	live := plant.NewLive([]plant.Plant{{ID: "p", Name: "P", Location: time.UTC}}, infos, time.Now)
	for _, in := range infos {
		info := &sunspec.Device{Template: "test", Kind: in.Kind}
		if in.Kind == kind.Battery {
			info.RatedPowerW = 5000
		}
		s := plant.Sample{Device: in.ID, Readings: append([]reading{}, vals[in.ID]...), State: plant.StateOnline}
		channels.NewDevice(info).Identify(&s)
		live.Apply(s)
	}
	return live
}

// demoReadings are the readings of a plant at noon: 6 kW and 4 kW of PV,
// 3 kW fed in, a battery charging at 1 kW at 60 %.
func demoReadings() map[string][]reading {
	inv := func(w, a, v float64, phases bool) []reading {
		r := []reading{{Channel: plant.ActivePower, Value: w}, {Channel: plant.PVGeneration, Value: w},
			{Channel: plant.ApparentPower, Value: w}, {Channel: plant.ReactivePower, Value: 0},
			{Channel: plant.PVGenerationTotal, Value: 1e6 * w / 1000}, {Channel: plant.GridFrequency, Value: 50.01},
			{Channel: plant.VoltagePhaseA, Value: v}, {Channel: plant.VoltagePhaseB, Value: v}, {Channel: plant.VoltagePhaseC, Value: v}}
		if phases {
			r = append(r, reading{Channel: plant.CurrentPhaseA, Value: a}, reading{Channel: plant.CurrentPhaseB, Value: a},
				reading{Channel: plant.CurrentPhaseC, Value: a})
		}
		return r
	}
	return map[string][]reading{
		"inv1": inv(6000, 8.7, 230, true),
		"inv2": inv(4000, 5.8, 232, true),
		"meter": {{Channel: plant.GridFeedIn, Value: 3000}, {Channel: plant.GridConsumption, Value: 0},
			{Channel: plant.GridFeedInTotal, Value: 1234567}, {Channel: plant.GridConsumptionTotal, Value: 765432},
			{Channel: plant.GridFrequency, Value: 50.02}, {Channel: plant.CurrentPhaseA, Value: -4.3},
			{Channel: plant.CurrentPhaseB, Value: -4.4}, {Channel: plant.CurrentPhaseC, Value: -4.5},
			{Channel: plant.VoltagePhaseA, Value: 231}, {Channel: plant.VoltagePhaseB, Value: 232}, {Channel: plant.VoltagePhaseC, Value: 233}},
		"bat": {{Channel: plant.BatteryCharging, Value: 1000}, {Channel: plant.BatteryDischarging, Value: 0},
			{Channel: plant.BatteryStateOfCharge, Value: 60}, {Channel: plant.BatteryVoltage, Value: 51.2}},
	}
}

// serve runs a server of plant p on a loopback port until the test ends
// and returns a client of it (unit 1).
func serve(t testing.TB, cfg Config, live Live, grid Grid) (*Server, *modbus.Client) {
	t.Helper()
	s, addr := serveAt(t, cfg, live, grid)
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	return s, pool.Endpoint(modbus.EndpointConfig{Address: addr}).Unit(1, 2*time.Second)
}

// serveAt runs a server of plant p on a loopback port until the test
// ends and returns its address.
func serveAt(t testing.TB, cfg Config, live Live, grid Grid) (*Server, string) {
	t.Helper()
	cfg.PlantID = "p"
	s, err := New(cfg, live, grid, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s, proctest.ServeTCP(t, s.Serve)
}

// models discovers the server's map and reads every model.
func models(t testing.TB, c *modbus.Client) map[uint16]*sunspec.Instance {
	t.Helper()
	dev, err := devices.Discover(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint16]*sunspec.Instance{}
	for _, r := range dev.Models {
		if r.ID == modelHolder {
			regs, err := c.ReadHoldingRegisters(context.Background(), r.Addr, r.Len+2, nil)
			if err != nil {
				t.Fatalf("holder model: %v", err)
			}
			if out[r.ID], err = sunspec.NewInstance(HolderModel(), r.Addr, regs); err != nil {
				t.Fatal(err)
			}
			continue
		}
		inst, err := sunspec.ReadModel(context.Background(), c, r)
		if err != nil {
			t.Fatalf("model %d: %v", r.ID, err)
		}
		out[r.ID] = inst
	}
	return out
}

func TestMap(t *testing.T) {
	_, c := serve(t, Config{GatewayID: "gw-1", Version: "1.2.3", UnitID: 1}, testLive(t, demoReadings()), nil)
	m := models(t, c)
	for _, id := range []uint16{1, 103, 203, 124, 123, 704, modelHolder} {
		if m[id] == nil {
			t.Fatalf("no model %d in %v", id, m)
		}
	}
	if c := m[1]; c.String("Mn") != "plantd" || c.String("SN") != "gw-1" || c.String("Vr") != "1.2.3" || c.String("Opt") != "p" {
		t.Errorf("model 1: %q %q %q %q", c.String("Mn"), c.String("SN"), c.String("Vr"), c.String("Opt"))
	}
	for _, tc := range []struct {
		model uint16
		point string
		want  float64
		tol   float64
	}{
		{103, "W", 10000, 0},
		{103, "VA", 10000, 0},
		{103, "VAr", 0, 0},
		{103, "PF", 100, 0},
		{103, "WH", 10e6, 0},
		{103, "AphA", 14.5, 0.005},
		{103, "A", 43.5, 0.005},
		{103, "PhVphB", 231, 0.05},
		{103, "Hz", 50.01, 0.005},
		{103, "St", 4, 0},
		{203, "W", -3000, 0},
		{203, "TotWhExp", 1234567, 0},
		{203, "TotWhImp", 765432, 0},
		{203, "AphC", -4.5, 0.005},
		{203, "PhV", 232, 0.05},
		{124, "ChaState", 60, 0.05},
		{124, "WChaMax", 5000, 0},
		{124, "InBatV", 51.2, 0.05},
		{124, "ChaSt", 4, 0},
		{123, "WMaxLimPct", 100, 0},
		{123, "WMaxLim_Ena", 0, 0},
		{704, "WMaxLimPctEna", 0, 0},
		{modelHolder, "Role", 0, 0},
		{modelHolder, "Own", 0, 0},
	} {
		v, err := m[tc.model].Float(tc.point)
		if err != nil || math.Abs(v-tc.want) > tc.tol {
			t.Errorf("%d.%s = %v %v, want %v", tc.model, tc.point, v, err, tc.want)
		}
	}
	// Points no device gives are not implemented, never 0.
	for _, p := range [][2]any{{uint16(103), "DCW"}, {uint16(103), "TmpCab"}, {uint16(203), "VA"}} {
		if v, err := m[p[0].(uint16)].Value(p[1].(string)); err != nil || v.OK {
			t.Errorf("%v = %+v %v, want not implemented", p, v, err)
		}
	}
}

// TestMapPartialPhasesAndScale: a phase current one inverter lacks is not
// implemented in the totals; a plant past 32 kW gets a coarser W_SF.
func TestMapPartialPhasesAndScale(t *testing.T) {
	vals := demoReadings()
	var inv2 []reading
	for _, r := range vals["inv2"] {
		switch r.Channel {
		case plant.CurrentPhaseA:
		case plant.PVGeneration, plant.ActivePower:
			r.Value = 480000
			inv2 = append(inv2, r)
		default:
			inv2 = append(inv2, r)
		}
	}
	vals["inv2"] = inv2
	_, c := serve(t, Config{}, testLive(t, vals), nil)
	inv := models(t, c)[103]
	if v, _ := inv.Value("AphA"); v.OK {
		t.Errorf("AphA = %v with inv2 lacking it", v.Float)
	}
	if v, err := inv.Float("AphB"); err != nil || math.Abs(v-14.5) > 0.005 {
		t.Errorf("AphB = %v %v", v, err)
	}
	w, err := inv.Float("W")
	sf, _ := inv.Value("W_SF")
	if err != nil || w != 486000 || int16(sf.Raw) != 2 {
		t.Errorf("W = %v (W_SF %d) %v, want 486000 at W_SF 2", w, int16(sf.Raw), err)
	}
}

// TestRefusedWrites: writes answer exceptions without reaching grid
// control (Grid is nil: reaching it would panic).
func TestRefusedWrites(t *testing.T) {
	live := testLive(t, demoReadings())
	_, off := serve(t, Config{}, live, nil)
	_, on := serve(t, Config{Writes: true, Allow: loopback}, live, nil)
	m := models(t, on)
	addr := func(model uint16, point string) uint16 {
		inst := m[model]
		return inst.Addr + inst.Model.Group.Points[inst.Model.Group.PointIndex(point)].Offset
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		c      *modbus.Client
		addr   uint16
		values []uint16
		code   byte
	}{
		{"writes off", off, addr(123, "WMaxLimPct"), []uint16{30}, modbus.ExceptionIllegalFunction},
		{"read-only W", on, addr(103, "W"), []uint16{1}, modbus.ExceptionIllegalDataAddress},
		{"the SunS marker", on, Base, []uint16{0}, modbus.ExceptionIllegalDataAddress},
		{"below the map", on, Base - 1, []uint16{0}, modbus.ExceptionIllegalDataAddress},
		{"WMaxLimPct 101", on, addr(123, "WMaxLimPct"), []uint16{101}, modbus.ExceptionIllegalDataValue},
		{"WMaxLim_Ena 3", on, addr(123, "WMaxLim_Ena"), []uint16{3}, modbus.ExceptionIllegalDataValue},
		{"704 WMaxLimPct not implemented", on, addr(704, "WMaxLimPct"), []uint16{0xFFFF}, modbus.ExceptionIllegalDataValue},
	} {
		err := tc.c.WriteRegisters(ctx, tc.addr, tc.values)
		var ex *modbus.ExceptionError
		if !errors.As(err, &ex) || ex.Code != tc.code {
			t.Errorf("%s: %v, want exception %d", tc.name, err, tc.code)
		}
	}
	// Nothing changed.
	if v, err := models(t, on)[123].Float("WMaxLimPct"); err != nil || v != 100 {
		t.Errorf("WMaxLimPct = %v %v after refused writes", v, err)
	}
	for _, f := range []func() error{
		func() error { _, err := on.ReadInputRegisters(ctx, Base, 2, nil); return err },
		func() error { _, err := on.ReadCoils(ctx, 0, 1, nil); return err },
	} {
		var ex *modbus.ExceptionError
		if err := f(); !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalFunction {
			t.Errorf("%v, want exception 1", err)
		}
	}
}
