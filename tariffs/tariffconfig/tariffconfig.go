package tariffconfig

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"plantd/internal/confcheck"
)

// Config is what the plant's owner pays for grid power and is paid for
// feed-in (tariffs; off when the section is absent). Prices are EUR/kWh.
type Config struct {
	// Plant is the plant whose time zone the time-of-use windows and the
	// day-ahead horizon (today and tomorrow) are in (required with more
	// than one plant).
	Plant string `yaml:"plant" json:"plantId,omitempty"`
	// Market is the day-ahead market price source; required when Import
	// or FeedIn use the market price.
	Market *Market `yaml:"market" json:"market,omitempty"`
	// Import is the grid tariff.
	Import Import `yaml:"import" json:"import,omitempty"`
	// FeedIn is the feed-in tariff.
	FeedIn FeedIn `yaml:"feedIn" json:"feedIn,omitempty"`
}

// Market is a day-ahead market price source.
type Market struct {
	// Provider is "entsoe" (the ENTSO-E Transparency Platform) or
	// "awattar" (aWATTar's market data API).
	Provider string `yaml:"provider" json:"provider,omitempty"`
	// Zone is the market: for entsoe the bidding zone's EIC code
	// (10Y1001A1001A82H: DE-LU; 10YAT-APG------L: AT; 10YNL----------L:
	// NL), for awattar de or at.
	Zone string `yaml:"zone" json:"zone,omitempty"`
	// Token is the ENTSO-E security token (the platform's "Web API
	// Security Token", a UUID; required for entsoe, none for awattar). A
	// secret: never logged, sent only to URL.
	Token string `yaml:"token" json:"-"`
	// URL is the provider's API URL (advanced; default
	// https://web-api.tp.entsoe.eu/api for entsoe,
	// https://api.awattar.de/v1/marketdata or .at for awattar). https
	// only, except to a loopback address (tests).
	URL string `yaml:"url" json:"url,omitempty"`
}

// Import is the grid tariff: a time-of-use table (Fixed) or the market
// price plus the supplier's surcharge and VAT.
type Import struct {
	// Fixed is a time-of-use table, one window a row: "[DAYS] [TIMES]
	// PRICE" (ParseWindow), as "0.32", "Mon-Fri 17:00-20:00 0.41",
	// "22:00-06:00 0.24". The price of an instant is that of the last row
	// that covers it; the first row is the base price (a price alone).
	// With Market it is the fallback for hours without a market price.
	Fixed []string `yaml:"fixed" json:"fixed,omitempty"`
	// Market uses the day-ahead market price: (price + Surcharge) ×
	// (1 + VAT/100).
	Market bool `yaml:"market" json:"market,omitempty"`
	// Surcharge is added to the market price, EUR/kWh before VAT: grid
	// fees, levies, taxes and the supplier's margin as the contract
	// states them (-1..10, default 0).
	Surcharge float64 `yaml:"surcharge" json:"surcharge,omitempty"`
	// VAT is the value-added tax in percent on market price and surcharge
	// (0..100, default 0).
	VAT float64 `yaml:"vat" json:"vat,omitempty"`
}

// Window is a row of a time-of-use table, parsed.
type Window struct {
	// Days are the weekdays the window applies on, by time.Weekday.
	Days [7]bool
	// From and To are the window's time of day in minutes after
	// midnight, end exclusive (0 and 1440: the whole day); To < From
	// wraps midnight (the night after each of Days).
	From, To int
	// Price is the price in the window, EUR/kWh as the owner pays it.
	Price float64
}

// Windows parses the table (call it on a validated config).
func (im Import) Windows() []Window {
	out := make([]Window, 0, len(im.Fixed))
	for _, row := range im.Fixed {
		w, _ := ParseWindow(row)
		out = append(out, w)
	}
	return out
}

// FeedIn is the feed-in tariff: a fixed price or the market price plus
// an offset (direct marketing).
type FeedIn struct {
	// Fixed is the fixed feed-in price, EUR/kWh (-1..10); with Market the
	// fallback for hours without a market price.
	Fixed *float64 `yaml:"fixed" json:"fixed,omitempty"`
	// Market pays the day-ahead market price plus Offset.
	Market bool `yaml:"market" json:"market,omitempty"`
	// Offset is added to the market price, EUR/kWh (the direct marketer's
	// fee is negative; -1..1, default 0).
	Offset float64 `yaml:"offset" json:"offset,omitempty"`
	// Floor is the feed-in price below which plantd holds export at 0 W
	// (EUR/kWh, -1..10; default 0: while feed-in is paid negative).
	// Package siteplan follows it with an installer's FeedInLimit 0 W
	// window.
	Floor *float64 `yaml:"floor" json:"floor,omitempty"`
}

