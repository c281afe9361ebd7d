package store

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
)

// benchPlant is a 20-device plant whose readings have the channels the
// demo plant's devices give through plant.Live at noon (classic and DER
// inverters, meters, a battery, a sensor), with values that move a little
// every poll and counters that count; at night (night set) the powers
// are 0 and the counters stand still, as the simulator's inverters give
// them after sunset.
type benchPlant struct {
	devs  []*benchDev
	night bool
}

type benchDev struct {
	id   string
	kind kind.Kind
	tmpl []plant.Reading
	cur  []plant.Reading
}

// newBenchPlant polls the simulated plant once at noon for the channel
// sets and values of each kind.
func newBenchPlant(b testing.TB) *benchPlant {
	b.Helper()
	loc := mustZone(b, sim.DefaultTimeZone)
	noon := time.Date(2026, 6, 21, 12, 0, 0, 0, loc)
	tmpl := map[string][]plant.Reading{} // by the simulator's label
	kinds := map[string]kind.Kind{}
	func() {
		r := startSimB(b, noon)
		for _, sd := range r.devs {
			models, err := sd.plan.Read(context.Background(), sd.client)
			if err != nil {
				b.Fatal(err)
			}
			r.applyB(sd, models, noon)
			dl, _ := r.live.Device(sd.dev.ID())
			tmpl[sd.dev.Label()] = dl.Readings
			kinds[sd.dev.Label()] = sd.kind
		}
	}()
	layout := []string{}
	for range 8 {
		layout = append(layout, "inverter", "der-inverter")
	}
	layout = append(layout, "meter", "meter", "battery", "sensor")
	bp := &benchPlant{}
	for i, k := range layout {
		bp.devs = append(bp.devs, &benchDev{id: fmt.Sprintf("d%02d-%s", i, k), kind: kinds[k],
			tmpl: tmpl[k], cur: slices.Clone(tmpl[k])})
	}
	return bp
}

// measurement returns device i's poll number tick at t: values moved by a
// slow wave (rounded to the resolution SunSpec gives them), counters
// advanced by 5 s of power.
func (bp *benchPlant) measurement(i int, tick int64, t time.Time) Measurement {
	d := bp.devs[i]
	if bp.night {
		return Measurement{PlantID: "p1", DeviceID: d.id, Kind: d.kind, Time: t, Readings: d.nightReadings()}
	}
	return Measurement{PlantID: "p1", DeviceID: d.id, Kind: d.kind, Time: t, Readings: d.readings(i, tick)}
}

// nightReadings gives the device's values with every power 0 and the
// counters where they stand.
func (d *benchDev) nightReadings() []plant.Reading {
	for j, r := range d.tmpl {
		c := &d.cur[j]
		c.Value = r.Value
		if u := r.Channel.Unit(); !r.Channel.Counter() && (u == plant.UnitW || u == plant.UnitVA || u == plant.UnitVar) {
			c.Value = 0
		}
	}
	return d.cur
}

// readings moves the device's values to poll number tick.
func (d *benchDev) readings(i int, tick int64) []plant.Reading {
	f := 1 + 0.05*math.Sin(float64(tick)/97+float64(i))
	for j, r := range d.tmpl {
		c := &d.cur[j]
		switch {
		case r.Channel.Counter():
			c.Value = math.Floor(r.Value + float64(tick)*5*math.Abs(f)*1000/3600)
		case r.Channel.Unit() == plant.UnitW || r.Channel.Unit() == plant.UnitVA || r.Channel.Unit() == plant.UnitVar:
			c.Value = math.Round(r.Value * f)
		default:
			c.Value = math.Round(r.Value*(1+(f-1)/50)*100) / 100
		}
	}
	return d.cur
}

// BenchmarkIngest records the 20-device plant polled every 5 s at full
// speed, with the rollups that the advancing data time causes and the
// final flush, and reports the sustained rate in samples (channel values)
// per second.
func BenchmarkIngest(b *testing.B) {
	bp := newBenchPlant(b)
	s := openTest(b, Config{QueueLen: DefaultQueueLen})
	stop := runStore(b, s)
	t0 := time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC)
	n := len(bp.devs)
	samples := 0
	b.ResetTimer()
	for i := range b.N {
		tick := int64(i / n)
		m := bp.measurement(i%n, tick, t0.Add(time.Duration(tick)*5*time.Second))
		samples += len(m.Readings)
		for !s.Record(m) {
			s.Flush(context.Background())
		}
	}
	stop()
	b.StopTimer()
	st := s.Stats()
	if st.Failed != 0 || st.Written != uint64(b.N) {
		b.Fatalf("stats %+v", st)
	}
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(samples)/float64(b.N), "samples/measurement")
}

