package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// seeded returns a stopped store with 26 hours of the synthetic plant from
// 2026-07-01 00:00 Berlin, recorded every minute.
func seeded(t *testing.T) (*Store, time.Time) {
	t.Helper()
	loc := mustZone(t, "Europe/Berlin")
	s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1", Location: loc}, {ID: "empty", Location: loc}}})
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	fillSynth(t, s, &synth{loc: loc}, day, day.Add(26*time.Hour), time.Minute)
	return s, day
}

func TestQueryErrors(t *testing.T) {
	t.Parallel() // its own database files
	s, day := seeded(t)
	tests := []struct {
		name string
		q    plant.SetQuery
		want error
		text string
	}{
		{"unknown plant", plant.SetQuery{PlantID: "nope", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay}, ErrUnknownPlant, "nope"},
		{"unknown device", plant.SetQuery{DeviceID: "nope", SetType: plant.SetPowerAc, Period: plant.PeriodDay}, ErrUnknownDevice, "nope"},
		{"device set of a plant", plant.SetQuery{PlantID: "p1", SetType: plant.SetPowerAc, Period: plant.PeriodDay}, ErrUnsupportedSet, "PowerAc"},
		{"plant set of a device", plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay}, ErrUnsupportedSet, "EnergyBalance"},
		{"PV set of a meter", plant.SetQuery{DeviceID: "met", SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodDay}, ErrUnsupportedSet, "met"},
		{"consumption set", plant.SetQuery{DeviceID: "met", SetType: plant.SetEnergyAndPowerConsumption, Period: plant.PeriodDay}, ErrUnsupportedSet, ""},
		{"bad period", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: "Fortnight"}, ErrBadQuery, "period"},
		{"bad set type", plant.SetQuery{PlantID: "p1", SetType: "Nope", Period: plant.PeriodDay}, ErrBadQuery, "setType"},
		{"no scope", plant.SetQuery{SetType: plant.SetEnergyBalance, Period: plant.PeriodDay}, ErrBadQuery, "plantId"},
		{"date out of range", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)}, ErrBadQuery, "date"},
		{"ok", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: "dAy", Date: day}, nil, ""},
		{"plant without data", plant.SetQuery{PlantID: "empty", SetType: plant.SetEnergyBalance, Period: plant.PeriodYear, Date: day, WithTotal: true}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.QuerySet(t.Context(), tt.q)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if err != nil && tt.text != "" && !contains(err.Error(), tt.text) {
				t.Errorf("error %q does not name %q", err, tt.text)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

func TestDeviceSets(t *testing.T) {
	t.Parallel() // its own database files
	s, _ := seeded(t)
	tests := []struct {
		dev  string
		want []plant.SetType
	}{
		{"inv", []plant.SetType{plant.SetEnergyAndPowerPv, plant.SetPowerAc, plant.SetPowerDc, plant.SetEnergyDc}},
		{"met", []plant.SetType{plant.SetEnergyAndPowerInOut, plant.SetPowerAc, plant.SetEnergyMix}},
		{"bat", []plant.SetType{plant.SetEnergyAndPowerBattery, plant.SetPowerAc}},
	}
	for _, tt := range tests {
		got, err := s.DeviceSets(t.Context(), tt.dev)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, %v; want %v", tt.dev, got, err, tt.want)
		}
	}
	if _, err := s.DeviceSets(t.Context(), "nope"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("unknown device: %v", err)
	}
}

func TestDeviceSetValues(t *testing.T) {
	t.Parallel() // its own database files
	s, day := seeded(t)
	ctx := t.Context()
	noon := day.Add(12 * time.Hour).UTC()
	row := func(q plant.SetQuery, at time.Time) plant.SetRow {
		t.Helper()
		res, err := s.QuerySet(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			if r.Start.Equal(at) {
				return r
			}
		}
		t.Fatalf("%+v: no row at %v", q, at)
		return plant.SetRow{}
	}
	// PowerAc: means; DC inputs indexed.
	ac := row(plant.SetQuery{DeviceID: "inv", SetType: plant.SetPowerAc, Period: plant.PeriodDay, Date: day}, noon)
	if v := ac.Values["voltagePhaseA"]; math.Abs(v-230.1) > 1e-9 {
		t.Errorf("voltagePhaseA %v", v)
	}
	if v := ac.Values["gridFrequency"]; math.Abs(v-50.01) > 1e-9 {
		t.Errorf("gridFrequency %v", v)
	}
	if _, ok := ac.Values["pvGeneration"]; ok {
		t.Error("PowerAc carries pvGeneration")
	}
	dc := row(plant.SetQuery{DeviceID: "inv", SetType: plant.SetPowerDc, Period: plant.PeriodDay, Date: day}, noon)
	if iv := dc.Indexed["dcVoltageInput"]; len(iv) != 1 || iv[0].Index != "A" || iv[0].Value != 600 {
		t.Errorf("dcVoltageInput %v", iv)
	}
	edc := row(plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyDc, Period: plant.PeriodDay, Date: day}, noon)
	if iv := edc.Indexed["dcEnergyInput"]; len(iv) != 1 || iv[0].Value < 400 || iv[0].Value > 600 {
		t.Errorf("dcEnergyInput (Wh in 5 min at ~6 kW) %v", iv)
	}
	// Battery: energies in W means, SoC mean.
	bat := row(plant.SetQuery{DeviceID: "bat", SetType: plant.SetEnergyAndPowerBattery, Period: plant.PeriodDay, Date: day}, noon)
	if bat.Values["batteryStateOfCharge"] != 50 || bat.Values["batteryCharging"] < 2000 || bat.Values["batteryDischarging"] != 0 {
		t.Errorf("battery %v", bat.Values)
	}
	// Unmeasured: no row, never 0.
	res, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodDay, Date: day.AddDate(0, 0, 2)})
	if err != nil || len(res.Rows) != 0 {
		t.Errorf("a day without data: %d rows, %v", len(res.Rows), err)
	}
	// EnergyMix of the plant and of its meter: rates sum to 1.
	for _, q := range []plant.SetQuery{{PlantID: "p1"}, {DeviceID: "met"}} {
		q.SetType, q.Period, q.Date = plant.SetEnergyMix, plant.PeriodDay, day
		m := row(q, day.Add(20*time.Hour).UTC())
		sum := m.Values["pvConsumptionRate"] + m.Values["batteryConsumptionRate"] + m.Values["gridConsumptionRate"]
		if math.Abs(sum-1) > 1e-9 || math.Abs(m.Values["totalConsumption"]-800) > 0.1 {
			t.Errorf("mix %+v: %v", q, m.Values)
		}
	}
}

