package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
)

// TestTariffsDaemon runs the real binary with an aWATTar market served
// by a local HTTP server (prices made for the hours asked): plantd asks
// once for its horizon, shows the prices after surcharge and VAT at GET
// /gateway/v1/tariffs and counts the request in /metrics.
func TestTariffsDaemon(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		start, err1 := strconv.ParseInt(r.URL.Query().Get("start"), 10, 64)
		end, err2 := strconv.ParseInt(r.URL.Query().Get("end"), 10, 64)
		if err1 != nil || err2 != nil || end <= start || r.URL.Path != "/v1/marketdata" {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		var items []string
		for t, i := start, 0; t < end; t, i = t+3600_000, i+1 {
			items = append(items, fmt.Sprintf(`{"start_timestamp":%d,"end_timestamp":%d,"marketprice":%d.5,"unit":"Eur/MWh"}`, t, t+3600_000, 100+i))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s],"url":"/de/v1/marketdata"}`, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	const token = "tariffs-test-token-0123456789"
	d := startDaemonConfig(t, fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Tariffs, timezone: Europe/Berlin}
tokens:
  - {name: t, sha256: %s, role: standard}
tariffs:
  market: {provider: awattar, zone: de, url: %s/v1/marketdata}
  import: {market: true, surcharge: 0.2, vat: 19}
  feedIn: {fixed: 0.08}
`, filepath.Join(t.TempDir(), "plantd.db"), config.TokenHash(token), srv.URL))
	defer d.stop()
	d.waitAPI(60 * time.Second)

	type answer struct {
		Configured bool
		FromUtc    time.Time
		Market     struct {
			Source             string
			Requests, Failures int
			Stale              bool
			PricesUntilUtc     time.Time
		}
		Slots []struct {
			StartUtc, EndUtc                 time.Time
			ImportEurPerKWh, FeedInEurPerKWh float64
			MarketEurPerMWh                  float64
			Source                           string
		}
	}
	a := proctest.WaitValue(t, "the tariffs fetched", 30*time.Second, func() (answer, bool) {
		code, body := d.request("GET", "/gateway/v1/tariffs", token, "")
		var a answer
		return a, code == 200 && json.Unmarshal(body, &a) == nil && a.Market.Requests >= 1
	})
	if !a.Configured || a.Market.Source != "awattar:de" || a.Market.Stale || a.Market.Failures != 0 || len(a.Slots) == 0 {
		t.Fatalf("tariffs: %+v", a)
	}
	// The slots run from the answer's time (fromUtc, to the second) to the
	// end of its hour, then hour by hour to the end of the prices held: a
	// local midnight, tomorrow's before the day-ahead auction's publication
	// (12:00 UTC), the day after's from then on; so 1 to 48 of them, by
	// the time of day.
	until := a.Market.PricesUntilUtc.In(mustLocation(t, "Europe/Berlin"))
	if until.Hour() != 0 || until.Minute() != 0 || !until.After(a.FromUtc) || until.Sub(a.FromUtc) > 48*time.Hour {
		t.Errorf("prices until %v: want a local midnight within 48 h after %v", until, a.FromUtc)
	}
	first, last := a.Slots[0], a.Slots[len(a.Slots)-1]
	if d := first.StartUtc.Sub(a.FromUtc); d < 0 || d >= time.Second || !last.EndUtc.Equal(a.Market.PricesUntilUtc) {
		t.Errorf("slots %v..%v, want from %v to %v", first.StartUtc, last.EndUtc, a.FromUtc, a.Market.PricesUntilUtc)
	}
	if !first.EndUtc.Equal(first.StartUtc.Truncate(time.Hour).Add(time.Hour)) {
		t.Errorf("first slot %+v: want it to end on the hour", first)
	}
	for i, s := range a.Slots[1:] {
		if s.EndUtc.Sub(s.StartUtc) != time.Hour || !s.StartUtc.Equal(a.Slots[i].EndUtc) {
			t.Errorf("slot %d %+v: want an hour right after the one before", i+1, s)
		}
	}
	for i, s := range a.Slots {
		if s.Source != "awattar:de" {
			t.Errorf("slot %d %+v: want source awattar:de", i, s)
		}
	}
	s := a.Slots[0]
	if want := (s.MarketEurPerMWh/1000 + 0.2) * 1.19; s.Source != "awattar:de" || s.FeedInEurPerKWh != 0.08 || s.ImportEurPerKWh < want-1e-9 || s.ImportEurPerKWh > want+1e-9 {
		t.Errorf("first slot %+v, want import %v", s, want)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (the horizon in one)", n)
	}
	resp, err := http.Get("http://" + d.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`plantd_tariff_fetches_total{source="awattar:de"} 1`, `plantd_tariff_stale{source="awattar:de"} 0`, `plantd_tariff_import_price_eur_per_kwh{source="awattar:de"}`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