// Providers.
const (
	ProviderENTSOE  = "entsoe"
	ProviderAWATTar = "awattar"
)

// Default API URLs.
const (
	DefaultENTSOEURL    = "https://web-api.tp.entsoe.eu/api"
	DefaultAWATTarDEURL = "https://api.awattar.de/v1/marketdata"
	DefaultAWATTarATURL = "https://api.awattar.at/v1/marketdata"
)

// Bounds of prices, EUR/kWh.
const (
	minPrice, maxPrice = -1, 10
)

// eic is an Energy Identification Code: 16 characters, letters, digits
// and dashes (the last a check character).
var eic = regexp.MustCompile(`^[0-9]{2}[A-Z][A-Z0-9-]{12}[A-Z0-9-]$`)

// MarketURL is the market's URL, its provider's default when empty.
func (m Market) MarketURL() string {
	switch {
	case m.URL != "":
		return m.URL
	case m.Provider == ProviderENTSOE:
		return DefaultENTSOEURL
	case m.Zone == "at":
		return DefaultAWATTarATURL
	default:
		return DefaultAWATTarDEURL
	}
}

// Source names the market's prices in the store: provider and zone
// ("entsoe:10Y1001A1001A82H", "awattar:de").
func (m Market) Source() string {
	if m.Provider == ProviderENTSOE {
		return ProviderENTSOE + ":" + m.Zone
	}
	return ProviderAWATTar + ":" + m.Zone
}

// Validate checks the section; c is at tariffs. plantKnown reports
// whether the config has a plant of that id.
func (t Config) Validate(c confcheck.Checker, plantKnown func(id string) bool) {
	switch {
	case t.Plant == "":
		c.Add("plant", "required when more than one plant is configured")
	case !plantKnown(t.Plant):
		c.Add("plant", "unknown plant %q", t.Plant)
	}
	if t.Market != nil {
		t.Market.validate(c.In("market"))
	}
	needMarket := func(field string) {
		if t.Market == nil {
			c.Add(field, "needs tariffs.market (the day-ahead price source)")
		}
	}
	im := t.Import
	switch {
	case im.Market:
		needMarket("import.market")
	case len(im.Fixed) == 0:
		c.Add("import", "required: market: true or a fixed table (fixed: [{price: 0.32}, ...])")
	}
	for i, row := range im.Fixed {
		field := fmt.Sprintf("import.fixed[%d]", i)
		w, err := ParseWindow(row)
		switch {
		case err != nil:
			c.Add(field, "%v", err)
		case i == 0 && !w.Base():
			c.Add(field, "%q: the first row is the base price, a price alone (later rows override it)", row)
		}
	}
	if !im.Market && (im.Surcharge != 0 || im.VAT != 0) {
		c.Add("import", "surcharge and vat apply to the market price only (a fixed table's prices are as paid)")
	}
	rangeCheck(c, "import.surcharge", im.Surcharge, minPrice, maxPrice)
	rangeCheck(c, "import.vat", im.VAT, 0, 100)
	f := t.FeedIn
	switch {
	case f.Market:
		needMarket("feedIn.market")
	case f.Fixed == nil:
		c.Add("feedIn", "required: fixed: EUR/kWh or market: true")
	}
	if !f.Market && f.Offset != 0 {
		c.Add("feedIn.offset", "applies to market: true only")
	}
	c.OptRange("feedIn.fixed", f.Fixed, minPrice, maxPrice)
	rangeCheck(c, "feedIn.offset", f.Offset, -1, 1)
	c.OptRange("feedIn.floor", f.Floor, minPrice, maxPrice)
	if t.Market != nil && !im.Market && !f.Market {
		c.Add("market", "neither import nor feedIn uses it (market: true)")
	}
}

func rangeCheck(c confcheck.Checker, field string, v, lo, hi float64) {
	c.OptRange(field, &v, lo, hi)
}