func TestPowerAcFallback(t *testing.T) {
	t.Parallel() // its own database files
	tests := []struct {
		name string
		in   map[string]float64
		want map[string]float64
	}{
		{"total from phases",
			map[string]float64{"activePowerPhaseA": 100, "activePowerPhaseB": 110, "activePowerPhaseC": 120, "apparentPowerPhaseA": 5},
			map[string]float64{"activePower": 330, "apparentPower": 5}},
		{"measured total kept", map[string]float64{"activePower": 1, "activePowerPhaseA": 100}, map[string]float64{"activePower": 1}},
		{"phase voltages from line-to-line",
			map[string]float64{"voltagePhaseA2B": 400, "voltagePhaseB2C": 401, "voltagePhaseC2A": 399},
			map[string]float64{"voltagePhaseA": 400 / math.Sqrt(3), "voltagePhaseB": 401 / math.Sqrt(3), "voltagePhaseC": 399 / math.Sqrt(3)}},
		{"line-to-line from phase voltages",
			map[string]float64{"voltagePhaseA": 230, "voltagePhaseB": 230},
			map[string]float64{"voltagePhaseA2B": 230 * math.Sqrt(3)}},
		{"nothing to derive from", map[string]float64{"gridFrequency": 50}, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := map[string]float64{}
			for k, x := range tt.in {
				v[k] = x
			}
			powerAcFallback(v)
			for k, w := range tt.want {
				if math.Abs(v[k]-w) > 1e-9 {
					t.Errorf("%s = %v, want %v", k, v[k], w)
				}
			}
			if len(v) != len(tt.in)+len(tt.want)-countIn(tt.in, tt.want) {
				t.Errorf("fields %v", v)
			}
			if _, ok := v["voltagePhaseB2C"]; ok && tt.name == "line-to-line from phase voltages" {
				t.Error("voltagePhaseB2C derived without voltagePhaseC")
			}
		})
	}
}

