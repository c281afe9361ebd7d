package store

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"plantd/plant"
)

// dayTruth is the synthetic plant's energy of one local day.
type dayTruth struct {
	date                   time.Time
	pv, imp, exp, cha, dis float64
}

// recordDays records the synthetic plant every step for n local days from
// start and returns each day's energies from its own counters.
func recordDays(t *testing.T, s *Store, sy *synth, start time.Time, n int, step time.Duration) []dayTruth {
	t.Helper()
	var out []dayTruth
	snap := func() [5]float64 { return [5]float64{sy.pvWh, sy.impWh, sy.expWh, sy.chaWh, sy.disWh} }
	for d := range n {
		from := start.AddDate(0, 0, d)
		to := start.AddDate(0, 0, d+1)
		var before [5]float64
		for x := from; !x.After(to); x = x.Add(step) {
			ms := sy.step(x)
			if x.Equal(from) {
				before = snap()
			}
			if x.Equal(to) && d < n-1 {
				break // the next day records this instant
			}
			for _, m := range ms {
				record(t, s, m)
			}
		}
		after := snap()
		out = append(out, dayTruth{date: from, pv: after[0] - before[0], imp: after[1] - before[1],
			exp: after[2] - before[2], cha: after[3] - before[3], dis: after[4] - before[4]})
	}
	return out
}

func TestEnergyTotals(t *testing.T) {
	t.Parallel() // its own database files
	for _, tc := range []struct {
		counters bool
		batch    int // Config.rollupBatch
	}{{true, 0}, {false, 0}, {true, 1}} {
		counters := tc.counters
		name := "counters"
		if !counters {
			name = "integrated power"
		}
		if tc.batch > 0 {
			name += ", one device per rollup batch"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // its own database files
			loc := mustZone(t, "Europe/Berlin")
			s := openTest(t, Config{rollupBatch: tc.batch})
			stop := runStore(t, s)
			sy := &synth{loc: loc, noCounters: !counters}
			// Sunday 2026-03-29 (23 h) to Wednesday 2026-04-01: a week
			// boundary and a month boundary.
			start := time.Date(2026, 3, 29, 0, 0, 0, 0, loc)
			days := recordDays(t, s, sy, start, 4, time.Minute)
			stop()
			ctx := t.Context()
			q := func(q plant.SetQuery) plant.SetResult {
				t.Helper()
				if q.DeviceID == "" {
					q.PlantID = "p1"
				}
				res, err := s.QuerySet(ctx, q)
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				return res
			}
			const rel, abs = 1e-5, 0.05 // energies are kept to 1 mWh per 5-minute row
			check := func(what string, got map[string]float64, field string, want float64) {
				t.Helper()
				if !within(got[field], want, rel, abs) {
					t.Errorf("%s %s = %.3f Wh, want %.3f", what, field, got[field], want)
				}
			}
			var sum dayTruth
			march, april := dayTruth{}, dayTruth{}
			for i, d := range days {
				res := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: d.date, WithTotal: true})
				tot := res.Total.Values
				what := d.date.Format(time.DateOnly)
				check(what, tot, "pvGeneration", d.pv)
				check(what, tot, "gridConsumption", d.imp)
				check(what, tot, "gridFeedIn", d.exp)
				check(what, tot, "batteryCharging", d.cha)
				check(what, tot, "batteryDischarging", d.dis)
				hours := 24.0
				if i == 0 {
					hours = 23
				}
				// The load is a flat 800 W.
				check(what, tot, "totalConsumption", 800*hours)
				// W means × interval length add up to the same energy.
				var fromW, fromWh float64
				whRes := q(plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodDay, Date: d.date, ReturnEnergyValues: true})
				for _, r := range res.Rows {
					fromW += r.Values["pvGeneration"] * 5.0 / 60
				}
				for _, r := range whRes.Rows {
					fromWh += r.Values["pvGeneration"]
				}
				if !within(fromW, d.pv, rel, abs) || !within(fromWh, d.pv, rel, abs) {
					t.Errorf("%s: Σ W·h %.3f, Σ Wh %.3f, want %.3f", what, fromW, fromWh, d.pv)
				}
				sum.pv += d.pv
				sum.imp += d.imp
				if d.date.Month() == time.March {
					march.pv += d.pv
				} else {
					april.pv += d.pv
				}
				// Month rows hold the same day.
				mres := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodMonth, Date: d.date})
				found := false
				for _, r := range mres.Rows {
					if r.Start.Equal(d.date) {
						found = true
						check(what+" (month row)", r.Values, "pvGeneration", d.pv)
					}
				}
				if !found {
					t.Errorf("%s: no row in its month", what)
				}
			}
			// The week of Sunday 03-29 holds its first day only; the next
			// week the other three.
			w1 := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodWeek, Date: days[0].date, WithTotal: true})
			check("week 13", w1.Total.Values, "pvGeneration", days[0].pv)
			w2 := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodWeek, Date: days[3].date, WithTotal: true})
			check("week 14", w2.Total.Values, "pvGeneration", sum.pv-days[0].pv)
			m3 := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodMonth, Date: days[0].date, WithTotal: true})
			check("March", m3.Total.Values, "pvGeneration", march.pv)
			m4 := q(plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodMonth, Date: days[3].date, WithTotal: true})
			check("April (device)", m4.Total.Values, "pvGeneration", april.pv)
			y := q(plant.SetQuery{DeviceID: "met", SetType: plant.SetEnergyAndPowerInOut, Period: plant.PeriodYear, Date: days[0].date, WithTotal: true})
			check("year (meter)", y.Total.Values, "gridConsumption", sum.imp)
			if len(y.Rows) != 2 {
				t.Errorf("year: %d month rows, want 2", len(y.Rows))
			}
			tot := q(plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodTotal, WithTotal: true})
			check("total", tot.Total.Values, "pvGeneration", sum.pv)
			if r := tot.Total.Values["autarkyRate"]; r <= 0 || r > 1 {
				t.Errorf("autarkyRate %v", r)
			}
		})
	}
}

