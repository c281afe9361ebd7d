package store

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestRecentMinutesReference: the intervals a plant's Recent answer is
// made of, computed from the balance's channels only, equal bit for bit
// those computed from every channel by the rollups' reader and engine
// (the path before), for windows ending at, before and after the data:
// steady polls, devices with gaps (which fall back to every channel),
// coarse counters that move in steps, no counters, and powers missing
// from some polls.
func TestRecentMinutesReference(t *testing.T) {
	t.Parallel()
	loc := mustZone(t, "Europe/Berlin")
	start := time.Date(2026, 6, 21, 9, 0, 0, 0, time.UTC)
	const ticks = 75 * 12 // 75 minutes of polls every 5 s
	bp := newBenchPlant(t)
	for _, tt := range []struct {
		name string
		// polls gives the measurements of poll number tick at t.
		polls    func(s *synth, tick int64, t time.Time) []Measurement
		fallback bool // some device has a gap (the fast path leaves it)
	}{
		{"steady", func(s *synth, _ int64, t time.Time) []Measurement { return s.step(t) }, false},
		{"bench plant", func(_ *synth, tick int64, t time.Time) []Measurement {
			var out []Measurement
			for i := range bp.devs {
				m := bp.measurement(i, tick, t)
				m.Readings = slices.Clone(m.Readings)
				out = append(out, m)
			}
			return out
		}, false},
		{"gaps", func(s *synth, tick int64, t time.Time) []Measurement {
			var out []Measurement
			for _, m := range s.step(t) {
				switch {
				case m.DeviceID == "inv" && tick >= 400 && tick < 450: // 4 minutes silent
				case m.DeviceID == "met" && tick >= 600 && tick%18 != 0: // every 90 s
				case m.DeviceID == "bat" && tick < 300:
				default:
					out = append(out, m)
				}
			}
			return out
		}, true},
		{"coarse counters", func(s *synth, _ int64, t time.Time) []Measurement {
			ms := s.step(t)
			for _, m := range ms {
				for i, r := range m.Readings {
					if r.Channel.Counter() {
						m.Readings[i].Value = math.Floor(r.Value/1000) * 1000
					}
				}
			}
			return ms
		}, false},
		{"no counters", func(s *synth, _ int64, t time.Time) []Measurement {
			s.noCounters = true
			return s.step(t)
		}, false},
		{"powers missing", func(s *synth, tick int64, t time.Time) []Measurement {
			ms := s.step(t)
			for i, m := range ms {
				if tick%3 == 0 {
					ms[i].Readings = slices.DeleteFunc(slices.Clone(m.Readings), func(r plant.Reading) bool {
						return r.Channel == plant.PVGeneration || r.Channel == plant.GridFeedIn || r.Channel == plant.BatteryCharging
					})
				}
			}
			return ms
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1", Location: loc}}})
			stop := runStore(t, s)
			sy := &synth{loc: loc}
			for tick := range int64(ticks) {
				for _, m := range tt.polls(sy, tick, start.Add(time.Duration(tick)*5*time.Second)) {
					record(t, s, m)
				}
			}
			// A sensor has no role in the balance.
			record(t, s, Measurement{PlantID: "p1", DeviceID: "sen", Kind: kind.Sensor, Time: start.Add(time.Hour),
				Readings: []plant.Reading{{Channel: plant.AmbientTemperature, Value: 20}}})
			stop()
			var devs []*device
			for _, d := range s.cat.devices() {
				if d.kind != kindPlant {
					devs = append(devs, d)
				}
			}
			db := s.rdb.Load()
			end := start.Add(ticks * 5 * time.Second).UnixMilli()
			for _, to := range []int64{end, end + minuteMs, end - 7*minuteMs, end - 30*minuteMs, start.UnixMilli() + 10*minuteMs} {
				from := to - recentSpan
				fast, err := s.recentMinutes(t.Context(), db, devs, from, to, false)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := s.recentMinutes(t.Context(), db, devs, from, to, true)
				if err != nil {
					t.Fatal(err)
				}
				if len(ref) == 0 {
					t.Fatalf("window ending %v: no intervals", time.UnixMilli(to).UTC())
				}
				if !reflect.DeepEqual(fast, ref) {
					for b, iv := range ref {
						if !reflect.DeepEqual(fast[b], iv) {
							t.Errorf("window ending %v, minute %v:\n %+v\nwant %+v", time.UnixMilli(to).UTC(), time.UnixMilli(b).UTC(), fast[b], iv)
						}
					}
					t.Fatalf("window ending %v: %d minutes, want %d", time.UnixMilli(to).UTC(), len(fast), len(ref))
				}
			}
			// The fast path ran (and left only devices with gaps).
			var roles []*device
			for _, d := range devs {
				if f, _ := balanceRole(d); len(f) > 0 {
					roles = append(roles, d)
				}
			}
			rest, err := s.recentRoles(context.Background(), db, roles, end-recentSpan, end, map[int64]map[int64]devInterval{})
			if err != nil {
				t.Fatal(err)
			}
			if (len(rest) > 0) != tt.fallback {
				t.Errorf("%d of %d devices left to every channel's path, want some: %v", len(rest), len(roles), tt.fallback)
			}
		})
	}
}
