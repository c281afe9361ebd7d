package devices_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"plantd/devices"
	"plantd/devices/sim"
	"plantd/modbus"
)

// startPlant runs the simulated demo plant for one test.
func startPlant(t *testing.T, cfg sim.Config) *sim.Plant {
	t.Helper()
	p, err := sim.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func simDevice(t *testing.T, p *sim.Plant, id string) *sim.Device {
	t.Helper()
	for _, d := range p.Devices() {
		if d.ID() == id {
			return d
		}
	}
	t.Fatalf("no simulated device %q", id)
	return nil
}

func newClient(t *testing.T, pool *modbus.Pool, d *sim.Device, timeout time.Duration) *modbus.Client {
	t.Helper()
	return pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: timeout, BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}).Unit(d.Unit(), timeout)
}

func newPool(t *testing.T) *modbus.Pool {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestDiscoverSimulatedPlant(t *testing.T) {
	p := startPlant(t, sim.DefaultConfig())
	pool := newPool(t)
	tests := []struct {
		id       string
		kind     devices.Kind
		platform devices.Platform
		models   []uint16
		ratedW   float64
		caps     []devices.Capability
	}{
		{"inv1", devices.KindInverter, devices.PlatformClassic,
			[]uint16{1, 103, 120, 121, 122, 123, 126, 127, 129, 130, 132, 134, 135, 136}, 10000,
			[]devices.Capability{devices.CapPowerLimit, devices.CapConnect, devices.CapVoltVar, devices.CapFreqWatt, devices.CapLVRT}},
		{"inv2", devices.KindInverter, devices.PlatformDER,
			[]uint16{1, 701, 702, 704, 705, 706, 707, 708, 709, 710, 711}, 8000,
			[]devices.Capability{devices.CapPowerLimit, devices.CapVoltVar, devices.CapFreqWatt, devices.CapHFRT}},
		{"meter", devices.KindMeter, devices.PlatformClassic, []uint16{1, 203}, 0, nil},
		{"bat", devices.KindBattery, devices.PlatformDER, []uint16{1, 124, 713, 802}, 5000,
			[]devices.Capability{devices.CapStorageControl}},
		{"wx", devices.KindSensor, devices.PlatformClassic, []uint16{1, 308}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			d, err := devices.Discover(t.Context(), newClient(t, pool, simDevice(t, p, tc.id), time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if d.Base != 40000 || d.Kind != tc.kind || d.Platform != tc.platform || d.RatedPowerW != tc.ratedW {
				t.Errorf("base %d kind %s platform %s rated %v W, want 40000 %s %s %v",
					d.Base, d.Kind, d.Platform, d.RatedPowerW, tc.kind, tc.platform, tc.ratedW)
			}
			if !slices.Equal(d.ModelIDs(), tc.models) {
				t.Errorf("models %v, want %v", d.ModelIDs(), tc.models)
			}
			for _, c := range tc.caps {
				if !slices.Contains(d.Capabilities, c) {
					t.Errorf("capabilities %v lack %s", d.Capabilities, c)
				}
			}
			if d.Manufacturer != "plantd" || d.Serial == "" || d.Model == "" {
				t.Errorf("identity %q %q %q", d.Manufacturer, d.Model, d.Serial)
			}
		})
	}
}

// TestReadPlanRequests checks the read planning against every simulated
// device kind and logs requests and registers per poll.
func TestReadPlanRequests(t *testing.T) {
	p := startPlant(t, sim.DefaultConfig())
	pool := newPool(t)
	maxRequests := map[string]int{"inv1": 2, "inv2": 3, "meter": 1, "bat": 2, "wx": 1}
	for _, sd := range p.Devices() {
		c := newClient(t, pool, sd, time.Second)
		d, err := devices.Discover(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := d.NewReadPlan(d.PollModels())
		if err != nil {
			t.Fatal(err)
		}
		before := c.Endpoint().Stats().Requests
		insts, err := plan.Read(t.Context(), c)
		if err != nil {
			t.Fatalf("%s: %v", sd.ID(), err)
		}
		sent := int(c.Endpoint().Stats().Requests - before)
		t.Logf("%-5s models %v: %d requests, %d registers per poll", sd.ID(), ids(d.PollModels()), sent, plan.Registers())
		if sent != plan.Requests() || sent > maxRequests[sd.ID()] {
			t.Errorf("%s: %d requests (plan says %d), want at most %d", sd.ID(), sent, plan.Requests(), maxRequests[sd.ID()])
		}
		if len(insts) != len(d.PollModels()) {
			t.Errorf("%s: %d models decoded", sd.ID(), len(insts))
		}
	}
}

func ids(refs []devices.ModelRef) []uint16 {
	var out []uint16
	for _, r := range refs {
		out = append(out, r.ID)
	}
	return out
}

func TestScanNoSunSpec(t *testing.T) {
	// A Modbus server without a SunSpec map: the simulated sensor asked at a
	// unit id it does not serve answers with exceptions, or use a plain
	// register image of zeros.
	p := startPlant(t, sim.DefaultConfig())
	pool := newPool(t)
	wx := simDevice(t, p, "wx")
	c := pool.Endpoint(modbus.EndpointConfig{Address: wx.Addr(), Timeout: time.Second}).Unit(wx.Unit()+7, time.Second)
	_, err := devices.Discover(t.Context(), c)
	if !errors.Is(err, devices.ErrNoSunSpec) {
		t.Fatalf("discover on a unit without SunSpec: %v, want ErrNoSunSpec", err)
	}
}

// TestWriteLimitFollowed writes a scaled power limit to each simulated
// inverter, reads it back and checks the output follows.
func TestWriteLimitFollowed(t *testing.T) {
	cfg := sim.DefaultConfig()
	noon := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return noon }
	p := startPlant(t, cfg)
	pool := newPool(t)
	tests := []struct {
		id     string
		model  uint16
		values []devices.PointValue
		output func(context.Context, *devices.Device, devices.Reader) (float64, error)
	}{
		{"inv1", 123, []devices.PointValue{{Point: "WMaxLimPct", Value: 30}, {Point: "WMaxLimPct_RvrtTms", Value: 0}, {Point: "WMaxLim_Ena", Value: 1}}, acPower(103)},
		{"inv2", 704, []devices.PointValue{{Point: "WMaxLimPct", Value: 25.5}, {Point: "WMaxLimPctEna", Value: 1}}, acPower(701)},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			c := newClient(t, pool, simDevice(t, p, tc.id), time.Second)
			d, err := devices.Discover(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			free, err := tc.output(t.Context(), d, c)
			if err != nil {
				t.Fatal(err)
			}
			if free < 0.4*d.RatedPowerW {
				t.Fatalf("output at noon %v W: the sun is too weak for the test", free)
			}
			ref, _ := d.Ref(tc.model)
			after, err := devices.WritePoints(t.Context(), c, ref, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			got, err := after.Float("WMaxLimPct")
			if err != nil || got != tc.values[0].Value {
				t.Fatalf("WMaxLimPct reads back %v (%v), want %v", got, err, tc.values[0].Value)
			}
			limited, err := tc.output(t.Context(), d, c)
			if err != nil {
				t.Fatal(err)
			}
			limit := tc.values[0].Value / 100 * d.RatedPowerW
			t.Logf("%s: %.0f W free, limit %.0f W, %.0f W limited", tc.id, free, limit, limited)
			if limited > limit+1 || limited < 0.9*limit {
				t.Errorf("output %v W with a limit of %v W", limited, limit)
			}
		})
	}
}

func acPower(model uint16) func(context.Context, *devices.Device, devices.Reader) (float64, error) {
	return func(ctx context.Context, d *devices.Device, r devices.Reader) (float64, error) {
		ref, _ := d.Ref(model)
		plan, err := d.NewReadPlan([]devices.ModelRef{ref})
		if err != nil {
			return 0, err
		}
		insts, err := plan.Read(ctx, r)
		if err != nil {
			return 0, err
		}
		return insts[0].Float("W")
	}
}

func TestWriteRefusesReadOnlyAndOutOfRange(t *testing.T) {
	p := startPlant(t, sim.DefaultConfig())
	pool := newPool(t)
	c := newClient(t, pool, simDevice(t, p, "inv1"), time.Second)
	d, err := devices.Discover(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := d.Ref(123)
	before := c.Endpoint().Stats().Requests
	if _, err := devices.WritePoints(t.Context(), c, ref, []devices.PointValue{{Point: "WMaxLimPct", Value: -5}}); !errors.Is(err, devices.ErrOutOfRange) {
		t.Errorf("negative limit: %v, want ErrOutOfRange", err)
	}
	ref103, _ := d.Ref(103)
	if _, err := devices.WritePoints(t.Context(), c, ref103, []devices.PointValue{{Point: "W", Value: 5}}); !errors.Is(err, devices.ErrNotWritable) {
		t.Errorf("write to W: %v, want ErrNotWritable", err)
	}
	// The read-only point is refused before any I/O; the out-of-range value
	// after the one read that brings the scale factor. Nothing is written.
	if n := c.Endpoint().Stats().Requests - before; n != 1 {
		t.Errorf("%d requests for two refused writes, want 1 read", n)
	}
}

// BenchmarkPollRead reads the poll models of each simulated device kind
// with its read plan over a real socket, and reports the Modbus requests
// and registers one poll costs.
func BenchmarkPollRead(b *testing.B) {
	p, err := sim.New(sim.DefaultConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	pool := modbus.NewPool(nil)
	defer pool.Close()
	for _, sd := range p.Devices() {
		b.Run(sd.ID(), func(b *testing.B) {
			c := pool.Endpoint(modbus.EndpointConfig{Address: sd.Addr()}).Unit(sd.Unit(), time.Second)
			d, err := devices.Discover(b.Context(), c)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := d.NewReadPlan(d.PollModels())
			if err != nil {
				b.Fatal(err)
			}
			before := c.Endpoint().Stats().Requests
			b.ReportAllocs()
			for b.Loop() {
				if _, err := plan.Read(b.Context(), c); err != nil {
					b.Fatal(err)
				}
			}
			reqs := float64(c.Endpoint().Stats().Requests-before) / float64(b.N)
			b.ReportMetric(reqs, "requests/poll")
			b.ReportMetric(float64(plan.Registers()), "registers/poll")
		})
	}
}
