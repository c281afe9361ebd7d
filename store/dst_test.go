package store

import (
	"testing"
	"time"

	"plantd/plant"
)

// fillSynth records the synthetic plant every step over [from, to) and
// stops the store, so that every interval is rolled up.
func fillSynth(t *testing.T, s *Store, sy *synth, from, to time.Time, step time.Duration) {
	t.Helper()
	stop := runStore(t, s)
	for tt := from; tt.Before(to); tt = tt.Add(step) {
		for _, m := range sy.step(tt) {
			record(t, s, m)
		}
	}
	stop()
	if st := s.Stats(); st.Dropped != 0 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDST(t *testing.T) {
	t.Parallel() // its own database files
	type check struct {
		name      string
		q         plant.SetQuery
		rows      int
		res       string
		firstUTC  string // Start of the first row
		step      time.Duration
		hourCheck bool
		localHour int // rows whose local hour is localHour ...
		nHour     int // ... number nHour
	}
	tests := []struct {
		zone   string
		spans  [][2]string // local dates [from, to)
		checks []check
	}{
		{
			zone:  "Europe/Berlin",
			spans: [][2]string{{"2026-03-22", "2026-03-31"}, {"2026-06-10", "2026-06-11"}, {"2026-10-24", "2026-10-27"}},
			checks: []check{
				{name: "23-hour day", q: plant.SetQuery{Period: plant.PeriodDay, Date: date("2026-03-29")},
					rows: 276, res: plant.ResolutionFiveMinutes, firstUTC: "2026-03-28T23:00:00Z", step: 5 * time.Minute, hourCheck: true, localHour: 2, nHour: 0},
				{name: "25-hour day", q: plant.SetQuery{Period: plant.PeriodDay, Date: date("2026-10-25")},
					rows: 300, res: plant.ResolutionFiveMinutes, firstUTC: "2026-10-24T22:00:00Z", step: 5 * time.Minute, hourCheck: true, localHour: 2, nHour: 24},
				{name: "24-hour day", q: plant.SetQuery{Period: plant.PeriodDay, Date: date("2026-06-10")},
					rows: 288, res: plant.ResolutionFiveMinutes, firstUTC: "2026-06-09T22:00:00Z", step: 5 * time.Minute},
				{name: "week with total in hours", q: plant.SetQuery{Period: plant.PeriodWeek, Date: date("2026-03-25"), WithTotal: true},
					rows: 7*24 - 1, res: plant.ResolutionOneHour, firstUTC: "2026-03-22T23:00:00Z", step: time.Hour},
				{name: "week in quarter hours", q: plant.SetQuery{Period: plant.PeriodWeek, Date: date("2026-03-29")},
					rows: (7*24 - 1) * 4, res: plant.ResolutionFifteenMinutes, firstUTC: "2026-03-22T23:00:00Z", step: 15 * time.Minute},
				{name: "month of days", q: plant.SetQuery{Period: plant.PeriodMonth, Date: date("2026-03-01")},
					rows: 9, res: plant.ResolutionOneDay, firstUTC: "2026-03-21T23:00:00Z"},
				{name: "year of months", q: plant.SetQuery{Period: plant.PeriodYear, Date: date("2026-12-31")},
					rows: 3, res: plant.ResolutionOneMonth, firstUTC: "2026-02-28T23:00:00Z"},
				{name: "total of years", q: plant.SetQuery{Period: plant.PeriodTotal},
					rows: 1, res: plant.ResolutionOneYear, firstUTC: "2025-12-31T23:00:00Z"},
			},
		},
		{
			zone:  "Australia/Adelaide",
			spans: [][2]string{{"2026-04-04", "2026-04-07"}, {"2026-10-03", "2026-10-06"}},
			checks: []check{
				{name: "25-hour day", q: plant.SetQuery{Period: plant.PeriodDay, Date: date("2026-04-05")},
					rows: 300, res: plant.ResolutionFiveMinutes, firstUTC: "2026-04-04T13:30:00Z", step: 5 * time.Minute, hourCheck: true, localHour: 2, nHour: 24},
				{name: "23-hour day", q: plant.SetQuery{Period: plant.PeriodDay, Date: date("2026-10-04")},
					rows: 276, res: plant.ResolutionFiveMinutes, firstUTC: "2026-10-03T14:30:00Z", step: 5 * time.Minute, hourCheck: true, localHour: 2, nHour: 0},
				{name: "hours start at half past in UTC", q: plant.SetQuery{Period: plant.PeriodWeek, Date: date("2026-04-05"), WithTotal: true},
					rows: 24 + 25, res: plant.ResolutionOneHour, firstUTC: "2026-04-03T13:30:00Z", step: time.Hour},
				{name: "month of days", q: plant.SetQuery{Period: plant.PeriodMonth, Date: date("2026-10-31")},
					rows: 3, res: plant.ResolutionOneDay, firstUTC: "2026-10-02T14:30:00Z"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			t.Parallel() // its own database files
			loc := mustZone(t, tt.zone)
			s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1", Location: loc}}})
			sy := &synth{loc: loc}
			stop := runStore(t, s)
			for _, sp := range tt.spans {
				from, to := localDate(t, sp[0], loc), localDate(t, sp[1], loc)
				for x := from; x.Before(to); x = x.Add(2 * time.Minute) {
					for _, m := range sy.step(x) {
						record(t, s, m)
					}
				}
				sy.last = time.Time{} // no energy across the gap between spans
			}
			stop()
			if st := s.Stats(); st.Dropped != 0 || st.Failed != 0 {
				t.Fatalf("stats %+v", st)
			}
			for _, c := range tt.checks {
				t.Run(c.name, func(t *testing.T) {
					q := c.q
					q.PlantID, q.SetType = "p1", plant.SetEnergyBalance
					res, err := s.QuerySet(t.Context(), q)
					if err != nil {
						t.Fatal(err)
					}
					if res.Resolution != c.res {
						t.Errorf("resolution %s, want %s", res.Resolution, c.res)
					}
					if len(res.Rows) != c.rows {
						t.Fatalf("%d rows, want %d", len(res.Rows), c.rows)
					}
					if got := res.Rows[0].Start.Format(time.RFC3339); got != c.firstUTC {
						t.Errorf("first row starts %s, want %s", got, c.firstUTC)
					}
					nHour := 0
					for i, r := range res.Rows {
						if i > 0 && !r.Start.After(res.Rows[i-1].Start) {
							t.Fatalf("row %d (%v) not after row %d (%v)", i, r.Start, i-1, res.Rows[i-1].Start)
						}
						if c.step > 0 && i > 0 && r.Start.Sub(res.Rows[i-1].Start) != c.step {
							t.Fatalf("row %d starts %v after the previous, want %v", i, r.Start.Sub(res.Rows[i-1].Start), c.step)
						}
						if r.Start.In(loc).Hour() == c.localHour {
							nHour++
						}
						if _, ok := r.Values["totalConsumption"]; !ok {
							t.Fatalf("row %d (%v) has no totalConsumption: %v", i, r.Start, r.Values)
						}
					}
					if c.hourCheck && nHour != c.nHour {
						t.Errorf("%d rows in local hour %d, want %d", nHour, c.localHour, c.nHour)
					}
					if c.q.WithTotal && res.Total == nil {
						t.Error("no total")
					}
				})
			}
		})
	}
}

// date is a calendar date as a client gives it (UTC midnight).
func date(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func localDate(t *testing.T, s string, loc *time.Location) time.Time {
	t.Helper()
	d, err := time.ParseInLocation(time.DateOnly, s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
