package store

import (
	"database/sql"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// heaterMeter is the sub-meter of a 500 W heater (Measurement.Measures
// "heater") that runs from 18:00 local; its draw is part of the synthetic
// plant's 800 W load, which the grid meter "met" already sees.
type heaterMeter struct {
	loc   *time.Location
	last  time.Time
	w, wh float64
}

func (h *heaterMeter) step(t time.Time) Measurement {
	w := 0.0
	if t.In(h.loc).Hour() >= 18 {
		w = 500
	}
	if !h.last.IsZero() {
		h.wh += (h.w + w) / 2 * t.Sub(h.last).Hours()
	}
	h.last, h.w = t, w
	return Measurement{PlantID: "p1", DeviceID: "heatmeter", Kind: kind.Meter, Measures: "heater", Time: t,
		Readings: []plant.Reading{
			{Channel: plant.ActivePower, Value: w},
			{Channel: plant.GridConsumption, Value: w},
			{Channel: plant.GridFeedIn, Value: 0},
			{Channel: plant.GridConsumptionTotal, Value: 5e5 + h.wh},
			{Channel: plant.GridFeedInTotal, Value: 0},
		}}
}

// TestSubMeterNotGrid: a consumer's sub-meter is stored as a device of its
// own, but its energies count in no balance of its plant: the plant's
// grid figures are the grid meter's alone in every period (Recent from the
// raw samples, Day from the 5-minute rows, Month from the daily rows,
// which the hourly rows make), as in the live balance
// (plant.DeviceInfo.GridMeter). Before, the heater's 3 kWh of the evening
// were counted as grid consumption a second time.
func TestSubMeterNotGrid(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	s := openTest(t, Config{})
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	sy, heater := &synth{loc: loc}, &heaterMeter{loc: loc}
	stop := runStore(t, s)
	end := day.Add(24 * time.Hour)
	for at := day; at.Before(end); at = at.Add(time.Minute) {
		for _, m := range sy.step(at) {
			record(t, s, m)
		}
		record(t, s, heater.step(at))
	}
	stop()
	if st := s.Stats(); st.Dropped != 0 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if heater.wh < 2900 {
		t.Fatalf("the heater drew %.0f Wh: the test needs its evening", heater.wh)
	}
	q := func(q plant.SetQuery) map[string]float64 {
		t.Helper()
		q.WithTotal = true
		res, err := s.QuerySet(t.Context(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if res.Total == nil {
			t.Fatalf("%+v: no total", q)
		}
		return res.Total.Values
	}
	// The last sample is at 23:59: the day's load is 800 W for 1439
	// minutes, the heater's evening inside it.
	load := 800 * (24*60 - 1) / 60.0
	recentGrid := q(plant.SetQuery{DeviceID: "met", SetType: plant.SetEnergyAndPowerInOut, Period: plant.PeriodRecent, ReturnEnergyValues: true})
	const rel, abs = 1e-5, 0.05 // energies are kept to 1 mWh per 5-minute row
	for _, tt := range []struct {
		name  string
		q     plant.SetQuery
		field string
		want  float64
	}{
		{"Day: grid consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day}, "gridConsumption", sy.impWh},
		{"Day: feed-in", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day}, "gridFeedIn", sy.expWh},
		{"Day: total consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day}, "totalConsumption", load},
		{"Month: grid consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodMonth, Date: day}, "gridConsumption", sy.impWh},
		{"Month: total consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodMonth, Date: day}, "totalConsumption", load},
		{"Recent: grid consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodRecent}, "gridConsumption", recentGrid["gridConsumption"]},
		{"Recent: total consumption", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodRecent}, "totalConsumption", 800 * 59 / 60.0},
		{"the sub-meter's own Day", plant.SetQuery{DeviceID: "heatmeter", SetType: plant.SetEnergyAndPowerInOut, Period: plant.PeriodDay, Date: day, ReturnEnergyValues: true}, "gridConsumption", heater.wh},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := q(tt.q)[tt.field]; !within(got, tt.want, rel, abs) {
				t.Errorf("%s = %.3f Wh, want %.3f", tt.field, got, tt.want)
			}
		})
	}
	if recentGrid["gridConsumption"] < 400*59/60.0-1 {
		t.Errorf("the grid meter's Recent gridConsumption %.3f Wh: the evening's import is 400 W", recentGrid["gridConsumption"])
	}
}

// TestSubMeterSchema: the store keeps what a meter measures in its device
// row (migration 7). A database of schema 6 has no such column: its meters
// count as grid meters, as they did, until a measurement says otherwise.
func TestSubMeterSchema(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	path := s.cfg.Path
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	heater := &heaterMeter{loc: time.UTC}
	write := func(s *Store, measures string) {
		t.Helper()
		m := heater.step(at)
		m.Measures = measures
		at = at.Add(time.Second)
		record(t, s, m)
		if err := s.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	gridMeter := func(s *Store) bool {
		t.Helper()
		d := s.cat.device("heatmeter")
		if d == nil {
			t.Fatal("heatmeter not in the catalog")
		}
		return d.gridMeter()
	}
	stop := runStore(t, s)
	write(s, "heater")
	stop()
	s.Close()

	s = openTest(t, Config{Path: path})
	if gridMeter(s) {
		t.Error("reopened: the heater's sub-meter is a grid meter")
	}
	s.Close()

	// Back to schema 6.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE device DROP COLUMN measures`, `PRAGMA user_version = 6`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s = openTest(t, Config{Path: path})
	if !gridMeter(s) {
		t.Error("migrated from schema 6: the meter is no grid meter")
	}
	runStore(t, s)
	write(s, "heater")
	if gridMeter(s) {
		t.Error("after a measurement of the sub-meter: a grid meter")
	}
	var measures string
	if err := s.rdb.Load().QueryRowContext(t.Context(), `SELECT measures FROM device WHERE name = 'heatmeter'`).Scan(&measures); err != nil || measures != "heater" {
		t.Errorf("device row measures %q, %v; want heater", measures, err)
	}
}
