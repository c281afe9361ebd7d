package store

import (
	"database/sql"
	"encoding/binary"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/plant/kind"
)

// waitStats waits until the store's Stats satisfy ok (failing after a
// minute, a bound for a stuck writer, not a timing).
func waitStats(t *testing.T, s *Store, what string, ok func(Stats) bool) Stats {
	t.Helper()
	return proctest.WaitValue(t, what, time.Minute, func() (Stats, bool) {
		st := s.Stats()
		return st, ok(st)
	})
}

// TestChunkMinuteWritten: a device's first minute is written at every
// commit (its values show at once); after that, a device's samples of a
// minute are written as one chunk when its next minute begins, not at
// every commit; a device that stays quiet has its open minute written
// after idleRollup.
func TestChunkMinuteWritten(t *testing.T) {
	t.Parallel() // its own database files
	if testing.Short() {
		t.Skip("waits the 15 s of wall clock after which a quiet device's open minute is written")
	}
	s := openTest(t, Config{BatchInterval: 20 * time.Millisecond})
	runStore(t, s)
	syn := &synth{loc: mustZone(t, "Europe/Berlin")}
	m0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	minute := func(m time.Time, polls int) {
		for i := range polls {
			for _, x := range syn.step(m.Add(time.Duration(i) * 5 * time.Second)) {
				record(t, s, x)
			}
		}
	}
	minute(m0, 12)
	st := waitStats(t, s, "the first minute's batch committed", func(st Stats) bool { return st.Batches >= 1 && st.Queued == 0 })
	// On a loaded machine the minute's polls may reach the writer in
	// more than one batch; each commit writes the eager first minute
	// again, so Written counts it as often: what is stored is the test.
	if got := storedSamples(t, s); len(got) != 36 {
		t.Fatalf("the devices' first minute not written at the commit: %d samples stored, %+v", len(got), st)
	}
	w0 := st.Written
	m1 := m0.Add(time.Minute)
	minute(m1, 12)
	b := st.Batches
	st = waitStats(t, s, "the second minute's batch committed", func(st Stats) bool { return st.Batches > b && st.Queued == 0 })
	if st.Written != w0 {
		t.Fatalf("samples of an open minute written: %+v (%d written before)", st, w0)
	}
	minute(m1.Add(time.Minute), 1)
	waitStats(t, s, "the complete minute written", func(st Stats) bool { return st.Written >= w0+36 })
	got := storedSamples(t, s)
	if len(got) != 72 {
		t.Fatalf("%d samples stored, want the 72 of the complete minutes", len(got))
	}
	for _, smp := range got {
		if m := minuteOf(smp.t); m != m0.UnixMilli() && m != m1.UnixMilli() {
			t.Errorf("sample at %v stored with the complete minutes' chunks", time.UnixMilli(smp.t).UTC())
		}
	}
	var rows int
	if err := s.rdb.Load().QueryRow(`SELECT count(*) FROM raw_chunk`).Scan(&rows); err != nil || rows != 6 {
		t.Errorf("%d chunk rows (%v), want one per device and minute", rows, err)
	}
	// Nothing more arrives: after idleRollup the open minute is written
	// too (this waits the 15 s of wall clock).
	waitStats(t, s, "the quiet devices' open minute written", func(st Stats) bool { return st.Written == w0+39 })
	if got := storedSamples(t, s); len(got) != 75 {
		t.Errorf("%d samples stored after the idle write, want 75", len(got))
	}
}

