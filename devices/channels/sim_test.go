package channels

import (
	"context"
	"math"
	. "plantd/plant"
	"testing"
	"time"

	"plantd/devices"

	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// simDevice is one simulated device with its client and read plan.
type simDevice struct {
	dev    *sim.Device
	client *modbus.Client
	info   *sunspec.Device
	plan   *devices.ReadPlan
}

// simPlant starts the demo plant at a fixed clock (the simulated plant
// stands still), discovers its five devices over Modbus TCP and builds a
// Live cache for them.
func simPlant(t *testing.T, at time.Time) (*sim.Plant, []*simDevice, *Live) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Now = func() time.Time { return at }
	p := simtest.Start(t, cfg)
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })

	plants := []Plant{{ID: "demo", Name: "Demo plant", Location: p.Location()}}
	var infos []DeviceInfo
	var sds []*simDevice
	for _, d := range p.Devices() {
		c := pool.Endpoint(modbus.EndpointConfig{Address: d.Addr()}).Unit(d.Unit(), time.Second)
		info, err := devices.Discover(t.Context(), c)
		if err != nil {
			t.Fatalf("discover %s: %v", d.ID(), err)
		}
		kind := d.Kind()
		if string(info.Kind) != string(kind) {
			t.Errorf("%s: discovered as %s, configured as %s", d.ID(), info.Kind, kind)
		}
		plan, err := devices.NewReadPlan(info, info.PollModels())
		if err != nil {
			t.Fatalf("plan %s: %v", d.ID(), err)
		}
		sds = append(sds, &simDevice{dev: d, client: c, info: info, plan: plan})
		infos = append(infos, DeviceInfo{ID: d.ID(), PlantID: "demo", Name: d.ID(), Kind: kind})
	}
	return p, sds, NewLive(plants, infos, func() time.Time { return at })
}

// poll reads a device once and returns the Sample a poller would emit.
func (sd *simDevice) poll(ctx context.Context, at time.Time) Sample {
	models, err := sd.plan.Read(ctx, sd.client)
	s := NewDevice(sd.info).Sample(sd.dev.ID(), at, models)
	if err != nil {
		s.Readings, s.Registers, s.Status = nil, nil, DeviceStatus{}
		s.Err, s.State = err, StateOffline
	}
	return s
}

// TestSimPlant polls the five simulated devices at a summer noon and at
// night (fixed clocks), feeds the Samples to Live and checks units, signs,
// the balance identity and the simulator's own power balance.
func TestSimPlant(t *testing.T) {
	tests := []struct {
		name  string
		at    time.Time
		night bool
	}{
		{"noon", time.Date(2025, 6, 21, 11, 15, 0, 0, time.UTC), false},
		{"night", time.Date(2025, 6, 21, 23, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sds, l := simPlant(t, tt.at)
			for _, sd := range sds {
				s := sd.poll(t.Context(), tt.at)
				if s.Err != nil {
					t.Fatalf("read %s: %v", sd.dev.ID(), s.Err)
				}
				l.Apply(s)
			}
			truth := p.Balance()

			for _, sd := range sds {
				d, ok := l.Device(sd.dev.ID())
				if !ok {
					t.Fatalf("%s unknown", sd.dev.ID())
				}
				if d.Comm.Status != CommOk || !d.LastUpdate.Equal(tt.at) {
					t.Errorf("%s: comm %s, update %v", d.Info.ID, d.Comm.Status, d.LastUpdate)
				}
				checkSimDevice(t, sd, d, tt.night)
			}

			b, err := l.EnergyBalance("demo")
			if err != nil {
				t.Fatal(err)
			}
			if b.Error != nil {
				t.Fatalf("balance error %+v", b.Error)
			}
			for name, f := range map[string]*float64{"pvGeneration": b.PVGenerationW, "gridFeedIn": b.GridFeedInW,
				"gridConsumption": b.GridConsumptionW, "batteryCharging": b.BatteryChargingW,
				"batteryDischarging": b.BatteryDischargingW, "batteryStateOfCharge": b.BatteryStateOfChargePct,
				"totalConsumption": b.TotalConsumptionW, "selfSupply": b.SelfSupplyW} {
				if f == nil {
					t.Errorf("balance lacks %s", name)
				} else if *f < 0 {
					t.Errorf("balance %s = %v < 0", name, *f)
				}
			}
			if b.TotalConsumptionW == nil {
				t.FailNow()
			}
			checkIdentity(t, b)
			t.Logf("sim: load %.1f PV %.1f battery %.1f grid %.1f | live: PV %.0f grid +%.0f/-%.0f battery +%.0f/-%.0f SoC %.1f consumption %.0f",
				truth.LoadW, truth.PVW, truth.BatteryW, truth.GridW, *b.PVGenerationW, *b.GridConsumptionW, *b.GridFeedInW,
				*b.BatteryDischargingW, *b.BatteryChargingW, *b.BatteryStateOfChargePct, *b.TotalConsumptionW)

			// Signs against the simulator: meter W > 0 = import = load −
			// PV − battery; 802 W > 0 = discharging.
			near := func(name string, got, want, tol float64) {
				t.Helper()
				if math.Abs(got-want) > tol {
					t.Errorf("%s = %.1f, simulator says %.1f", name, got, want)
				}
			}
			near("gridConsumption − gridFeedIn", *b.GridConsumptionW-*b.GridFeedInW, truth.GridW, 1)
			near("batteryDischarging − batteryCharging", *b.BatteryDischargingW-*b.BatteryChargingW, truth.BatteryW, 1)
			near("pvGeneration", *b.PVGenerationW, truth.PVW, 2)
			near("totalConsumption", *b.TotalConsumptionW, truth.LoadW, 4)
			if tt.night {
				if *b.PVGenerationW != 0 {
					t.Errorf("night PV %v", *b.PVGenerationW)
				}
			} else if *b.PVGenerationW < 1000 {
				t.Errorf("summer noon PV only %v W", *b.PVGenerationW)
			}

			mix, err := l.EnergyMix("demo")
			if err != nil || mix.GridConsumptionRate == nil || mix.TotalConsumptionW == nil {
				t.Fatalf("mix %+v, %v", mix, err)
			}
			sum := deref0(mix.PVConsumptionRate) + deref0(mix.BatteryConsumptionRate) + deref0(mix.GridConsumptionRate)
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("mix rates sum to %v", sum)
			}
		})
	}
}

