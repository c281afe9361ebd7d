package store

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// testLogger logs to the test at Warn and above when -v; discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// openTest opens a store in a temporary directory with one plant "p1" in
// zone (nil: Europe/Berlin) unless cfg names plants.
func openTest(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "plantd.db")
	}
	if cfg.QueueLen == 0 {
		cfg.QueueLen = 1 << 17 // tests record faster than real time
	}
	if cfg.Plants == nil {
		cfg.Plants = []PlantInfo{{ID: "p1", Location: mustZone(t, "Europe/Berlin")}}
	}
	s, err := Open(t.Context(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runStore runs s until the returned stop is called (or the test ends);
// stop waits for Run to flush and return. The flush of a long recording
// (TestDST: 13 days) takes a minute on a loaded machine: the bound only
// ends a Run that never returns, it times nothing.
func runStore(t testing.TB, s *Store) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(5 * time.Minute):
			t.Fatal("Run did not return within 5 min of cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// record records m or fails the test; it retries while the queue is full,
// waiting on the writer (Flush), never sleeping.
func record(t testing.TB, s *Store, m Measurement) {
	t.Helper()
	for range 1000 {
		if s.Record(m) {
			return
		}
		if err := s.Flush(t.Context()); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("flush: %v", err)
		}
	}
	t.Fatalf("record %s at %v: refused", m.DeviceID, m.Time)
}

// synth is a synthetic plant of one inverter, one meter and one battery
// with exact energy counters: the readings of its poll at time t.
type synth struct {
	loc                *time.Location
	last               time.Time
	pvWh, impWh, expWh float64
	chaWh, disWh       float64
	pv, grid, bat, soc float64
	noCounters         bool
}

// powers at t: PV follows a half sine between 06:00 and 18:00 local, the
// load is 800 W, the battery takes half of any surplus and covers half of
// any deficit.
func (s *synth) powers(t time.Time) (pv, grid, bat float64) {
	lt := t.In(s.loc)
	h := float64(lt.Hour()) + float64(lt.Minute())/60 + float64(lt.Second())/3600
	if h > 6 && h < 18 {
		pv = 6000 * math.Sin(math.Pi*(h-6)/12)
	}
	load := 800.0
	net := pv - load
	bat = -net / 2 // positive = discharging
	grid = load - pv - bat
	return
}

// step advances to t, integrating with the trapezoid rule (so the store's
// own trapezoid integration of power is exact), and returns the
// measurements of the three devices.
func (s *synth) step(t time.Time) []Measurement {
	pv, grid, bat := s.powers(t)
	if !s.last.IsZero() {
		h := t.Sub(s.last).Hours()
		s.pvWh += (s.pv + pv) / 2 * h
		s.impWh += (math.Max(0, s.grid) + math.Max(0, grid)) / 2 * h
		s.expWh += (math.Max(0, -s.grid) + math.Max(0, -grid)) / 2 * h
		s.chaWh += (math.Max(0, -s.bat) + math.Max(0, -bat)) / 2 * h
		s.disWh += (math.Max(0, s.bat) + math.Max(0, bat)) / 2 * h
	}
	s.last, s.pv, s.grid, s.bat = t, pv, grid, bat
	inv := []plant.Reading{
		{Channel: plant.ActivePower, Value: pv},
		{Channel: plant.PVGeneration, Value: pv},
		{Channel: plant.VoltagePhaseA, Value: 230.1},
		{Channel: plant.GridFrequency, Value: 50.01},
		{Channel: plant.DCPowerInput, Index: 1, Value: pv * 1.02},
		{Channel: plant.DCVoltageInput, Index: 1, Value: 600},
	}
	met := []plant.Reading{
		{Channel: plant.ActivePower, Value: grid},
		{Channel: plant.GridConsumption, Value: math.Max(0, grid)},
		{Channel: plant.GridFeedIn, Value: math.Max(0, -grid)},
	}
	if !s.noCounters {
		inv = append(inv, plant.Reading{Channel: plant.PVGenerationTotal, Value: 1e6 + s.pvWh})
		met = append(met,
			plant.Reading{Channel: plant.GridConsumptionTotal, Value: 2e6 + s.impWh},
			plant.Reading{Channel: plant.GridFeedInTotal, Value: 3e6 + s.expWh})
	}
	bt := []plant.Reading{
		{Channel: plant.ActivePower, Value: bat},
		{Channel: plant.BatteryCharging, Value: math.Max(0, -bat)},
		{Channel: plant.BatteryDischarging, Value: math.Max(0, bat)},
		{Channel: plant.BatteryStateOfCharge, Value: 50},
	}
	return []Measurement{
		{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: t, Readings: inv},
		{PlantID: "p1", DeviceID: "met", Kind: kind.Meter, Time: t, Readings: met},
		{PlantID: "p1", DeviceID: "bat", Kind: kind.Battery, Time: t, Readings: bt},
	}
}

// within reports whether got is within rel (relative) or abs of want.
func within(got, want, rel, abs float64) bool {
	d := math.Abs(got - want)
	return d <= abs || d <= rel*math.Abs(want)
}

// storedSample is a raw sample as the store holds it.
type storedSample struct {
	dev, t int64
	vals   []chVal
}

// storedSamples reads every raw sample the store's database holds, per
// device in time order.
func storedSamples(t testing.TB, s *Store) []storedSample {
	t.Helper()
	var out []storedSample
	err := s.scanChunks(t.Context(), s.rdb.Load(), `SELECT t0, device, v FROM raw_chunk ORDER BY id`, nil,
		math.MinInt64, math.MaxInt64, false, nil, func(dev, ts int64, sv []sidVal) bool {
			var vals []chVal
			for _, x := range sv {
				if k, ok := s.cat.chanOf(x.sid); ok {
					vals = append(vals, chVal{k, x.v})
				}
			}
			out = append(out, storedSample{dev, ts, vals})
			return true
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scanChunks is scanChunkVals decoding with decodeChunk, the reference
// decoder: fn gets each sample's (series, value) pairs.
func (s *Store) scanChunks(ctx context.Context, db querier, q string, args []any, lo, hi int64, desc bool,
	keep func(dev int64) bool, fn func(dev, t int64, sv []sidVal) bool) error {
	return scanRawChunks(ctx, s, db, q, args, lo, hi, desc, keep, decodeChunk, fn)
}
