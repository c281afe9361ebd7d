package tariffs

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/store"
)

// awattarDocument is aWATTar's market data answer.
type awattarDocument struct {
	Object string `json:"object"`
	Data   []struct {
		Start int64    `json:"start_timestamp"`
		End   int64    `json:"end_timestamp"`
		Price *float64 `json:"marketprice"`
		Unit  string   `json:"unit"`
	} `json:"data"`
}

// ParseAWATTar reads aWATTar's market data JSON and returns its prices in
// time order (Source and FetchedAt empty); an empty list is ErrNoData.
func ParseAWATTar(r io.Reader) ([]store.Price, error) {
	var doc awattarDocument
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if doc.Object != "list" {
		return nil, fmt.Errorf("%w: object %q, want list", ErrMalformed, doc.Object)
	}
	if len(doc.Data) == 0 {
		return nil, fmt.Errorf("%w (awattar: empty list)", ErrNoData)
	}
	out := make([]store.Price, 0, len(doc.Data))
	for i, d := range doc.Data {
		switch {
		case d.Price == nil:
			return nil, fmt.Errorf("%w: data[%d] has no marketprice", ErrMalformed, i)
		case !strings.EqualFold(d.Unit, "Eur/MWh"):
			return nil, fmt.Errorf("%w: data[%d] unit %q, want Eur/MWh", ErrMalformed, i, d.Unit)
		case d.End <= d.Start || d.Start <= 0:
			return nil, fmt.Errorf("%w: data[%d] interval %d..%d", ErrMalformed, i, d.Start, d.End)
		}
		out = append(out, store.Price{Start: time.UnixMilli(d.Start).UTC(), End: time.UnixMilli(d.End).UTC(), EURPerMWh: *d.Price})
	}
	slices.SortFunc(out, func(a, b store.Price) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// awattarRequest asks for the prices of [from, to).
func awattarRequest(base string, from, to time.Time) (*http.Request, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("tariffs: awattar url: %w", err)
	}
	u.RawQuery = url.Values{"start": {strconv.FormatInt(from.UnixMilli(), 10)}, "end": {strconv.FormatInt(to.UnixMilli(), 10)}}.Encode()
	return http.NewRequest(http.MethodGet, u.String(), nil)
}