// checkSimDevice checks one device's channels for units and signs.
func checkSimDevice(t *testing.T, sd *simDevice, d DeviceLive, night bool) {
	t.Helper()
	get := func(c Channel) (float64, bool) {
		v, ok := d.Value(c)
		if ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("%s %s = %v", d.Info.ID, c, v)
		}
		return v, ok
	}
	must := func(c Channel, lo, hi float64) {
		t.Helper()
		v, ok := get(c)
		switch {
		case !ok:
			t.Errorf("%s: %s absent", d.Info.ID, c)
		case v < lo || v > hi:
			t.Errorf("%s: %s = %v %s, want %v..%v", d.Info.ID, c, v, c.Unit(), lo, hi)
		}
	}
	state := sd.dev.State()
	switch d.Info.Kind {
	case kind.Inverter:
		rated := sd.info.RatedPowerW
		if rated <= 0 {
			t.Errorf("%s: no rated power", d.Info.ID)
		}
		if night {
			if v, ok := get(PVGeneration); ok && v != 0 {
				t.Errorf("%s: night pvGeneration %v", d.Info.ID, v)
			}
			if d.Health != HealthOff {
				t.Errorf("%s: night health %s (%s), want Off", d.Info.ID, d.Health, d.HealthReason)
			}
			break
		}
		must(ActivePower, 0, rated)
		must(PVGeneration, 0, rated)
		must(PVGenerationTotal, 1, math.Inf(1))
		must(GridFrequency, 49.5, 50.5)
		must(VoltagePhaseA, 200, 260)
		must(DisplacementPowerFactor, -1, 1)
		if w, _ := get(ActivePower); math.Abs(w-state.PowerW) > 1 {
			t.Errorf("%s: activePower %v, simulator %v", d.Info.ID, w, state.PowerW)
		}
		if d.Health != HealthOk {
			t.Errorf("%s: noon health %s (%s)", d.Info.ID, d.Health, d.HealthReason)
		}
	case kind.Meter:
		must(GridFrequency, 49.5, 50.5)
		must(VoltagePhaseA, 200, 260)
		must(GridConsumptionTotal, 1, math.Inf(1))
		must(GridFeedInTotal, 1, math.Inf(1))
		w, _ := get(ActivePower)
		cons, _ := get(GridConsumption)
		feed, _ := get(GridFeedIn)
		if math.Abs(w-state.PowerW) > 1 || cons < 0 || feed < 0 || cons > 0 && feed > 0 || math.Abs(cons-feed-w) > 1e-9 {
			t.Errorf("meter: W %v (simulator %v), consumption %v, feed-in %v", w, state.PowerW, cons, feed)
		}
		if d.Health != HealthOk {
			t.Errorf("meter health %s (%s)", d.Health, d.HealthReason)
		}
	case kind.Battery:
		must(BatteryStateOfCharge, 0, 100)
		must(BatteryCharging, 0, sd.info.RatedPowerW)
		must(BatteryDischarging, 0, sd.info.RatedPowerW)
		cha, _ := get(BatteryCharging)
		dis, _ := get(BatteryDischarging)
		if math.Abs(dis-cha-state.PowerW) > 1 {
			t.Errorf("battery: discharging %v − charging %v, simulator %v (positive = discharging)", dis, cha, state.PowerW)
		}
		if soc, _ := get(BatteryStateOfCharge); math.Abs(soc-state.SoCPct) > 0.5 {
			t.Errorf("battery SoC %v, simulator %v", soc, state.SoCPct)
		}
		if d.Health != HealthOk && d.Health != HealthWarning {
			t.Errorf("battery health %s (%s)", d.Health, d.HealthReason)
		}
	case kind.Sensor:
		must(ExternalInsolation, 0, 1400)
		must(AmbientTemperature, -30, 50)
		must(ModuleTemperature, -30, 90)
		must(WindSpeed, 0, 40)
		if g, _ := get(ExternalInsolation); night && g != 0 || !night && g < 100 {
			t.Errorf("irradiance %v W/m² at night=%v", g, night)
		}
	}
}