// r5mCount is the sample count of a device's 5-minute row at t (0: none).
func r5mCount(t *testing.T, s *Store, dev string, at time.Time) int64 {
	t.Helper()
	var v []byte
	err := s.rdb.Load().QueryRow(`SELECT r.v FROM r5m r JOIN device d ON d.id = r.src WHERE d.name = ? AND d.kind != 'plant' AND r.t = ?`,
		dev, at.UnixMilli()).Scan(&v)
	if err == sql.ErrNoRows {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := decodeAggs(v, s.cat, func(int64, agg) {})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChunkLateSample: samples that arrive for a minute already written
// are merged into its chunk (a new time added in order, a repeated time
// replaced), and the interval is rolled up again.
func TestChunkLateSample(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	runStore(t, s)
	syn := &synth{loc: mustZone(t, "Europe/Berlin")}
	m0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, off := range []time.Duration{0, 10, 20, 30, 40, 50, 60, 400} {
		for _, m := range syn.step(m0.Add(off * time.Second)) {
			record(t, s, m)
		}
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := r5mCount(t, s, "inv", m0); n != 7 {
		t.Fatalf("5-minute row of %v: %d samples, want 7", m0, n)
	}
	late := func(off time.Duration, w float64) Measurement {
		return Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: m0.Add(off),
			Readings: []plant.Reading{{Channel: plant.ActivePower, Value: w}}}
	}
	record(t, s, late(25*time.Second, 1234.5))
	record(t, s, late(10*time.Second, 777))
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var times []int64
	vals := map[int64][]chVal{}
	invID := s.cat.device("inv").id
	for _, smp := range storedSamples(t, s) {
		if smp.dev == invID && minuteOf(smp.t) == m0.UnixMilli() {
			times = append(times, (smp.t-m0.UnixMilli())/1000)
			vals[smp.t] = smp.vals
		}
	}
	if want := []int64{0, 10, 20, 25, 30, 40, 50}; !reflect.DeepEqual(times, want) {
		t.Errorf("inverter's samples of the first minute at %v s, want %v", times, want)
	}
	if v := vals[m0.Add(10*time.Second).UnixMilli()]; len(v) != 1 || v[0].v != 777 {
		t.Errorf("the sample at 10 s replaced: %v, want activePower 777 alone", v)
	}
	if n := r5mCount(t, s, "inv", m0); n != 8 {
		t.Errorf("5-minute row after the late sample: %d samples, want 8", n)
	}
}

// TestMigrateRawChunks: a database in the layout of schema version 3 (a
// raw row per poll, made with migration 1's own CREATE TABLE raw and the
// row format of that version) opens as version 4 with every sample in
// chunks, and answers as before.
func TestMigrateRawChunks(t *testing.T) {
	t.Parallel() // its own database files
	path := filepath.Join(t.TempDir(), "plantd.db")
	loc := mustZone(t, "Europe/Berlin")
	s := openTest(t, Config{Path: path})
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	fillSynth(t, s, &synth{loc: loc}, day.Add(10*time.Hour), day.Add(13*time.Hour), 7*time.Second)
	type rs struct {
		dev, t int64
		sv     []sidVal
	}
	var old []rs
	err := s.scanChunks(t.Context(), s.rdb.Load(), `SELECT t0, device, v FROM raw_chunk ORDER BY id`, nil, math.MinInt64, math.MaxInt64, false, nil,
		func(dev, ts int64, sv []sidVal) bool {
			old = append(old, rs{dev, ts, append([]sidVal(nil), sv...)})
			return true
		})
	if err != nil || len(old) != 3*int(3*time.Hour/(7*time.Second)+1) {
		t.Fatalf("%d samples (%v)", len(old), err)
	}
	queries := []plant.SetQuery{
		{DeviceID: "inv", SetType: plant.SetEnergyAndPowerPv}, // Recent: from raw samples
		{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day},
		{DeviceID: "met", SetType: plant.SetPowerAc, Period: plant.PeriodDay, Date: day},
	}
	var before []plant.SetResult
	for _, q := range queries {
		res, err := s.QuerySet(t.Context(), q)
		if err != nil || len(res.Rows) == 0 {
			t.Fatalf("%+v: %d rows, %v", q, len(res.Rows), err)
		}
		before = append(before, res)
	}
	s.Close()

	// Back to version 3: the raw table as migration 1 made it, a row per
	// poll in that version's format, and none of migration 5's and 6's
	// tables nor migration 7's column.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	m1 := migrations[1]
	create := m1[strings.Index(m1, "CREATE TABLE raw (") : strings.Index(m1, ") WITHOUT ROWID;\n\n-- rollups")+len(") WITHOUT ROWID;")]
	for _, q := range []string{create, `DROP TABLE raw_chunk`, `DROP TABLE consumer_guard`, `DROP TABLE price`, `ALTER TABLE device DROP COLUMN measures`, `PRAGMA user_version = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var want []rs
	for _, r := range old {
		var b []byte
		prev := int64(0)
		w := rs{r.dev, r.t, nil}
		for _, x := range r.sv {
			b = binary.AppendUvarint(b, uint64(x.sid-prev))
			prev = x.sid
			b = appendDec(b, x.v)
			v, _, _ := readDec(appendDec(nil, x.v))
			w.sv = append(w.sv, sidVal{x.sid, v}) // what version 3 answered
		}
		want = append(want, w)
		if _, err := db.Exec(`INSERT INTO raw (t, device, v) VALUES (?, ?, ?)`, r.t, r.dev, b); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s2 := openTest(t, Config{Path: path})
	if v, err := userVersion(t.Context(), s2.rdb.Load()); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d (%v) after migrating, want %d", v, err, SchemaVersion)
	}
	var got []rs
	err = s2.scanChunks(t.Context(), s2.rdb.Load(), `SELECT t0, device, v FROM raw_chunk ORDER BY id`, nil, math.MinInt64, math.MaxInt64, false, nil,
		func(dev, ts int64, sv []sidVal) bool {
			got = append(got, rs{dev, ts, append([]sidVal(nil), sv...)})
			return true
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples after migrating, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].dev != want[i].dev || got[i].t != want[i].t || !reflect.DeepEqual(got[i].sv, want[i].sv) {
			t.Fatalf("sample %d after migrating: %+v, want %+v", i, got[i], want[i])
		}
	}
	var tables int
	s2.rdb.Load().QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'raw'`).Scan(&tables)
	if tables != 0 {
		t.Error("the raw table is still there")
	}
	for i, q := range queries {
		res, err := s2.QuerySet(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(before[i].Rows) {
			t.Fatalf("%+v: %d rows after migrating, %d before", q, len(res.Rows), len(before[i].Rows))
		}
		for j, r := range res.Rows {
			b := before[i].Rows[j]
			if !r.Start.Equal(b.Start) || len(r.Values) != len(b.Values) {
				t.Fatalf("%+v row %d: %v %v after, %v %v before", q, j, r.Start, r.Values, b.Start, b.Values)
			}
			for k, v := range r.Values {
				if !within(v, b.Values[k], 1e-9, 1e-9) {
					t.Errorf("%+v row %d %s: %v after migrating, %v before", q, j, k, v, b.Values[k])
				}
			}
		}
	}
}

// TestRecentUnwritten: Recent ends at the last complete minute although
// the device's newest samples are in its open minute, not yet written
// (the writer shows Recent each device's newest sample in its open minute
// as of each commit), with the complete minutes' values.
func TestRecentUnwritten(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{BatchInterval: 20 * time.Millisecond})
	runStore(t, s)
	m0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	// Four minutes at 1 s, activePower the minute's number, and the
	// first sample of the fifth: minutes 0..3 are complete and written,
	// minute 4 is open. The first sample is committed alone: a device's
	// first minute is written at every commit (TestChunkMinuteWritten),
	// the later ones when complete.
	poll := func(i int) {
		record(t, s, Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: m0.Add(time.Duration(i) * time.Second),
			Readings: []plant.Reading{{Channel: plant.ActivePower, Value: float64(i / 60)}}})
	}
	poll(0)
	waitStats(t, s, "the first sample committed", func(st Stats) bool { return st.Written == 1 })
	for i := 1; i <= 4*60; i++ {
		poll(i)
	}
	// The commit that wrote the complete minutes also showed Recent the
	// open one's newest sample (the open minute is written only after
	// idleRollup, 15 s later).
	waitStats(t, s, "the complete minutes written", func(st Stats) bool { return st.Written == 4*60 })
	res, err := s.QuerySet(t.Context(), plant.SetQuery{DeviceID: "inv", SetType: plant.SetPowerAc, Period: plant.PeriodRecent})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Rows
	if len(rows) != 4 || !rows[0].Start.Equal(m0.UTC()) {
		t.Fatalf("Recent's rows %v, want the 4 complete minutes from %v", starts(rows), m0.Format("15:04"))
	}
	for i, r := range rows {
		if v := r.Values["activePower"]; v != float64(i) {
			t.Errorf("minute %d: activePower %v, want %d", i, v, i)
		}
	}
}

func starts(rows []plant.SetRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Start.Format("15:04")
	}
	return out
}