// BenchmarkQuery answers queries on a 20-device plant holding a year of
// 5-minute rollups (with their hourly and daily rows), written directly,
// and the last hour of raw samples (every device every 5 s, recorded),
// which Recent reads.
func BenchmarkQuery(b *testing.B) {
	bp := newBenchPlant(b)
	loc := mustZone(b, "Europe/Berlin")
	s := openTest(b, Config{Plants: []PlantInfo{{ID: "p1", Location: loc}}})
	year := 2025
	start := time.Now()
	rows := buildYear(b, s, bp, loc, year)
	ctx := context.Background()
	stop := runStore(b, s)
	now := time.Now().Truncate(5 * time.Second)
	for tick := int64(0); tick < 720; tick++ {
		for i := range bp.devs {
			record(b, s, bp.measurement(i, tick, now.Add(time.Duration(tick-720)*5*time.Second)))
		}
	}
	stop()
	b.Logf("fixture: %d rollup rows and an hour of raw samples in %v", rows, time.Since(start).Round(time.Millisecond))
	day := time.Date(year, 6, 21, 0, 0, 0, 0, time.UTC)
	// Total has a row per year with data (resolution OneYear): the year
	// built, and the years of the last hour's raw samples, which the
	// store rolls up too.
	years := map[int]bool{year: true}
	for _, t := range []time.Time{now.Add(-time.Hour), now} {
		years[t.In(loc).Year()] = true
	}
	totalRows := len(years)
	for _, bq := range []struct {
		name string
		q    plant.SetQuery
		rows int
	}{
		{"Year", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodYear, Date: day, WithTotal: true}, 12},
		{"Day", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day, WithTotal: true}, 288},
		{"Week", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodWeek, Date: day, WithTotal: true}, 168},
		{"Month", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodMonth, Date: day, WithTotal: true}, 30},
		{"Total", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodTotal, WithTotal: true}, totalRows},
		{"DayDevicePowerAc", plant.SetQuery{DeviceID: bp.devs[1].id, SetType: plant.SetPowerAc, Period: plant.PeriodDay, Date: day}, 288},
		{"WeekDevicePowerAc", plant.SetQuery{DeviceID: bp.devs[1].id, SetType: plant.SetPowerAc, Period: plant.PeriodWeek, Date: day}, 672},
		{"YearDevicePv", plant.SetQuery{DeviceID: bp.devs[0].id, SetType: plant.SetEnergyAndPowerPv, Period: plant.PeriodYear, Date: day, WithTotal: true}, 12},
		{"RecentDevicePowerAc", plant.SetQuery{DeviceID: bp.devs[1].id, SetType: plant.SetPowerAc}, 59},
		{"RecentPlant", plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance}, 59},
	} {
		b.Run(bq.name, func(b *testing.B) {
			for range b.N {
				res, err := s.QuerySet(ctx, bq.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Rows) != bq.rows {
					b.Fatalf("%d rows, want %d", len(res.Rows), bq.rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/query")
		})
	}
}

// buildYear writes a year of rollups of the plant's devices and balance:
// 5-minute rows with every channel of a device, and the hourly and daily
// rows merged from them, in one transaction.
func buildYear(b testing.TB, s *Store, bp *benchPlant, loc *time.Location, year int) int {
	b.Helper()
	ctx := context.Background()
	db := s.wdb.Load()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	adds := txAdds{c: s.cat}
	type src struct {
		dev  *device
		sids []int64 // per template reading; balance: per field
		bal  bool
		b    *benchDev
	}
	var srcs []*src
	for _, d := range bp.devs {
		dev, err := adds.ensureDevice(ctx, tx, d.id, "p1", d.kind, "")
		if err != nil {
			b.Fatal(err)
		}
		x := &src{dev: dev, b: d}
		for _, r := range d.tmpl {
			k := chKey{r.Channel, int32(r.Index)}
			if r.Channel.Counter() {
				// Its energy goes to the field's series.
				if r.Channel == plant.DCEnergyInput {
					k = chKey{plant.DCEnergyInput, int32(r.Index)}
				} else {
					c, _ := plant.ChannelByName(r.Channel.Field())
					k = chKey{c, 0}
				}
			}
			se, err := adds.ensureChan(ctx, tx, dev, k)
			if err != nil {
				b.Fatal(err)
			}
			x.sids = append(x.sids, se.id)
		}
		srcs = append(srcs, x)
	}
	ps, err := adds.ensurePlantSrc(ctx, tx, "p1")
	if err != nil {
		b.Fatal(err)
	}
	pb := &src{dev: ps, bal: true}
	for f := range numBal {
		se, err := adds.ensureBal(ctx, tx, ps, f)
		if err != nil {
			b.Fatal(err)
		}
		pb.sids = append(pb.sids, se.id)
	}
	srcs = append(srcs, pb)
	ins := map[string]*sql.Stmt{}
	for _, table := range []string{"r5m", "r1h", "r1d"} {
		if ins[table], err = tx.PrepareContext(ctx, `INSERT INTO `+table+` (src, t, v) VALUES (?, ?, ?)`); err != nil {
			b.Fatal(err)
		}
	}
	rows := 0
	var buf []byte
	put := func(table string, x *src, t, n int64, m map[int64]*agg) {
		es := make([]aggEntry, 0, len(m))
		for sid, a := range m {
			es = append(es, aggEntry{sid: sid, a: *a})
		}
		slices.SortFunc(es, func(a, b aggEntry) int { return cmp.Compare(a.sid, b.sid) })
		buf = encodeAggs(buf[:0], n, es, s.cat)
		if _, err := ins[table].ExecContext(ctx, x.dev.id, t, buf); err != nil {
			b.Fatal(err)
		}
		rows++
	}
	from := time.Date(year, 1, 1, 0, 0, 0, 0, loc).UnixMilli()
	to := time.Date(year+1, 1, 1, 0, 0, 0, 0, loc).UnixMilli()
	for _, x := range srcs {
		hour, day := map[int64]*agg{}, map[int64]*agg{}
		var hourN, dayN int64
		curH, curD := hourStart(from, loc), from
		for t := from; t <= to; t += bucketMs {
			if h := hourStart(t, loc); h != curH || t == to {
				put("r1h", x, curH, hourN, hour)
				for sid, a := range hour {
					if day[sid] == nil {
						day[sid] = &agg{}
					}
					day[sid].merge(*a)
				}
				dayN += hourN
				hour, hourN, curH = map[int64]*agg{}, 0, h
				if ds, _ := dayBounds(t, loc); ds != curD || t == to {
					put("r1d", x, curD, dayN, day)
					day, dayN, curD = map[int64]*agg{}, 0, ds
				}
			}
			if t == to {
				break
			}
			m := map[int64]*agg{}
			n := int64(60) // 5 minutes of 5-second polls
			if x.bal {
				for f, sid := range x.sids {
					a := &agg{}
					if balField(f) == balSoC {
						a.add(50 + 40*math.Sin(float64(t)/3.6e6))
					} else {
						a.addE(100 * (1 + math.Sin(float64(t)/1e6+float64(f))))
					}
					m[sid] = a
				}
				n = 1
			} else {
				for j, r := range x.b.readings(0, t/5000) {
					a := m[x.sids[j]]
					if a == nil {
						a = &agg{}
						m[x.sids[j]] = a
					}
					if r.Channel.Counter() {
						a.addE(r.Value / 1e4)
						continue
					}
					a.n, a.sum, a.min, a.max = n, r.Value*float64(n), r.Value*0.9, r.Value*1.1
				}
			}
			put("r5m", x, t, n, m)
			for sid, a := range m {
				if hour[sid] == nil {
					hour[sid] = &agg{}
				}
				hour[sid].merge(*a)
			}
			hourN += n
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	adds.commit()
	return rows
}

// BenchmarkDeviceDay records one simulated day of the 20-device plant at
// the daemon's cadence (every device every 5 s, staggered) with a commit
// every 1, 5 or 30 s of data (what the BatchInterval timer does at that
// setting; 1 s is the default), and reports the bytes per device-day of
// raw samples and of rollups, the projection for a year (7 days of raw
// samples and 365 days of rollups) and the bytes written to the disk per
// sample. Run it with -benchtime=1x.
func BenchmarkDeviceDay(b *testing.B) {
	bp := newBenchPlant(b)
	for _, every := range []int64{1, 5, 30} {
		b.Run(fmt.Sprintf("commit=%ds", every), func(b *testing.B) { benchDeviceDay(b, bp, every) })
	}
}

func benchDeviceDay(b *testing.B, bp *benchPlant, commitEvery int64) {
	n := len(bp.devs)
	for range b.N {
		dir := b.TempDir()
		path := filepath.Join(dir, "plantd.db")
		s := openTest(b, Config{Path: path, BatchInterval: time.Hour})
		stop := runStore(b, s)
		t0 := time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC)
		ctx := context.Background()
		runtime.GC()
		w0 := procIO(b)
		samples := 0
		const perSecond = 4 // 20 devices every 5 s
		for sec := range int64(86400) {
			for j := range perSecond {
				i := int(sec%5)*perSecond + j
				m := bp.measurement(i, sec/5, t0.Add(time.Duration(sec)*time.Second+time.Duration(j)*250*time.Millisecond))
				samples += len(m.Readings)
				if !s.Record(m) {
					b.Fatal("refused")
				}
			}
			if sec%commitEvery == commitEvery-1 {
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		stop()
		w1 := procIO(b)
		st := s.Stats()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		total := fileSize(b, path) + fileSize(b, path+"-wal")
		compact := vacuumSize(b, path, dir, "all.db", false)
		rollups := vacuumSize(b, path, dir, "rollups.db", true)
		raw := compact - rollups
		perDevRaw := float64(raw) / float64(n)
		perDevRoll := float64(rollups) / float64(n)
		yearGB := (perDevRaw*7 + perDevRoll*365) * float64(n) / 1e9
		b.ReportMetric(float64(compact)/float64(n), "bytes/device-day")
		b.ReportMetric(perDevRaw, "raw-bytes/device-day")
		b.ReportMetric(perDevRoll, "rollup-bytes/device-day")
		b.ReportMetric(yearGB, "GB/year-20-devices")
		b.ReportMetric(float64(w1.writeBytes-w0.writeBytes)/float64(samples), "disk-bytes-written/sample")
		b.ReportMetric(float64(w1.wchar-w0.wchar)/float64(samples), "bytes-written()/sample")
		b.ReportMetric(float64(samples)/float64(st.Written), "samples/measurement")
		b.Logf("day: %d measurements, %d samples, %d batches; file %d B (compacted %d B: raw %d B, rollups %d B); written %d B (write_bytes), %d B (wchar)",
			st.Written, samples, st.Batches, total, compact, raw, rollups, w1.writeBytes-w0.writeBytes, w1.wchar-w0.wchar)
	}
}

type ioCounters struct{ wchar, writeBytes int64 }

// procIO reads this process's I/O counters: wchar (bytes passed to
// write(2)) and write_bytes (bytes the process caused to be sent to the
// block device, counted when pages are dirtied).
func procIO(b *testing.B) ioCounters {
	b.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	defer f.Close()
	var c ioCounters
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "wchar":
			c.wchar = n
		case "write_bytes":
			c.writeBytes = n
		}
	}
	return c
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// vacuumSize copies the database compacted (without its raw samples when
// noRaw) and returns the copy's size.
func vacuumSize(b *testing.B, path, dir, name string, noRaw bool) int64 {
	b.Helper()
	dst := filepath.Join(dir, name)
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`VACUUM INTO ?`, dst); err != nil {
		b.Fatal(err)
	}
	if noRaw {
		c, err := sql.Open("sqlite3", "file:"+dst)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{`DELETE FROM raw_chunk`, `VACUUM`} {
			if _, err := c.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	}
	return fileSize(b, dst)
}

// BenchmarkLayout compares, in plain SQL, the raw layout of the issue (a
// row per sample, WITHOUT ROWID, keyed (series, t)) with the store's (a row
// per poll with its values packed, keyed (t, device)): an hour of the
// 20-device plant at the daemon's cadence (4 polls committed per second).
// It reports the file size and the bytes written per sample. Run it with
// -benchtime=1x.
func BenchmarkLayout(b *testing.B) {
	bp := newBenchPlant(b)
	t0 := time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, layout := range []string{"series-time rows", "packed polls"} {
		b.Run(layout, func(b *testing.B) {
			for range b.N {
				path := filepath.Join(b.TempDir(), "x.db")
				db, err := openWriter(context.Background(), path)
				if err != nil {
					b.Fatal(err)
				}
				schema := `CREATE TABLE raw (series INTEGER NOT NULL, t INTEGER NOT NULL, v REAL NOT NULL, PRIMARY KEY (series, t)) WITHOUT ROWID`
				ins := `INSERT INTO raw (series, t, v) VALUES (?, ?, ?)`
				if layout == "packed polls" {
					schema = `CREATE TABLE raw (t INTEGER NOT NULL, device INTEGER NOT NULL, v BLOB NOT NULL, PRIMARY KEY (t, device)) WITHOUT ROWID`
					ins = `INSERT INTO raw (t, device, v) VALUES (?, ?, ?)`
				}
				if _, err := db.Exec(schema); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				w0 := procIO(b)
				samples := 0
				var buf []byte
				for sec := range int64(3600) {
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					st, _ := tx.Prepare(ins)
					for j := range 4 {
						i := int(sec%5)*4 + j
						t := t0 + sec*1000 + int64(j)*250
						rs := bp.devs[i].readings(i, sec/5)
						samples += len(rs)
						if layout == "packed polls" {
							buf = buf[:0]
							for _, r := range rs {
								buf = binary.AppendUvarint(buf, 1)
								buf = appendDec(buf, r.Value)
							}
							if _, err := st.Exec(t, i, buf); err != nil {
								b.Fatal(err)
							}
							continue
						}
						for k, r := range rs {
							if _, err := st.Exec(i*64+k, t, r.Value); err != nil {
								b.Fatal(err)
							}
						}
					}
					st.Close()
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				w1 := procIO(b)
				db.Close()
				b.ReportMetric(float64(w1.writeBytes-w0.writeBytes)/float64(samples), "disk-bytes-written/sample")
				b.ReportMetric(float64(fileSize(b, path))/float64(samples), "file-bytes/sample")
			}
		})
	}
}

// TestYearFixture writes the year of BenchmarkQuery (a 20-device plant
// "p1", 2025) into the database file $PLANTD_YEAR_DB, for benchmarking the
// HTTP API of the real binary on it (scripts/bench-year.yaml). Skipped
// without the variable.
func TestYearFixture(t *testing.T) {
	path := os.Getenv("PLANTD_YEAR_DB")
	if path == "" {
		t.Skip("set PLANTD_YEAR_DB=FILE to write a year of a 20-device plant into FILE")
	}
	bp := newBenchPlant(t)
	loc := mustZone(t, "Europe/Berlin")
	s, err := Open(context.Background(), Config{Path: path, Plants: []PlantInfo{{ID: "p1", Location: loc}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := buildYear(t, s, bp, loc, 2025)
	t.Logf("%d rollup rows written to %s", rows, path)
}

// BenchmarkQuickCheck times the integrity check (PRAGMA quick_check, on a
// read-only connection as at Open and daily) of a year of a 20-device
// plant: the rollups of BenchmarkQuery plus 7 days of raw polls every 5 s.
func BenchmarkQuickCheck(b *testing.B) {
	bp := newBenchPlant(b)
	loc := mustZone(b, "Europe/Berlin")
	path := filepath.Join(b.TempDir(), "plantd.db")
	s := openTest(b, Config{Path: path, Plants: []PlantInfo{{ID: "p1", Location: loc}}, QueueLen: DefaultQueueLen})
	buildYear(b, s, bp, loc, 2025)
	stop := runStore(b, s)
	t0 := time.Date(2025, 12, 24, 0, 0, 0, 0, time.UTC)
	n := len(bp.devs)
	for tick := range int64(7 * 24 * 720) {
		for i := range n {
			m := bp.measurement(i, tick, t0.Add(time.Duration(tick)*5*time.Second))
			for !s.Record(m) {
				s.Flush(context.Background())
			}
		}
	}
	stop()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := s.quickCheck(context.Background(), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size())/1e6, "MB")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
}