func countIn(a, b map[string]float64) int {
	n := 0
	for k := range b {
		if _, ok := a[k]; ok {
			n++
		}
	}
	return n
}

func TestRecent(t *testing.T) {
	t.Parallel() // its own database files
	s, day := seeded(t)
	end := day.Add(26 * time.Hour) // the last sample is at end − 1 min
	for _, tt := range []struct {
		q    plant.SetQuery
		rows int
	}{
		// The last minute has one sample at its start: it is still running
		// (partial values, no energy yet), so Recent ends before it.
		{plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance}, 59},
		{plant.SetQuery{DeviceID: "met", SetType: plant.SetEnergyAndPowerInOut, ReturnEnergyValues: true}, 59},
		{plant.SetQuery{DeviceID: "inv", SetType: plant.SetPowerAc}, 59},
	} {
		q := tt.q
		q.Period, q.WithTotal = plant.PeriodRecent, true
		res, err := s.QuerySet(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Resolution != plant.ResolutionOneMinute || len(res.Rows) != tt.rows {
			t.Fatalf("%+v: %s, %d rows, want %d", q, res.Resolution, len(res.Rows), tt.rows)
		}
		if first := res.Rows[0].Start; !first.Equal(end.Add(-time.Hour).UTC()) {
			t.Errorf("first row %v, want %v", first, end.Add(-time.Hour))
		}
		switch q.SetType {
		case plant.SetEnergyBalance:
			// 02:00 at night: 800 W of load, from battery and grid.
			if v := res.Rows[30].Values["totalConsumption"]; math.Abs(v-800) > 0.5 {
				t.Errorf("totalConsumption %v W", v)
			}
			if v := res.Total.Values["totalConsumption"]; math.Abs(v-800*59.0/60) > 0.5 {
				t.Errorf("total totalConsumption %v Wh", v)
			}
		case plant.SetEnergyAndPowerInOut:
			if v := res.Rows[30].Values["gridConsumption"]; math.Abs(v-400.0/60) > 0.01 {
				t.Errorf("gridConsumption %v Wh per minute", v)
			}
		case plant.SetPowerAc:
			if v := res.Rows[30].Values["voltagePhaseA"]; v != 230.1 {
				t.Errorf("voltagePhaseA %v", v)
			}
		}
	}
}

func TestRecordRefused(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{QueueLen: 2})
	m := Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: time.Now(),
		Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}
	bad := m
	bad.PlantID = "other"
	if s.Record(bad) {
		t.Error("measurement of an unknown plant accepted")
	}
	// Nothing runs the writer: the queue fills, and Record never blocks.
	if !s.Record(m) || !s.Record(m) {
		t.Fatal("queue of 2 refused the first two")
	}
	if s.Record(m) {
		t.Error("full queue accepted a measurement")
	}
	if !s.Record(Measurement{PlantID: "p1", DeviceID: "inv"}) {
		t.Error("a measurement without readings is accepted (and ignored)")
	}
	st := s.Stats()
	if st.Dropped != 2 || st.Queued != 2 {
		t.Errorf("stats %+v", st)
	}
	// Flush honours its context when nothing writes.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := s.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("flush without a writer: %v", err)
	}
}

func TestBadValues(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	stop := runStore(t, s)
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	record(t, s, Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: at, Readings: []plant.Reading{
		{Channel: plant.ActivePower, Value: math.NaN()},
		{Channel: plant.ReactivePower, Value: math.Inf(1)},
		{Channel: 0, Value: 1},
		{Channel: 200, Value: 1},
		{Channel: plant.VoltagePhaseA, Value: 230},
		{Channel: plant.VoltagePhaseA, Value: 231}, // the last of a duplicate wins
	}})
	stop()
	if st := s.Stats(); st.Written != 1 || st.Samples != 1 {
		t.Errorf("stats %+v", st)
	}
	res, err := s.QuerySet(t.Context(), plant.SetQuery{DeviceID: "inv", SetType: plant.SetPowerAc, Period: plant.PeriodDay, Date: at})
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Values["voltagePhaseA"] != 231 || len(res.Rows[0].Values) != 1 {
		t.Errorf("rows %+v, %v", res.Rows, err)
	}
}