// TestSimFaults drives faults of the simulator through Live: an offline
// meter makes the balance's error name it and drops the grid terms; an
// inverter reporting nothing while it says it produces is named NoValue.
func TestSimFaults(t *testing.T) {
	at := time.Date(2025, 6, 21, 11, 15, 0, 0, time.UTC)
	p, sds, l := simPlant(t, at)
	for _, sd := range sds {
		l.Apply(sd.poll(t.Context(), at))
	}
	if b, _ := l.EnergyBalance("demo"); b.Error != nil || b.GridFeedInW == nil {
		t.Fatalf("healthy plant: %+v", b)
	}

	byID := map[string]*simDevice{}
	for _, sd := range sds {
		byID[sd.dev.ID()] = sd
	}

	// The meter goes offline: the poll fails.
	p.Device("meter").SetFault(sim.Fault{Kind: sim.FaultOffline})
	s := byID["meter"].poll(t.Context(), at.Add(time.Second))
	if s.Err == nil {
		t.Fatal("poll of an offline meter succeeded")
	}
	l.Apply(s)
	b, err := l.EnergyBalance("demo")
	if err != nil {
		t.Fatal(err)
	}
	if b.Error == nil || len(b.Error.Devices) != 1 || b.Error.Devices[0].DeviceID != "meter" {
		t.Fatalf("balance error %+v, want the meter named", b.Error)
	}
	if r := b.Error.Devices[0].Reason; r != IssueUnreachable && r != IssueTimedOut {
		t.Errorf("meter reason %s", r)
	}
	if b.GridFeedInW != nil || b.GridConsumptionW != nil || b.TotalConsumptionW != nil {
		t.Errorf("grid terms without a meter: %+v", b)
	}
	if b.PVGenerationW == nil || b.BatteryStateOfChargePct == nil {
		t.Errorf("PV and battery lost with the meter: %+v", b)
	}
	m, _ := l.Device("meter")
	if m.Health != HealthNotAvailable || m.Comm.LastError == nil || m.Comm.SuccessRate != 0.5 {
		t.Errorf("meter: health %s, comm %+v", m.Health, m.Comm)
	}
	p.Device("meter").SetFault(sim.Fault{})

	// inv2 reports every measured value as not implemented, still running.
	p.Device("inv2").SetFault(sim.Fault{Kind: sim.FaultNotImplemented})
	s = byID["inv2"].poll(t.Context(), at.Add(2*time.Second))
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	l.Apply(s)
	if d, _ := l.Device("inv2"); hasAny(d, ActivePower, PVGeneration) {
		t.Errorf("inv2 still has power values: %v", d.Readings)
	}
	b, _ = l.EnergyBalance("demo")
	var reasons = map[string]IssueReason{}
	if b.Error != nil {
		for _, is := range b.Error.Devices {
			reasons[is.DeviceID] = is.Reason
		}
	}
	if reasons["inv2"] != IssueNoValue {
		t.Errorf("issues %v, want inv2 NoValue", reasons)
	}
}

func hasAny(d DeviceLive, cs ...Channel) bool {
	for _, c := range cs {
		if _, ok := d.Value(c); ok {
			return true
		}
	}
	return false
}
