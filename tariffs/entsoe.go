package tariffs

import (
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/store"
)

// ErrNoData says the provider has no prices for the range asked (ENTSO-E's
// acknowledgement "No matching data found", aWATTar's empty list): the
// prices are not published yet.
var ErrNoData = errors.New("tariffs: no prices published for that range")

// ErrMalformed says a price document could not be read.
var ErrMalformed = errors.New("tariffs: malformed price document")

// entsoeDocument is the part of a Publication_MarketDocument (A44) or an
// Acknowledgement_MarketDocument that plantd reads.
type entsoeDocument struct {
	XMLName    xml.Name
	Type       string         `xml:"type"`
	TimeSeries []entsoeSeries `xml:"TimeSeries"`
	Reasons    []struct {
		Code string `xml:"code"`
		Text string `xml:"text"`
	} `xml:"Reason"`
}

type entsoeSeries struct {
	Currency  string         `xml:"currency_Unit.name"`
	Unit      string         `xml:"price_Measure_Unit.name"`
	CurveType string         `xml:"curveType"`
	Sequence  string         `xml:"classificationSequence_AttributeInstanceComponent.position"`
	Periods   []entsoePeriod `xml:"Period"`
}

type entsoePeriod struct {
	Start      string `xml:"timeInterval>start"`
	End        string `xml:"timeInterval>end"`
	Resolution string `xml:"resolution"`
	Points     []struct {
		Position int     `xml:"position"`
		Price    float64 `xml:"price.amount"`
	} `xml:"Point"`
}

// Series is one TimeSeries of a day-ahead price document: its
// classification sequence (1 when the document gives none), its
// resolution and its prices in time order, filled forward where the
// curve type (A03) leaves positions out.
type Series struct {
	Sequence   int
	Resolution time.Duration
	Prices     []store.Price
}

// ParseENTSOE reads an ENTSO-E day-ahead price document and returns its
// prices (Source and FetchedAt empty): of overlapping series the one of
// the lowest classification sequence, in time order. An
// acknowledgement is ErrNoData when it says no data matched, an error
// with its reason otherwise.
func ParseENTSOE(r io.Reader) ([]store.Price, error) {
	series, err := ParseENTSOESeries(r)
	if err != nil {
		return nil, err
	}
	return Merge(series), nil
}

// ParseENTSOESeries reads an ENTSO-E day-ahead price document into its
// series, as ParseENTSOE without merging them.
func ParseENTSOESeries(r io.Reader) ([]Series, error) {
	var doc entsoeDocument
	dec := xml.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch doc.XMLName.Local {
	case "Acknowledgement_MarketDocument":
		return nil, acknowledgement(doc)
	case "Publication_MarketDocument":
	default:
		return nil, fmt.Errorf("%w: root element %s, want Publication_MarketDocument", ErrMalformed, doc.XMLName.Local)
	}
	if doc.Type != "" && doc.Type != "A44" {
		return nil, fmt.Errorf("%w: document type %s, want A44 (day-ahead prices)", ErrMalformed, doc.Type)
	}
	var out []Series
	for i, ts := range doc.TimeSeries {
		s, err := ts.series()
		if err != nil {
			return nil, fmt.Errorf("%w: TimeSeries %d: %v", ErrMalformed, i+1, err)
		}
		out = append(out, s...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no TimeSeries with prices", ErrMalformed)
	}
	return out, nil
}

// acknowledgement turns an Acknowledgement_MarketDocument into its error.
func acknowledgement(doc entsoeDocument) error {
	var texts []string
	for _, r := range doc.Reasons {
		texts = append(texts, strings.TrimSpace(r.Code+" "+r.Text))
	}
	text := strings.Join(texts, "; ")
	if strings.Contains(strings.ToLower(text), "no matching data") {
		return fmt.Errorf("%w (entsoe: %s)", ErrNoData, text)
	}
	if text == "" {
		text = "no reason given"
	}
	return fmt.Errorf("tariffs: entsoe refused the query: %s", text)
}

// series reads a TimeSeries: a Series per period resolution (a
// TimeSeries keeps one in practice).
func (ts entsoeSeries) series() ([]Series, error) {
	if ts.Currency != "" && ts.Currency != "EUR" {
		return nil, fmt.Errorf("currency %s, want EUR", ts.Currency)
	}
	if ts.Unit != "" && !strings.EqualFold(ts.Unit, "MWH") {
		return nil, fmt.Errorf("unit %s, want MWH", ts.Unit)
	}
	seq := 1
	if ts.Sequence != "" {
		n, err := strconv.Atoi(strings.TrimSpace(ts.Sequence))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("classification sequence %q", ts.Sequence)
		}
		seq = n
	}
	byRes := map[time.Duration]*Series{}
	var order []time.Duration
	for _, p := range ts.Periods {
		res, prices, err := p.prices(ts.CurveType)
		if err != nil {
			return nil, err
		}
		s := byRes[res]
		if s == nil {
			s = &Series{Sequence: seq, Resolution: res}
			byRes[res] = s
			order = append(order, res)
		}
		s.Prices = append(s.Prices, prices...)
	}
	out := make([]Series, 0, len(order))
	for _, res := range order {
		s := byRes[res]
		slices.SortFunc(s.Prices, func(a, b store.Price) int { return a.Start.Compare(b.Start) })
		out = append(out, *s)
	}
	return out, nil
}