// TestWrittenCountsRows: Stats.Written counts the samples the rows
// gained, so that a repeated time (which replaces the stored sample)
// counts once, within one batch and across two; a kill -9 test compares
// the count with the rows' sum.
func TestWrittenCountsRows(t *testing.T) {
	t.Parallel() // its own database file
	s := openTest(t, Config{BatchInterval: 10 * time.Millisecond})
	runStore(t, s)
	syn := &synth{loc: time.UTC}
	m0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	ms := syn.step(m0)
	for _, m := range ms {
		record(t, s, m)
		record(t, s, m) // the same time again, in the same batch
	}
	waitStats(t, s, "the first batch", func(st Stats) bool { return st.Batches >= 1 && st.Queued == 0 })
	for _, m := range ms {
		record(t, s, m) // ... and in a later one
	}
	for _, m := range syn.step(m0.Add(time.Minute)) {
		record(t, s, m) // the next minute begins: the first one's rows are written
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := waitStats(t, s, "all batches", func(st Stats) bool { return st.Queued == 0 })
	got := storedSamples(t, s)
	if st.Written != uint64(len(got)) {
		t.Fatalf("Stats.Written %d, rows hold %d samples", st.Written, len(got))
	}
	if want := 2 * len(ms); len(got) != want {
		t.Fatalf("%d samples stored, want %d (one per device and time)", len(got), want)
	}
}