// rollupDump reads every rollup row, decoded, for comparison.
func rollupDump(t *testing.T, s *Store) map[string]map[int64]float64 {
	t.Helper()
	out := map[string]map[int64]float64{}
	db := s.rdb.Load()
	for _, table := range []string{"r5m", "r1h", "r1d"} {
		rows, err := db.QueryContext(t.Context(), `SELECT d.name, d.kind, r.t, r.v FROM `+table+` r JOIN device d ON d.id = r.src`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, kind string
			var ts int64
			var v []byte
			if err := rows.Scan(&name, &kind, &ts, &v); err != nil {
				t.Fatal(err)
			}
			if _, err := decodeAggs(v, s.cat, func(sid int64, a agg) {
				se := s.cat.seriesByID(sid)
				key := table + "/" + kind + ":" + name + "/" + se.name + "/" + string(rune('0'+se.idx))
				m := out[key]
				if m == nil {
					m = map[int64]float64{}
					out[key] = m
				}
				m[ts] = a.e*1e3 + a.sum + float64(a.n)
			}); err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

// TestRebuild records the same data in order, shuffled in blocks (late
// data), and in two runs with a restart between: the rollups must be the
// same.
func TestRebuild(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	start := time.Date(2026, 5, 4, 0, 0, 0, 0, loc)
	gen := func() []Measurement {
		sy := &synth{loc: loc}
		var ms []Measurement
		for x := start; x.Before(start.Add(30 * time.Hour)); x = x.Add(time.Minute) {
			ms = append(ms, sy.step(x)...)
		}
		return ms
	}
	ms := gen()
	ordered := openTest(t, Config{})
	stop := runStore(t, ordered)
	for _, m := range ms {
		record(t, ordered, m)
	}
	stop()
	want := rollupDump(t, ordered)

	t.Run("late data", func(t *testing.T) {
		t.Parallel() // its own database files; ms and want are only read
		s := openTest(t, Config{})
		stop := runStore(t, s)
		// Blocks of 90 minutes, in random order: every block after the
		// first is late or leaves a gap for later.
		const block = 3 * 90
		var blocks [][]Measurement
		for i := 0; i < len(ms); i += block {
			blocks = append(blocks, ms[i:min(i+block, len(ms))])
		}
		rng := rand.New(rand.NewPCG(1, 2))
		rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
		for _, b := range blocks {
			for _, m := range b {
				record(t, s, m)
			}
			if err := s.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		stop()
		compareDumps(t, rollupDump(t, s), want)
	})

	t.Run("restart", func(t *testing.T) {
		t.Parallel() // its own database files; ms and want are only read
		path := filepath.Join(t.TempDir(), "plantd.db")
		half := len(ms) / 2
		for i, part := range [][]Measurement{ms[:half], ms[half:]} {
			s := openTest(t, Config{Path: path})
			stop := runStore(t, s)
			for _, m := range part {
				record(t, s, m)
			}
			stop()
			if i == 1 {
				compareDumps(t, rollupDump(t, s), want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func compareDumps(t *testing.T, got, want map[string]map[int64]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d series, want %d", len(got), len(want))
	}
	bad := 0
	for k, wm := range want {
		gm := got[k]
		if len(gm) != len(wm) {
			t.Errorf("%s: %d rows, want %d", k, len(gm), len(wm))
			continue
		}
		for ts, w := range wm {
			if g := gm[ts]; math.Abs(g-w) > 1e-6*math.Max(1, math.Abs(w)) {
				if bad++; bad < 10 {
					t.Errorf("%s at %v: %v, want %v", k, time.UnixMilli(ts).UTC(), g, w)
				}
			}
		}
	}
}
