package devices_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/devices"

	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

func newClient(t *testing.T, pool *modbus.Pool, d *sim.Device, timeout time.Duration) *modbus.Client {
	t.Helper()
	return pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: timeout}).Unit(d.Unit(), timeout)
}

func newPool(t *testing.T) *modbus.Pool {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestDiscoverSimulatedPlant(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	pool := newPool(t)
	tests := []struct {
		id       string
		kind     kind.Kind
		platform sunspec.Platform
		models   []uint16
		ratedW   float64
		caps     []sunspec.Capability
	}{
		{"inv1", kind.Inverter, sunspec.PlatformClassic,
			[]uint16{1, 103, 120, 121, 122, 123, 126, 127, 129, 130, 132, 134, 135, 136}, 10000,
			[]sunspec.Capability{sunspec.CapPowerLimit, sunspec.CapConnect, sunspec.CapVoltVar, sunspec.CapFreqWatt, sunspec.CapLVRT}},
		{"inv2", kind.Inverter, sunspec.PlatformDER,
			[]uint16{1, 701, 702, 704, 705, 706, 707, 708, 709, 710, 711}, 8000,
			[]sunspec.Capability{sunspec.CapPowerLimit, sunspec.CapVoltVar, sunspec.CapFreqWatt, sunspec.CapHFRT}},
		{"meter", kind.Meter, sunspec.PlatformClassic, []uint16{1, 203}, 0, nil},
		{"bat", kind.Battery, sunspec.PlatformDER, []uint16{1, 124, 713, 802}, 5000,
			[]sunspec.Capability{sunspec.CapStorageControl}},
		{"wx", kind.Sensor, sunspec.PlatformClassic, []uint16{1, 308}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			d, err := devices.Discover(t.Context(), newClient(t, pool, simtest.Device(t, p, tc.id), time.Second))
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
	p := simtest.Start(t, sim.DefaultConfig())
	pool := newPool(t)
	maxRequests := map[string]int{"inv1": 2, "inv2": 3, "meter": 1, "bat": 2, "wx": 1}
	for _, sd := range p.Devices() {
		c := newClient(t, pool, sd, time.Second)
		d, err := devices.Discover(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := devices.NewReadPlan(d, d.PollModels())
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

func ids(refs []sunspec.ModelRef) []uint16 {
	var out []uint16
	for _, r := range refs {
		out = append(out, r.ID)
	}
	return out
}

func TestDiscoverNoSunSpec(t *testing.T) {
	pool := newPool(t)
	tests := []struct {
		name   string
		client func() *modbus.Client
		want   error
		words  string
	}{
		{"a Modbus device without a SunSpec map", func() *modbus.Client {
			return pool.Endpoint(modbus.EndpointConfig{Address: simtest.PlainModbus(t), Timeout: time.Second}).Unit(1, time.Second)
		}, devices.ErrNoSunSpec, "no SunS marker at 40000, 0 or 50000"},
		{"a unit id nobody answers behind a gateway", func() *modbus.Client {
			p := simtest.Start(t, sim.DefaultConfig())
			wx := simtest.Device(t, p, "wx")
			return pool.Endpoint(modbus.EndpointConfig{Address: wx.Addr(), Timeout: time.Second}).Unit(wx.Unit()+7, time.Second)
		}, nil, "gateway target device failed to respond"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := devices.Discover(t.Context(), tc.client())
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("discover: %v, want %v saying %q", err, tc.want, tc.words)
			}
		})
	}
}

// TestWriteLimitFollowed writes a scaled power limit to each simulated
// inverter, reads it back and checks the output follows.
func TestWriteLimitFollowed(t *testing.T) {
	cfg := sim.DefaultConfig()
	noon := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return noon }
	p := simtest.Start(t, cfg)
	pool := newPool(t)
	tests := []struct {
		id     string
		model  uint16
		values []sunspec.PointValue
		output func(context.Context, *sunspec.Device, sunspec.Reader) (float64, error)
	}{
		{"inv1", 123, []sunspec.PointValue{{Point: "WMaxLimPct", Value: 30}, {Point: "WMaxLimPct_RvrtTms", Value: 0}, {Point: "WMaxLim_Ena", Value: 1}}, acPower(103)},
		{"inv2", 704, []sunspec.PointValue{{Point: "WMaxLimPct", Value: 25.5}, {Point: "WMaxLimPctEna", Value: 1}}, acPower(701)},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			c := newClient(t, pool, simtest.Device(t, p, tc.id), time.Second)
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
			after, err := sunspec.WritePoints(t.Context(), c, ref, tc.values)
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

func acPower(model uint16) func(context.Context, *sunspec.Device, sunspec.Reader) (float64, error) {
	return func(ctx context.Context, d *sunspec.Device, r sunspec.Reader) (float64, error) {
		ref, _ := d.Ref(model)
		plan, err := devices.NewReadPlan(d, []sunspec.ModelRef{ref})
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
	p := simtest.Start(t, sim.DefaultConfig())
	pool := newPool(t)
	c := newClient(t, pool, simtest.Device(t, p, "inv1"), time.Second)
	d, err := devices.Discover(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := d.Ref(123)
	before := c.Endpoint().Stats().Requests
	if _, err := sunspec.WritePoints(t.Context(), c, ref, []sunspec.PointValue{{Point: "WMaxLimPct", Value: -5}}); !errors.Is(err, sunspec.ErrOutOfRange) {
		t.Errorf("negative limit: %v, want ErrOutOfRange", err)
	}
	ref103, _ := d.Ref(103)
	if _, err := sunspec.WritePoints(t.Context(), c, ref103, []sunspec.PointValue{{Point: "W", Value: 5}}); !errors.Is(err, sunspec.ErrNotWritable) {
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
	p := simtest.Start(b, sim.DefaultConfig())
	pool := modbus.NewPool(nil)
	defer pool.Close()
	for _, sd := range p.Devices() {
		b.Run(sd.ID(), func(b *testing.B) {
			c := pool.Endpoint(modbus.EndpointConfig{Address: sd.Addr()}).Unit(sd.Unit(), time.Second)
			d, err := devices.Discover(b.Context(), c)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := devices.NewReadPlan(d, d.PollModels())
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

// TestWriteModelTrigger: a trigger point is written although its value
// does not change (a second adopt request for the same curve), and only
// what changed besides it; WriteModel alone writes nothing then.
func TestWriteModelTrigger(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv2")
	c := newClient(t, newPool(t), inv, time.Second)
	d, err := devices.Discover(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := d.Ref(705)
	req := func(inst *sunspec.Instance) error { return inst.Set("AdptCrvReq", 2) }
	if _, err := sunspec.WriteModel(t.Context(), c, ref, req); err != nil {
		t.Fatal(err)
	}
	n := len(inv.Writes())
	if _, err := sunspec.WriteModel(t.Context(), c, ref, req); err != nil {
		t.Fatal(err)
	}
	if got := len(inv.Writes()); got != n {
		t.Errorf("WriteModel of an unchanged value wrote %d times", got-n)
	}
	if _, err := sunspec.WriteModelTrigger(t.Context(), c, ref, []string{"AdptCrvReq"}, req); err != nil {
		t.Fatal(err)
	}
	w := inv.Writes()
	if len(w) != n+1 || !slices.Equal(w[len(w)-1].Points, []string{"705.AdptCrvReq"}) {
		t.Errorf("WriteModelTrigger wrote %d times, last %v; want AdptCrvReq once", len(w)-n, w[len(w)-1].Points)
	}
}

// TestWriteModelRenew: renew points are written although their values do
// not change (a reversion timeout renewed), read back, and a point the
// model lacks is ignored.
func TestWriteModelRenew(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	c := newClient(t, newPool(t), inv, time.Second)
	d, err := devices.Discover(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := d.Ref(123)
	set := func(inst *sunspec.Instance) error {
		if err := inst.Set("WMaxLimPct", 40); err != nil {
			return err
		}
		return inst.Set("WMaxLimPct_RvrtTms", 30)
	}
	if _, err := sunspec.WriteModel(t.Context(), c, ref, set); err != nil {
		t.Fatal(err)
	}
	n := len(inv.Writes())
	after, err := sunspec.WriteModelRenew(t.Context(), c, ref, []string{"WMaxLimPct", "WMaxLimPct_RvrtTms", "WMaxLimPctRvrtTms"}, nil, set)
	if err != nil {
		t.Fatal(err)
	}
	w := inv.Writes()
	if len(w) != n+1 || !slices.Contains(w[len(w)-1].Points, "123.WMaxLimPct") || !slices.Contains(w[len(w)-1].Points, "123.WMaxLimPct_RvrtTms") {
		t.Errorf("WriteModelRenew wrote %d times, last %v; want WMaxLimPct and its RvrtTms once", len(w)-n, w[len(w)-1].Points)
	}
	if v, _ := after.Float("WMaxLimPct_RvrtTms"); v != 30 {
		t.Errorf("read back WMaxLimPct_RvrtTms %g", v)
	}
}
