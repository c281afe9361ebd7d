package tariffconfig

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"plantd/internal/confcheck"
)

func ptr(f float64) *float64 { return &f }

func TestValidate(t *testing.T) {
	entsoe := &Market{Provider: "entsoe", Zone: "10Y1001A1001A82H", Token: "0b1d2f3a-4c5d-6e7f-8a9b-0c1d2e3f4a5b"}
	awattar := &Market{Provider: "awattar", Zone: "at"}
	base := []string{"0.30"}
	for _, tt := range []struct {
		name string
		c    Config
		want []string
	}{
		{"market import, fixed feed-in", Config{Plant: "p1", Market: entsoe, Import: Import{Market: true, Surcharge: 0.18, VAT: 19}, FeedIn: FeedIn{Fixed: ptr(0.081), Floor: ptr(0)}}, nil},
		{"time-of-use import, market feed-in", Config{Plant: "p1", Market: awattar, Import: Import{Fixed: []string{"0.30", "Mon-Fri 17:00-20:00 0.42", "22:00-06:00 0.22"}},
			FeedIn: FeedIn{Market: true, Offset: -0.004}}, nil},
		{"local test server", Config{Plant: "p1", Market: &Market{Provider: "awattar", Zone: "de", URL: "http://127.0.0.1:4321/v1/marketdata"}, Import: Import{Market: true}, FeedIn: FeedIn{Fixed: ptr(0)}}, nil},
		{"unknown plant", Config{Plant: "p9", Import: Import{Fixed: base}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{`tariffs.plant: unknown plant "p9"`}},
		{"no plant", Config{Import: Import{Fixed: base}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{"tariffs.plant: required when more than one plant is configured"}},
		{"nothing", Config{Plant: "p1"}, []string{
			"tariffs.import: required: market: true or a fixed table (fixed: [{price: 0.32}, ...])",
			"tariffs.feedIn: required: fixed: EUR/kWh or market: true"}},
		{"market missing", Config{Plant: "p1", Import: Import{Market: true}, FeedIn: FeedIn{Market: true}}, []string{
			"tariffs.import.market: needs tariffs.market (the day-ahead price source)",
			"tariffs.feedIn.market: needs tariffs.market (the day-ahead price source)"}},
		{"market with fixed fallbacks", Config{Plant: "p1", Market: entsoe, Import: Import{Market: true, Fixed: base}, FeedIn: FeedIn{Market: true, Fixed: ptr(0.1)}}, nil},
		{"bad entsoe", Config{Plant: "p1", Market: &Market{Provider: "entsoe", Zone: "DE-LU", URL: "http://example.com/api"}, Import: Import{Market: true}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{
			`tariffs.market.zone: "DE-LU" is not a bidding zone's EIC code (16 characters, as 10Y1001A1001A82H for DE-LU)`,
			"tariffs.market.token: required for entsoe: the Transparency Platform's Web API security token",
			`tariffs.market.url: "http://example.com/api": https only (http to a loopback address)`}},
		{"bad awattar", Config{Plant: "p1", Market: &Market{Provider: "awattar", Zone: "ch", Token: "x"}, Import: Import{Market: true}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{
			`tariffs.market.zone: "ch" is not one of aWATTar's markets (de or at)`,
			"tariffs.market.token: only entsoe takes a token"}},
		{"bad provider", Config{Plant: "p1", Market: &Market{Provider: "tibber"}, Import: Import{Market: true}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{
			`tariffs.market.provider: "tibber" is not a provider (entsoe or awattar)`}},
		{"unused market", Config{Plant: "p1", Market: awattar, Import: Import{Fixed: base}, FeedIn: FeedIn{Fixed: ptr(0.08)}}, []string{
			"tariffs.market: neither import nor feedIn uses it (market: true)"}},
		{"bad windows", Config{Plant: "p1", Import: Import{Fixed: []string{"Mon 0.3", "Mo-Fr 17:00-20:00 0.4", "17-20 0.4", "Sat 11", "Sat Sun 0.2", "0.3 €"}, VAT: 19}, FeedIn: FeedIn{Fixed: ptr(-2), Offset: 0.1}}, []string{
			`tariffs.import.fixed[0]: "Mon 0.3": the first row is the base price, a price alone (later rows override it)`,
			`tariffs.import.fixed[1]: "Mo-Fr 17:00-20:00 0.4": "Mo-Fr" is not a list of weekdays (Mon-Fri, Sat,Sun; Mon Tue Wed Thu Fri Sat Sun)`,
			`tariffs.import.fixed[2]: "17-20 0.4": "17-20" is not a list of weekdays (Mon-Fri, Sat,Sun; Mon Tue Wed Thu Fri Sat Sun)`,
			`tariffs.import.fixed[3]: "Sat 11": price 11 is out of range (-1..10 EUR/kWh)`,
			`tariffs.import.fixed[4]: "Sat Sun 0.2" is not a window (DAYS TIMES PRICE, as Mon-Fri 17:00-20:00 0.41)`,
			`tariffs.import.fixed[5]: "0.3 €": the last field is the price in EUR/kWh, not "€"`,
			"tariffs.import: surcharge and vat apply to the market price only (a fixed table's prices are as paid)",
			"tariffs.feedIn.offset: applies to market: true only",
			"tariffs.feedIn.fixed: -2 is out of range (-1..10)"}},
	} {
		var l confcheck.List
		tt.c.Validate(confcheck.New(&l, "tariffs"), func(id string) bool { return id == "p1" })
		if !slices.Equal(l.Problems, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, l.Problems, tt.want)
		}
	}
}

func TestParseDaysAndTimes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // Sun..Sat as 0/1
		ok   bool
	}{
		{"", "1111111", true}, {"Mon-Fri", "0111110", true}, {"sat,SUN", "1000001", true},
		{"Fri-Mon", "1100011", true}, {"Mon,Wed-Thu", "0101100", true}, {"Mo", "", false}, {"Mon-", "", false},
	} {
		d, ok := ParseDays(tt.in)
		got := ""
		for _, b := range d {
			got += map[bool]string{true: "1", false: "0"}[b]
		}
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("ParseDays(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		in       string
		from, to int
		ok       bool
	}{
		{"", 0, 1440, true}, {"17:00-20:00", 1020, 1200, true}, {"22:00-06:00", 1320, 360, true}, {"00:00-24:00", 0, 1440, true},
		{"20:00-24:00", 1200, 1440, true}, {"08:00-08:00", 0, 0, false}, {"24:00-06:00", 0, 0, false}, {"8:00-9:00", 0, 0, false}, {"08:60-09:00", 0, 0, false},
	} {
		from, to, ok := ParseTimes(tt.in)
		if ok != tt.ok || ok && (from != tt.from || to != tt.to) {
			t.Errorf("ParseTimes(%q) = %d, %d, %v; want %d, %d, %v", tt.in, from, to, ok, tt.from, tt.to, tt.ok)
		}
	}
}

// TestTokenNotShown: the section as the API shows it (JSON) leaves the
// security token out.
func TestTokenNotShown(t *testing.T) {
	c := Config{Plant: "p1", Market: &Market{Provider: "entsoe", Zone: "10Y1001A1001A82H", Token: "secret-token-123"}, Import: Import{Market: true}}
	b, err := json.Marshal(c)
	if err != nil || strings.Contains(string(b), "secret-token-123") || !strings.Contains(string(b), `"zone":"10Y1001A1001A82H"`) {
		t.Errorf("%s, %v", b, err)
	}
}