// prices reads a Period: its resolution and one price per position.
// Curve type A03 (variable sized blocks) leaves out a position whose price
// is the one before: the price holds until the next point, the last to
// the period's end. A01 (or none) lists every position; a missing one is
// a gap.
func (p entsoePeriod) prices(curveType string) (time.Duration, []store.Price, error) {
	start, err1 := parseENTSOETime(p.Start)
	end, err2 := parseENTSOETime(p.End)
	if err := errors.Join(err1, err2); err != nil {
		return 0, nil, err
	}
	res, err := parseResolution(p.Resolution)
	if err != nil {
		return 0, nil, err
	}
	span := end.Sub(start)
	if span <= 0 || span%res != 0 {
		return 0, nil, fmt.Errorf("period %s..%s is not a whole number of %s", p.Start, p.End, p.Resolution)
	}
	n := int(span / res)
	if len(p.Points) == 0 {
		return 0, nil, fmt.Errorf("period %s..%s has no points", p.Start, p.End)
	}
	fill := curveType == "A03"
	out := make([]store.Price, 0, n)
	last := 0
	for i, pt := range p.Points {
		if pt.Position <= last || pt.Position > n {
			return 0, nil, fmt.Errorf("period %s..%s: position %d out of order or beyond %d", p.Start, p.End, pt.Position, n)
		}
		if math.IsNaN(pt.Price) || math.IsInf(pt.Price, 0) {
			return 0, nil, fmt.Errorf("period %s..%s: position %d has no price", p.Start, p.End, pt.Position)
		}
		if fill && i == 0 && pt.Position != 1 {
			return 0, nil, fmt.Errorf("period %s..%s: curve type A03 starts at position %d, not 1", p.Start, p.End, pt.Position)
		}
		next := pt.Position + 1 // the positions this point covers: up to the next point's
		if fill {
			next = n + 1
			if i+1 < len(p.Points) {
				next = min(p.Points[i+1].Position, n+1)
			}
		}
		for pos := pt.Position; pos < next; pos++ {
			s := start.Add(time.Duration(pos-1) * res)
			out = append(out, store.Price{Start: s, End: s.Add(res), EURPerMWh: pt.Price})
		}
		last = pt.Position
	}
	return res, out, nil
}

// parseENTSOETime reads the platform's UTC times, "2024-10-05T22:00Z"
// (seconds allowed).
func parseENTSOETime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02T15:04Z", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q is not yyyy-mm-ddThh:mmZ", s)
}

// parseResolution reads an ISO 8601 duration of minutes or hours (PT15M,
// PT60M, PT1H).
func parseResolution(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "PT"); ok && len(rest) > 1 {
		n, err := strconv.Atoi(rest[:len(rest)-1])
		unit := map[byte]time.Duration{'M': time.Minute, 'H': time.Hour}[rest[len(rest)-1]]
		if err == nil && n > 0 && unit != 0 && time.Duration(n)*unit <= 24*time.Hour {
			return time.Duration(n) * unit, nil
		}
	}
	return 0, fmt.Errorf("resolution %q is not PTnM or PTnH", s)
}

// Merge joins series into one price list in time order: an interval of a
// series is taken unless it overlaps one of a series of a lower
// classification sequence (or of the same sequence, taken before).
func Merge(series []Series) []store.Price {
	sorted := slices.Clone(series)
	slices.SortStableFunc(sorted, func(a, b Series) int { return cmp.Compare(a.Sequence, b.Sequence) })
	var out []store.Price
	for _, s := range sorted {
		for _, p := range s.Prices {
			if !overlapsAny(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Price) int { return a.Start.Compare(b.Start) })
	return out
}

func overlapsAny(ps []store.Price, p store.Price) bool {
	for _, q := range ps {
		if p.Start.Before(q.End) && q.Start.Before(p.End) {
			return true
		}
	}
	return false
}

// entsoeRequest is the A44 query of [from, to) for a bidding zone.
func entsoeRequest(base, zone, token string, from, to time.Time) (*http.Request, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("tariffs: entsoe url: %w", err)
	}
	const layout = "200601021504"
	q := url.Values{
		"securityToken": {token},
		"documentType":  {"A44"},
		"in_Domain":     {zone},
		"out_Domain":    {zone},
		"periodStart":   {from.UTC().Format(layout)},
		"periodEnd":     {to.UTC().Format(layout)},
	}
	u.RawQuery = q.Encode()
	return http.NewRequest(http.MethodGet, u.String(), nil)
}