func TestLogs(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1"}, {ID: "p2"}}, LogLimit: 40})
	stop := runStore(t, s)
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		e := plant.LogEntry{Time: t0.Add(time.Duration(i/2) * time.Minute), Level: plant.LevelWarning, Code: "C" + fmt.Sprint(i),
			Message: "m", PlantID: "p1"}
		if i%3 == 0 {
			e.DeviceID = "inv"
		}
		if i%5 == 0 {
			e.PlantID = "p2"
		}
		if !s.Log(e) {
			t.Fatal("log refused")
		}
	}
	if s.Log(plant.LogEntry{PlantID: "p1", Level: "debug"}) || s.Log(plant.LogEntry{Message: "no plant"}) {
		t.Error("bad entries accepted")
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Page through p1, newest first.
	var all []plant.LogEntry
	cursor := ""
	for page := 0; ; page++ {
		es, next, err := s.Logs(t.Context(), plant.LogQuery{PlantID: "p1", Cursor: cursor, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, es...)
		if next == "" {
			break
		}
		if page > 10 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	if len(all) != 40 {
		t.Errorf("%d entries of p1, want 40", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Time.After(all[i-1].Time) {
			t.Fatalf("entry %d newer than entry %d", i, i-1)
		}
	}
	seen := map[string]bool{}
	for _, e := range all {
		if seen[e.Code] || e.PlantID != "p1" {
			t.Fatalf("entry %+v repeated or of another plant", e)
		}
		seen[e.Code] = true
	}
	dev, _, err := s.Logs(t.Context(), plant.LogQuery{DeviceID: "inv", From: t0.Add(5 * time.Minute), To: t0.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dev {
		if e.DeviceID != "inv" || e.Time.Before(t0.Add(5*time.Minute)) || !e.Time.Before(t0.Add(10*time.Minute)) {
			t.Errorf("device query returned %+v", e)
		}
	}
	if len(dev) != 3 { // entries 12, 15 and 18
		t.Errorf("%d device entries in [5, 10) min, want 3", len(dev))
	}
	for _, q := range []plant.LogQuery{{PlantID: "p1", Cursor: "garbage"}, {PlantID: "p1", Limit: 5000}} {
		if _, _, err := s.Logs(t.Context(), q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%+v: %v, want ErrBadQuery", q, err)
		}
	}
	if _, _, err := s.Logs(t.Context(), plant.LogQuery{PlantID: "nope"}); !errors.Is(err, ErrUnknownPlant) {
		t.Errorf("unknown plant: %v", err)
	}
	// Bounded: retention keeps the newest LogLimit entries.
	stop()
	if _, err := s.w.retention(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	var n int
	s.rdb.Load().QueryRow(`SELECT count(*) FROM log`).Scan(&n)
	if n != 40 {
		t.Errorf("%d entries after retention, want the limit 40", n)
	}
}

func TestSchedulesAndOutbox(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	ctx := t.Context()
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	sched := func(id string, created time.Time, by string) plant.Schedule {
		return plant.Schedule{ScheduleID: id, PlantID: "p1", CreatedAt: created, CreatedBy: by,
			Commands: []plant.ScheduledCmd{{Command: "opModMaxLimW", Start: created, End: created.Add(time.Hour)}}}
	}
	for i, id := range []string{"b", "a", "c"} {
		if err := s.PutSchedule(ctx, sched(id, t0.Add(time.Duration(i)*time.Hour), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutSchedule(ctx, sched("a", t0.Add(5*time.Hour), "9")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Schedules(ctx, "p1")
	if err != nil || len(got) != 2 || got[0].ScheduleID != "b" || got[1].ScheduleID != "a" || got[1].CreatedBy != "9" || !got[1].CreatedAt.Equal(t0.Add(5*time.Hour)) ||
		!reflect.DeepEqual(got[1], sched("a", t0.Add(5*time.Hour), "9")) {
		t.Errorf("schedules %+v, %v", got, err)
	}
	if err := s.PutSchedule(ctx, plant.Schedule{ScheduleID: "x", PlantID: "nope"}); !errors.Is(err, ErrUnknownPlant) {
		t.Errorf("unknown plant: %v", err)
	}
	if err := s.PutSchedule(ctx, plant.Schedule{PlantID: "p1"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("no id: %v", err)
	}

	for i := range 5 {
		seq, err := s.Enqueue(ctx, "rollup", []byte{byte(i)})
		if err != nil || seq != uint64(i+1) {
			t.Fatalf("enqueue: %d, %v", seq, err)
		}
	}
	s.Enqueue(ctx, "log", []byte("x"))
	if err := s.Ack(ctx, "rollup", 3); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Peek(ctx, "rollup", 10)
	if err != nil || len(ms) != 2 || ms[0].Seq != 4 || ms[1].Payload[0] != 4 {
		t.Errorf("peek %+v, %v", ms, err)
	}
	// Sequence numbers are never reused, even after everything was acked.
	if err := s.Ack(ctx, "rollup", 5); err != nil {
		t.Fatal(err)
	}
	if seq, err := s.Enqueue(ctx, "rollup", nil); seq != 6 {
		t.Errorf("next seq %d, %v; want 6", seq, err)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	s := openTest(t, Config{RawRetention: 24 * time.Hour})
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	fillSynth(t, s, &synth{loc: loc}, day, day.AddDate(0, 0, 4), 5*time.Minute)
	countRaw := func() (n int, oldest int64) {
		s.rdb.Load().QueryRow(`SELECT coalesce(sum(n), 0), coalesce(min(t0), 0) FROM raw_chunk`).Scan(&n, &oldest)
		return
	}
	before, _ := countRaw()
	for more := true; more; {
		var err error
		if more, err = s.w.retention(t.Context(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	after, oldest := countRaw()
	newest := day.AddDate(0, 0, 4).Add(-5 * time.Minute)
	if want := newest.Add(-25 * time.Hour).UnixMilli(); oldest < want || oldest > want+10*60*1000 {
		t.Errorf("oldest raw sample %v, want about %v", time.UnixMilli(oldest), time.UnixMilli(want))
	}
	if after >= before {
		t.Errorf("%d raw rows before, %d after", before, after)
	}
	// Rollups are kept: the first day still answers.
	res, err := s.QuerySet(t.Context(), plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day})
	if err != nil || len(res.Rows) != 288 {
		t.Errorf("first day after retention: %d rows, %v", len(res.Rows), err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel() // its own database files
	for _, cfg := range []Config{
		{},
		{Path: "x.db", RawRetention: -time.Hour},
		{Path: "x.db", Plants: []PlantInfo{{ID: ""}}},
		{Path: "x.db", Plants: []PlantInfo{{ID: "a"}, {ID: "a"}}},
	} {
		if _, err := Open(t.Context(), cfg, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}

// TestDeviceMoves records a device under one plant and kind, then under
// another, while queries run: the catalog swaps device values, no race.
func TestDeviceMoves(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1"}, {ID: "p2"}}})
	stop := runStore(t, s)
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			s.QuerySet(context.Background(), plant.SetQuery{DeviceID: "x", SetType: plant.SetPowerAc, Period: plant.PeriodRecent})
			s.DeviceSets(context.Background(), "x")
		}
	}()
	for i := range 200 {
		m := Measurement{PlantID: "p1", DeviceID: "x", Kind: kind.Inverter, Time: at.Add(time.Duration(i) * time.Second),
			Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}
		if i%2 == 1 {
			m.PlantID, m.Kind = "p2", kind.Battery
		}
		record(t, s, m)
		if i%20 == 0 {
			s.Flush(t.Context())
		}
	}
	<-done
	stop()
	if d := s.cat.device("x"); d == nil || d.plant != "p2" || d.kind != kind.Battery {
		t.Errorf("device %+v", d)
	}
}

// TestRecordCopies: Record queues a copy of the readings, RecordOwned the
// caller's slice itself.
func TestRecordCopies(t *testing.T) {
	s := openTest(t, Config{QueueLen: 2})
	rs := []plant.Reading{{Channel: plant.ActivePower, Value: 1}}
	m := Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: time.Now(), Readings: rs}
	for _, tc := range []struct {
		name   string
		record func(Measurement) bool
		shared bool
	}{{"Record", s.Record, false}, {"RecordOwned", s.RecordOwned, true}} {
		if !tc.record(m) {
			t.Fatalf("%s refused", tc.name)
		}
		got := (<-s.queue).m.Readings
		if len(got) != 1 || got[0] != rs[0] {
			t.Errorf("%s queued %v, want %v", tc.name, got, rs)
		}
		if shared := &got[0] == &rs[0]; shared != tc.shared {
			t.Errorf("%s: queued slice is the caller's: %v, want %v", tc.name, shared, tc.shared)
		}
	}
}