func (m Market) validate(c confcheck.Checker) {
	switch m.Provider {
	case ProviderENTSOE:
		if !eic.MatchString(m.Zone) {
			c.Add("zone", "%q is not a bidding zone's EIC code (16 characters, as 10Y1001A1001A82H for DE-LU)", m.Zone)
		}
		if strings.TrimSpace(m.Token) == "" {
			c.Add("token", "required for entsoe: the Transparency Platform's Web API security token")
		} else if strings.ContainsAny(m.Token, " \t\r\n&#?/") {
			c.Add("token", "has a character no security token has (space, &, #, ?, /)")
		}
	case ProviderAWATTar:
		if m.Zone != "de" && m.Zone != "at" {
			c.Add("zone", "%q is not one of aWATTar's markets (de or at)", m.Zone)
		}
		if m.Token != "" {
			c.Add("token", "only entsoe takes a token")
		}
	default:
		c.Add("provider", "%q is not a provider (entsoe or awattar)", m.Provider)
	}
	if m.URL != "" {
		u, err := url.Parse(m.URL)
		switch {
		case err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			c.Add("url", "%q is not an API URL (https://host/path, no query)", m.URL)
		case u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())):
			c.Add("url", "%q: https only (http to a loopback address)", m.URL)
		}
	}
}

func isLoopback(h string) bool {
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// ParseWindow parses a row of a time-of-use table: "[DAYS] [TIMES]
// PRICE", separated by spaces; DAYS as ParseDays, TIMES as ParseTimes
// (either may be left out: every day, the whole day), PRICE in EUR/kWh.
func ParseWindow(row string) (Window, error) {
	f := strings.Fields(row)
	if len(f) == 0 || len(f) > 3 {
		return Window{}, fmt.Errorf("%q is not a window (DAYS TIMES PRICE, as Mon-Fri 17:00-20:00 0.41)", row)
	}
	var w Window
	price, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		return w, fmt.Errorf("%q: the last field is the price in EUR/kWh, not %q", row, f[len(f)-1])
	}
	w.Price = price
	days, times := "", ""
	for _, x := range f[:len(f)-1] {
		if strings.Contains(x, ":") && times == "" {
			times = x
		} else if days == "" && !strings.Contains(x, ":") {
			days = x
		} else {
			return w, fmt.Errorf("%q is not a window (DAYS TIMES PRICE, as Mon-Fri 17:00-20:00 0.41)", row)
		}
	}
	var ok bool
	if w.Days, ok = ParseDays(days); !ok {
		return w, fmt.Errorf("%q: %q is not a list of weekdays (Mon-Fri, Sat,Sun; Mon Tue Wed Thu Fri Sat Sun)", row, days)
	}
	if w.From, w.To, ok = ParseTimes(times); !ok {
		return w, fmt.Errorf("%q: %q is not a time of day range (HH:MM-HH:MM, as 17:00-20:00 or 22:00-06:00)", row, times)
	}
	if !(price >= minPrice && price <= maxPrice) {
		return w, fmt.Errorf("%q: price %s is out of range (%d..%d EUR/kWh)", row, confcheck.Num(price), minPrice, maxPrice)
	}
	return w, nil
}

// Base reports whether the window covers every instant.
func (w Window) Base() bool {
	return w.Days == [7]bool{true, true, true, true, true, true, true} && w.From == 0 && w.To == 24*60
}

var weekdays = map[string]time.Weekday{"mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday}

// ParseDays parses a window's days ("Mon-Fri", "Sat,Sun"; empty: all)
// into a set indexed by time.Weekday. A range runs forward through the
// week: "Fri-Mon" is Fri, Sat, Sun, Mon.
func ParseDays(s string) (days [7]bool, ok bool) {
	if strings.TrimSpace(s) == "" {
		return [7]bool{true, true, true, true, true, true, true}, true
	}
	for part := range strings.SplitSeq(s, ",") {
		from, to, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, okA := weekdays[strings.ToLower(strings.TrimSpace(from))]
		b, okB := a, okA
		if isRange {
			b, okB = weekdays[strings.ToLower(strings.TrimSpace(to))]
		}
		if !okA || !okB {
			return days, false
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, true
}

// ParseTimes parses a window's times ("HH:MM-HH:MM"; empty: the whole
// day) into minutes after midnight, from < to, or to < from when it
// wraps midnight; to is 1440 for 24:00. from == to is refused.
func ParseTimes(s string) (from, to int, ok bool) {
	if strings.TrimSpace(s) == "" {
		return 0, 24 * 60, true
	}
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	from, okA := clock(strings.TrimSpace(a))
	to, okB := clock(strings.TrimSpace(b))
	if !okA || !okB || from == to || from == 24*60 {
		return 0, 0, false
	}
	return from, to, true
}

// clock parses HH:MM (00:00..24:00) into minutes.
func clock(s string) (int, bool) {
	h, m, found := strings.Cut(s, ":")
	if !found || len(h) != 2 || len(m) != 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh > 24 || hh == 24 && mm != 0 {
		return 0, false
	}
	return hh*60 + mm, true
}
