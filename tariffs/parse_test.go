package tariffs

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"plantd/store"
)

// The provider's own numbers for the recorded days, EUR/MWh.
var (
	// DE-LU hourly day-ahead prices of 2024-10-06 and 2024-10-07 (CEST),
	// as hass-entso-e's test lists them for the recorded document (hour 15
	// of the 6th, left out by curve type A03, repeats hour 14's -0.01).
	entsoeDEHourly = [2][24]float64{
		{67.04, 63.97, 62.83, 63.35, 62.71, 63.97, 63.41, 72.81, 77.2, 66.06, 35.28, 16.68,
			5.25, -0.01, -0.01, 0.2, 59.6, 90.94, 106.3, 97.22, 72.98, 59.37, 58.69, 51.71},
		{34.58, 35.34, 33.25, 30.15, 36.09, 46.73, 67.59, 100.92, 108.32, 91.86, 66.09, 60.22,
			54.11, 43.29, 55, 67.01, 97.9, 120.71, 237.65, 229.53, 121.98, 99.93, 91.91, 79.12},
	}
	// DE-LU quarter-hour prices of 2024-10-06 (classification sequence 2
	// of the document; quarter 23, left out, repeats quarter 22's 68.2).
	entsoeDEQuarters = [96]float64{
		98.1, 89.5, 77.21, 40.09, 87.2, 80.1, 75.3, 51.34, 76.8, 70.8, 69.1, 67.3,
		72.4, 70.3, 65.17, 70.4, 72.88, 67.1, 67.7, 66.7, 71.8, 68.2, 68.2, 63.76,
		82, 72.9, 73.65, 45.1, 74.91, 79.91, 79.9, 41.29, 107.8, 86.6, 55.09, 15.09,
		104.9, 74.9, 54.91, 5.85, 79.8, 52.9, 28.43, -19.91, 59.1, 41.3, 0.49, -29.9,
		44.91, 30.3, -14.27, -29.91, 24.92, 20.2, -13.21, -14.9, -24.9, -19.9, 18.18, 36.9,
		-29.91, -14.9, 12.13, 67.9, -19.91, 27.33, 74.1, 101.8, 30.72, 74.6, 103.4, 144.92,
		78.5, 102.35, 119.94, 129.95, 114.57, 114.91, 109.91, 113.6, 114.91, 109.9, 67.77, 86.6,
		104.92, 99.91, 84.07, 35.1, 94.92, 89.91, 79.9, 30.24, 89.92, 79.9, 55.86, 25.09,
	}
	// aWATTar Germany, Saturday 2024-06-15 (CEST), hour by hour.
	awattarDE0615 = [24]float64{
		60.68, 41.04, 29.97, 28.86, 22.51, 10.04, 1.54, 0.09, 0, -0.06, -10.08, -29.04,
		-44.92, -65.46, -80.01, -56.23, -29.53, -4.84, -0.01, 40, 84.28, 79.92, 64.3, 40.4,
	}
)

var berlin = mustLocation("Europe/Berlin")

