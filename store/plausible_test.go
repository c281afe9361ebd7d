package store

import (
	"errors"
	"math"
	"testing"
	"time"

	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestImplausibleValuesNeverStored is the report of issue 11: a classic
// inverter answering model 103 W=32767 with W_SF=10 (3.3e14 W), Hz=65000
// with Hz_SF=10 and no energy counter, polled over Modbus for 20 s. The
// live state, the raw samples and the rollups must not hold a value beyond
// the device's nameplate (10 kW) or physics, and the plant's PV energy of
// those 20 s stays within 10 kW × 20 s.
func TestImplausibleValuesNeverStored(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, sim.DefaultTimeZone)
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, loc)
	r := startSim(t, start)
	inv := simtest.Device(t, r.p, "inv1")
	for _, o := range []struct {
		model uint16
		point string
		raw   uint64
	}{{103, "W", 32767}, {103, "W_SF", 10}, {103, "Hz", 65000}, {103, "Hz_SF", 10}} {
		if err := inv.Override(o.model, o.point, o.raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		model uint16
		point string
	}{{103, "WH"}, {122, "ActWh"}} {
		if err := inv.OverrideNotImplemented(p.model, p.point); err != nil {
			t.Fatal(err)
		}
	}
	s := openTest(t, Config{Plants: []PlantInfo{{ID: "demo", Location: loc}}})
	stop := runStore(t, s)
	ctx := t.Context()
	const step = 5 * time.Second
	for x := start; !x.After(start.Add(20 * time.Second)); x = x.Add(step) {
		r.poll(ctx, t, x, s)
	}
	dl, _ := r.live.Device("inv1")
	for _, c := range []plant.Channel{plant.ActivePower, plant.PVGeneration, plant.GridFrequency} {
		if v, ok := dl.Value(c); ok {
			t.Errorf("live %s = %g, want it dropped", c, v)
		}
	}
	if v, ok := dl.Value(plant.VoltagePhaseA); !ok || v < 200 || v > 260 {
		t.Errorf("live voltagePhaseA = %g, %v: the plausible values of the device must stay", v, ok)
	}
	stop()

	const ratedW = 10000
	maxWh := ratedW * 1.25 * (20 * time.Second).Hours() // the rating's margin
	total := func(q plant.SetQuery) map[string]float64 {
		t.Helper()
		q.WithTotal = true
		res, err := s.QuerySet(ctx, q)
		if errors.Is(err, ErrUnsupportedSet) {
			return nil // nothing of it was ever stored
		}
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if res.Total == nil {
			return nil
		}
		return res.Total.Values
	}
	for _, p := range []plant.Period{plant.PeriodDay, plant.PeriodMonth, plant.PeriodYear, plant.PeriodTotal} {
		dev := total(plant.SetQuery{DeviceID: "inv1", SetType: plant.SetEnergyAndPowerPv, Period: p, Date: start})
		bal := total(plant.SetQuery{PlantID: "demo", SetType: plant.SetEnergyBalance, Period: p, Date: start})
		pvAll := 0.0
		for _, id := range []string{"inv2"} {
			pvAll += total(plant.SetQuery{DeviceID: id, SetType: plant.SetEnergyAndPowerPv, Period: p, Date: start})["pvGeneration"]
		}
		t.Logf("%s: inv1 pvGeneration %v Wh (absent: nothing stored), plant pvGeneration %.1f Wh (inv2 %.1f Wh)",
			p, dev["pvGeneration"], bal["pvGeneration"], pvAll)
		if v := dev["pvGeneration"]; v > maxWh || math.IsNaN(v) {
			t.Errorf("%s: inv1 pvGeneration %g Wh, at most %g possible", p, v, maxWh)
		}
		if v := bal["pvGeneration"]; v > pvAll+maxWh || math.IsNaN(v) {
			t.Errorf("%s: plant pvGeneration %g Wh, at most %g possible", p, v, pvAll+maxWh)
		}
	}
	res, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: "inv1", SetType: plant.SetPowerAc, Period: plant.PeriodDay, Date: start, WithTotal: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range append(res.Rows, *res.Total) {
		for f, v := range row.Values {
			if (f == "activePower" && math.Abs(v) > ratedW*1.25) || (f == "gridFrequency" && (v < 40 || v > 70)) {
				t.Errorf("stored PowerAc %s = %g at %v", f, v, row.Start)
			}
		}
	}
}
