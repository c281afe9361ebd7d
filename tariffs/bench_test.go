package tariffs

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"plantd/store"
	"plantd/tariffs/tariffconfig"
)

// BenchmarkParseENTSOE parses the recorded two-day DE-LU document (48
// hours and 192 quarters, 35 kB).
func BenchmarkParseENTSOE(b *testing.B) {
	doc, err := os.ReadFile("testdata/entsoe-de-lu-2024-10-06.xml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseENTSOE(bytes.NewReader(doc)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSlots prices 48 hours of quarter-hour market prices with a
// fixed feed-in tariff: the planner's query.
func BenchmarkSlots(b *testing.B) {
	fixed := 0.08
	s, err := New(tariffconfig.Config{Import: tariffconfig.Import{Market: true, Surcharge: 0.2, VAT: 19}, FeedIn: tariffconfig.FeedIn{Fixed: &fixed},
		Market: &tariffconfig.Market{Provider: "awattar", Zone: "de"}}, Deps{Location: berlin, Store: nopStore{}})
	if err != nil {
		b.Fatal(err)
	}
	day := time.Date(2026, 12, 6, 0, 0, 0, 0, berlin)
	var ps []store.Price
	for i := range 192 {
		t := day.Add(time.Duration(i) * 15 * time.Minute)
		ps = append(ps, store.Price{Start: t, End: t.Add(15 * time.Minute), EURPerMWh: float64(i)})
	}
	s.merge(ps, day)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(s.Slots(day, day.Add(48*time.Hour))); n != 192 {
			b.Fatalf("%d slots", n)
		}
	}
}

type nopStore struct{}

func (nopStore) PutPrices(context.Context, []store.Price) error { return nil }
func (nopStore) Prices(context.Context, string, time.Time, time.Time) ([]store.Price, error) {
	return nil, nil
}