func mustLocation(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func openFixture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// checkDay compares the prices of the local day starting at day, step
// apart, with want, value by value.
func checkDay(t *testing.T, what string, got []store.Price, day time.Time, step time.Duration, want []float64) {
	t.Helper()
	byStart := map[int64]store.Price{}
	for _, p := range got {
		byStart[p.Start.UnixMilli()] = p
	}
	for i, w := range want {
		start := day.Add(time.Duration(i) * step)
		p, ok := byStart[start.UnixMilli()]
		switch {
		case !ok:
			t.Errorf("%s: no price at %s", what, start.In(berlin).Format("2006-01-02 15:04"))
		case !p.End.Equal(start.Add(step)):
			t.Errorf("%s %s: ends %s, want %s later", what, start.In(berlin).Format("15:04"), p.End.In(berlin).Format("15:04"), step)
		case p.EURPerMWh != w:
			t.Errorf("%s %s: %v EUR/MWh, want %v", what, start.In(berlin).Format("15:04"), p.EURPerMWh, w)
		}
	}
}

// TestParseENTSOE reads the recorded DE-LU document: the hourly series
// (sequence 1) wins over the quarter-hourly one where both cover the
// hours, 48 prices, the provider's numbers for both days; the
// quarter-hourly series on its own gives the 96 quarters of the 6th and
// their hourly means.
func TestParseENTSOE(t *testing.T) {
	prices, err := ParseENTSOE(openFixture(t, "entsoe-de-lu-2024-10-06.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(prices) != 48 {
		t.Fatalf("%d prices, want 48 (two days of hours)", len(prices))
	}
	for d := range 2 {
		day := time.Date(2024, 10, 6+d, 0, 0, 0, 0, berlin)
		checkDay(t, day.Format("Jan 2"), prices, day, time.Hour, entsoeDEHourly[d][:])
	}

	series, err := ParseENTSOESeries(openFixture(t, "entsoe-de-lu-2024-10-06.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Sequence != 1 || series[0].Resolution != time.Hour ||
		series[1].Sequence != 2 || series[1].Resolution != 15*time.Minute || len(series[1].Prices) != 192 {
		t.Fatalf("series: %d; want sequence 1 hourly and sequence 2 of 192 quarters", len(series))
	}
	day := time.Date(2024, 10, 6, 0, 0, 0, 0, berlin)
	checkDay(t, "quarters", series[1].Prices, day, 15*time.Minute, entsoeDEQuarters[:])
	var means [24]float64
	for h := range means {
		q := entsoeDEQuarters[4*h : 4*h+4]
		means[h] = (q[0] + q[1] + q[2] + q[3]) / 4
	}
	hourly := HourlyMeans(series[1].Prices)
	if len(hourly) != 48 {
		t.Fatalf("hourly means: %d, want 48", len(hourly))
	}
	for i, w := range means {
		if p := hourly[i]; !p.Start.Equal(day.Add(time.Duration(i)*time.Hour)) || math.Abs(p.EURPerMWh-w) > 1e-9 {
			t.Errorf("hourly mean %d: %v at %v, want %v", i, p.EURPerMWh, p.Start, w)
		}
	}
}

// TestParseAWATTar reads the recorded German answer: 72 hours, Saturday
// the 15th value by value with its negative noon.
func TestParseAWATTar(t *testing.T) {
	prices, err := ParseAWATTar(openFixture(t, "awattar-de-2024-06-14.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(prices) != 72 || !prices[0].Start.Equal(time.UnixMilli(1718316000000)) || !prices[71].End.Equal(time.UnixMilli(1718575200000)) {
		t.Fatalf("%d prices from %v; want 72 from 2024-06-13T22:00Z", len(prices), prices[0].Start)
	}
	checkDay(t, "Jun 15", prices, time.Date(2024, 6, 15, 0, 0, 0, 0, berlin), time.Hour, awattarDE0615[:])
}

// TestParseRefusals: what the providers answer without prices, and
// documents that are not price documents.
func TestParseRefusals(t *testing.T) {
	const ackNS = `xmlns="urn:iec62325.351:tc57wg16:451-1:acknowledgementdocument:7:0"`
	period := func(res, points string) string {
		return `<Publication_MarketDocument xmlns="urn:iec62325.351:tc57wg16:451-3:publicationdocument:7:3"><type>A44</type>
<TimeSeries><currency_Unit.name>EUR</currency_Unit.name><price_Measure_Unit.name>MWH</price_Measure_Unit.name><curveType>A03</curveType>
<Period><timeInterval><start>2024-10-05T22:00Z</start><end>2024-10-05T23:00Z</end></timeInterval><resolution>` + res + `</resolution>` + points + `</Period></TimeSeries></Publication_MarketDocument>`
	}
	pt := func(pos int, price string) string {
		return "<Point><position>" + string(rune('0'+pos)) + "</position><price.amount>" + price + "</price.amount></Point>"
	}
	for _, tt := range []struct {
		name, doc string
		parse     func(string) ([]store.Price, error)
		is        error
		msg       string
	}{
		{"no data", `<?xml version="1.0" encoding="utf-8"?><Acknowledgement_MarketDocument ` + ackNS + `><mRID>a1</mRID><createdDateTime>2024-10-07T18:08:18Z</createdDateTime>
<Reason><code>999</code><text>No matching data found for Data item Day-ahead Prices [12.1.D] (10Y1001A1001A82H, 10Y1001A1001A82H) and interval 2024-10-08T22:00:00.000Z/2024-10-09T22:00:00.000Z.</text></Reason></Acknowledgement_MarketDocument>`,
			entsoe, ErrNoData, "No matching data found"},
		{"refused", `<Acknowledgement_MarketDocument ` + ackNS + `><Reason><code>999</code><text>Invalid query attributes or parameters.</text></Reason></Acknowledgement_MarketDocument>`,
			entsoe, nil, "entsoe refused the query: 999 Invalid query attributes"},
		{"not XML", `<html><body>502 Bad Gateway`, entsoe, ErrMalformed, ""},
		{"another document", `<GL_MarketDocument><type>A65</type></GL_MarketDocument>`, entsoe, ErrMalformed, "root element GL_MarketDocument"},
		{"no series", period("PT15M", ""), entsoe, ErrMalformed, "has no points"},
		{"resolution", period("P1D", pt(1, "5")), entsoe, ErrMalformed, `resolution "P1D"`},
		{"position order", period("PT15M", pt(2, "5")+pt(1, "6")), entsoe, ErrMalformed, "A03 starts at position 2"},
		{"beyond the period", period("PT15M", pt(1, "5")+pt(5, "6")), entsoe, ErrMalformed, "beyond 4"},
		{"price", period("PT15M", pt(1, "NaN")), entsoe, ErrMalformed, "no price"},
		{"awattar empty", `{"object":"list","data":[],"url":"/de/v1/marketdata"}`, awattar, ErrNoData, ""},
		{"awattar garbage", `<html>`, awattar, ErrMalformed, ""},
		{"awattar unit", `{"object":"list","data":[{"start_timestamp":1718316000000,"end_timestamp":1718319600000,"marketprice":83.13,"unit":"ct/kWh"}]}`, awattar, ErrMalformed, "unit"},
		{"awattar no price", `{"object":"list","data":[{"start_timestamp":1718316000000,"end_timestamp":1718319600000,"unit":"Eur/MWh"}]}`, awattar, ErrMalformed, "no marketprice"},
	} {
		_, err := tt.parse(tt.doc)
		switch {
		case err == nil:
			t.Errorf("%s: no error", tt.name)
		case tt.is != nil && !errors.Is(err, tt.is):
			t.Errorf("%s: %v, want %v", tt.name, err, tt.is)
		case !strings.Contains(err.Error(), tt.msg):
			t.Errorf("%s: %v, want it to say %q", tt.name, err, tt.msg)
		}
	}
	// A03 fills a left-out position forward to the period's end; A01
	// leaves it a gap.
	got, err := entsoe(period("PT15M", pt(1, "5")+pt(3, "-2.5")))
	if err != nil || len(got) != 4 || got[1].EURPerMWh != 5 || got[3].EURPerMWh != -2.5 {
		t.Errorf("A03 fill: %+v, %v", got, err)
	}
	got, err = entsoe(strings.Replace(period("PT15M", pt(1, "5")+pt(3, "-2.5")), "A03", "A01", 1))
	if err != nil || len(got) != 2 || !got[1].Start.Equal(time.Date(2024, 10, 5, 22, 30, 0, 0, time.UTC)) {
		t.Errorf("A01 gap: %+v, %v", got, err)
	}
}

func entsoe(doc string) ([]store.Price, error)  { return ParseENTSOE(strings.NewReader(doc)) }
func awattar(doc string) ([]store.Price, error) { return ParseAWATTar(strings.NewReader(doc)) }
