package poller_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/devices/template"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestTemplateDevices polls one simulated device of each of three
// templates (a meter on input registers, a hybrid inverter and a battery
// on holding registers) into a plant.Live and reads the channels back:
// they are the simulator's values, with the template's signs and units.
func TestTemplateDevices(t *testing.T) {
	noon := time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)
	cfg := sim.DefaultConfig()
	cfg.Now = func() time.Time { return noon }
	cfg.Start = noon
	cfg.ClearSky = true
	for _, name := range []string{"sdm630", "sun2000", "e3dc"} {
		cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: name, Template: name, Unit: 2})
	}
	p := simtest.Start(t, cfg)
	var infos []plant.DeviceInfo
	var cfgs []poller.DeviceConfig
	for _, name := range []string{"sdm630", "sun2000", "e3dc"} {
		d := simtest.Device(t, p, name)
		infos = append(infos, plant.DeviceInfo{ID: name, PlantID: "p"})
		cfgs = append(cfgs, poller.DeviceConfig{ID: name, Address: d.Addr(), Unit: d.Unit(), Interval: interval, Timeout: time.Second, Template: name})
	}
	live := plant.NewLive([]plant.Plant{{ID: "p"}}, infos, nil)
	runPoller(t, cfgs, func(s plant.Sample) { live.Apply(s) })

	tests := []struct {
		device  string
		kind    kind.Kind
		channel plant.Channel
		point   string  // the template point feeding it
		sign    float64 // +1: the point's value, -1: its negation
		split   int     // 0 the value, +1 max(0, v), -1 max(0, −v)
	}{
		{"sdm630", kind.Meter, plant.ActivePower, "totalPower", 1, 0},
		{"sdm630", kind.Meter, plant.GridFeedIn, "totalPower", 1, -1},
		{"sdm630", kind.Meter, plant.GridConsumption, "totalPower", 1, 1},
		{"sdm630", kind.Meter, plant.VoltagePhaseB, "voltageL2", 1, 0},
		{"sdm630", kind.Meter, plant.GridFrequency, "frequency", 1, 0},
		{"sdm630", kind.Meter, plant.GridFeedInTotal, "exportEnergy", 1, 0},
		{"sun2000", kind.Inverter, plant.ActivePower, "activePower", 1, 0},
		{"sun2000", kind.Inverter, plant.PVGeneration, "inputPower", 1, 1},
		{"sun2000", kind.Inverter, plant.IsolationResistance, "insulation", 1, 0},
		{"sun2000", kind.Inverter, plant.BatteryCharging, "batteryPower", 1, -1},
		{"sun2000", kind.Inverter, plant.PVGenerationTotal, "energyYield", 1, 0},
		{"e3dc", kind.Battery, plant.ActivePower, "batteryPower", 1, 0},
		{"e3dc", kind.Battery, plant.BatteryStateOfCharge, "stateOfCharge", 1, 0},
	}
	for _, tt := range tests {
		var dl plant.DeviceLive
		proctest.WaitFor(t, tt.device+" online with readings", 10*time.Second, func() bool {
			dl, _ = live.Device(tt.device)
			return dl.Comm.State == plant.StateOnline && len(dl.Readings) > 0
		})
		values, _, _ := simtest.Device(t, p, tt.device).TemplateValues()
		v := values[tt.point] * tt.sign
		switch tt.split {
		case 1:
			v = max(0, v)
		case -1:
			v = max(0, -v)
		}
		got, ok := dl.Value(tt.channel)
		if !ok || got != v {
			t.Errorf("%s %s = %v, %v; want %v (point %s)", tt.device, tt.channel, got, ok, v, tt.point)
		}
		if dl.Info.Kind != tt.kind || dl.Nameplate == nil || dl.Nameplate.Template != tt.device {
			t.Errorf("%s: kind %s, nameplate %+v", tt.device, dl.Info.Kind, dl.Nameplate)
		}
	}
	dl, _ := live.Device("sun2000")
	if dl.Nameplate.Model != "SUN2000-SIM" || dl.Nameplate.Serial != "SIM-sun2000" || dl.Nameplate.RatedPowerW != 10000 {
		t.Errorf("sun2000 nameplate %+v", dl.Nameplate)
	}
	if in := dl.Inputs(plant.DCVoltageInput); len(in) != 2 || in[0].Index != 1 || in[1].Index != 2 {
		t.Errorf("sun2000 dcVoltageInput = %+v, want inputs 1 and 2", in)
	}
}

// TestTemplateMismatch polls a device that answers but is not what its
// template says: every poll fails with ErrNotIdentified.
func TestTemplateMismatch(t *testing.T) {
	addr := simtest.PlainModbus(t) // zeros on every holding register
	var c collector
	runPoller(t, []poller.DeviceConfig{{ID: "x", Address: addr, Unit: 1, Interval: interval, Timeout: time.Second, Template: "e3dc"}}, c.sink)
	proctest.WaitFor(t, "a failed poll", 10*time.Second, func() bool {
		s, ok := c.last("x")
		return ok && s.Err != nil
	})
	s, _ := c.last("x")
	if !errors.Is(s.Err, template.ErrNotIdentified) || s.Readings != nil || s.Nameplate != nil {
		t.Errorf("sample err %v, readings %v, nameplate %v; want ErrNotIdentified and nothing else", s.Err, s.Readings, s.Nameplate)
	}
}

func TestUnknownTemplate(t *testing.T) {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	_, err := poller.New([]poller.DeviceConfig{{ID: "x", Address: "127.0.0.1:1", Template: "sdm999"}}, pool, func(plant.Sample) {}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown template "sdm999"`) {
		t.Errorf("New = %v, want an unknown template", err)
	}
}
