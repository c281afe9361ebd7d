package store

import (
	"fmt"
	"math"
	"testing"
	"time"

	"plantd/plant"
	"plantd/sim"
)

// TestCoarseAndFrozenCounters runs the demo plant from midnight to the next
// morning, polled over Modbus every 60 simulated seconds, with inv1's
// energy counter in 1 kWh steps and inv2's counter frozen from the start.
// The Day's 5-minute rows of both must follow the inverters' true power
// (the simulator's exact energy per interval), and the Day's total must
// equal the true energy and, for inv1, its counter's difference within one
// counter step. The rows of inv1's first counter run are not checked:
// where within its first step the counter stood when polling began is
// unknown (it gives its whole step to that run).
//
// Two stores record the same polls: one with the rollup as it runs, one
// with every device in a rollup batch of its own (a coarse counter's run
// then reaches back from one batch); each is checked in a subtest.
func TestCoarseAndFrozenCounters(t *testing.T) {
	t.Parallel() // its own simulated plant and database files
	if testing.Short() {
		t.Skip("a simulated day and a half")
	}
	loc := mustZone(t, sim.DefaultTimeZone)
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, loc)
	r := startSimCfg(t, day, func(c *sim.Config) {
		c.ClearSky = true
		// Only the two inverters checked are simulated and polled.
		var invs []sim.DeviceConfig
		for _, d := range c.Devices {
			switch d.ID {
			case "inv1":
				d.EnergyStepWh = 1000
				invs = append(invs, d)
			case "inv2":
				invs = append(invs, d)
			}
		}
		c.Devices = invs
	})
	inv2 := r.p.Device("inv2")
	inv2.FreezeCounter(true)
	batches := []int{0, 1}
	stores := make([]*Store, len(batches))
	stops := make([]func(), len(batches))
	for i, batch := range batches {
		stores[i] = openTest(t, Config{Plants: []PlantInfo{{ID: "demo", Location: loc}}, rollupBatch: batch})
		stops[i] = runStore(t, stores[i])
	}
	ctx := t.Context()
	const step = 60 * time.Second
	end := day.AddDate(0, 0, 1).Add(10 * time.Hour) // the next morning: inv1's counter stepped again
	trueWh := map[string]map[time.Time]float64{"inv1": {}, "inv2": {}}
	for x := day; !x.After(end); x = x.Add(step) {
		r.poll(ctx, t, x, stores...)
		if x.Sub(day)%(5*time.Minute) == 0 {
			for id, m := range trueWh {
				m[x] = r.p.Device(id).State().EnergyWh
			}
		}
	}
	for _, stop := range stops {
		stop()
	}
	for i, batch := range batches {
		t.Run(fmt.Sprintf("rollup batch %d", batch), func(t *testing.T) {
			checkCoarseAndFrozen(t, stores[i], day, end, trueWh)
		})
	}
	// The single batch's second pass reads only the part before the
	// first pass's window and joins that window's samples to it; the
	// batches of one device read the whole window again. Both must
	// write the same rows (the plant's balance rows are left out: they
	// sum the devices in map order).
	t.Run("same device rows", func(t *testing.T) {
		for _, table := range []string{"r5m", "r1h", "r1d"} {
			a, b := deviceRows(t, stores[0], table), deviceRows(t, stores[1], table)
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("%s: %d and %d rows", table, len(a), len(b))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s: row %d differs: %q and %q", table, i, a[i], b[i])
				}
			}
		}
	})
}

// deviceRows returns the rollup rows of table (r5m, r1h or r1d) of the
// store's devices, each as its device name, time and value bytes.
func deviceRows(t *testing.T, s *Store, table string) []string {
	t.Helper()
	rows, err := s.rdb.Load().Query(`SELECT d.name, r.t, r.v FROM ` + table + ` r JOIN device d ON d.id = r.src WHERE d.kind != 'plant' ORDER BY d.name, r.t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var ts int64
		var v []byte
		if err := rows.Scan(&name, &ts, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %x", name, ts, v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCoarseAndFrozen checks the Day of inv1 and inv2 in s against their
// true energy every 5 minutes from day to end (TestCoarseAndFrozenCounters).
func checkCoarseAndFrozen(t *testing.T, s *Store, day, end time.Time, trueWh map[string]map[time.Time]float64) {
	loc, ctx := day.Location(), t.Context()
	counter := func(e float64) float64 { return math.Floor(e/1000) * 1000 }
	for _, id := range []string{"inv1", "inv2"} {
		res, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: id, SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodDay, Date: day,
			WithTotal: true, ReturnEnergyValues: true})
		if err != nil {
			t.Fatal(err)
		}
		m := trueWh[id]
		firstStep := day
		if id == "inv1" {
			for x := day; x.Before(end); x = x.Add(5 * time.Minute) {
				if counter(m[x]) > counter(m[day]) {
					firstStep = x
					break
				}
			}
		}
		bad, rows := 0, 0
		for _, row := range res.Rows {
			e0, ok0 := m[row.Start.In(loc)]
			e1, ok1 := m[row.Start.Add(5*time.Minute).In(loc)]
			if !ok0 || !ok1 {
				continue
			}
			want := e1 - e0
			got := row.Values["pvGeneration"]
			if row.Start.Before(firstStep) {
				continue
			}
			if want < 40 { // below 480 W: dawn and dusk
				continue
			}
			rows++
			if !within(got, want, 0.15, 10) {
				bad++
				if bad <= 5 {
					t.Errorf("%s %s: %.1f Wh, true %.1f Wh", id, row.Start.In(loc).Format("15:04"), got, want)
				}
			}
		}
		if rows < 100 || bad > 0 {
			t.Errorf("%s: %d of %d daylight rows off by more than 15 %%", id, bad, rows)
		}
		next := day.AddDate(0, 0, 1)
		want := m[next] - m[day]
		got := res.Total.Values["pvGeneration"]
		if !within(got, want, 0.01, 0) {
			t.Errorf("%s: day total %.0f Wh, true %.0f Wh", id, got, want)
		}
		if id == "inv1" {
			if c := counter(m[next]) - counter(m[day]); math.Abs(got-c) > 1000 {
				t.Errorf("%s: day total %.0f Wh, counter moved %.0f Wh", id, got, c)
			}
		}
		t.Logf("%s: day total %.0f Wh, true %.0f Wh; %d daylight rows", id, got, want, rows)
	}
}
