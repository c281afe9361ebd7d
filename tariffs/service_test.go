package tariffs

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/store"
	"plantd/tariffs/tariffconfig"
)

// clock is a test's clock, stepped by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// logBuf keeps a logger's lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// provider is a local HTTPS server answering as a price provider: the
// recorded document, an HTTP 500 or garbage, counting the requests.
type provider struct {
	*httptest.Server
	requests atomic.Int64
	mode     atomic.Value // "ok", "500", "garbage"
	lastURL  atomic.Value // the last request's URL
	got      chan struct{}
}

func newProvider(t *testing.T, fixture, contentType string) *provider {
	body, err := os.ReadFile("testdata/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{got: make(chan struct{}, 100)}
	p.mode.Store("ok")
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		p.lastURL.Store(r.URL.String())
		defer func() { p.got <- struct{}{} }()
		switch p.mode.Load() {
		case "500":
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		case "garbage":
			w.Header().Set("Content-Type", contentType)
			w.Write(body[:len(body)/2])
		default:
			w.Header().Set("Content-Type", contentType)
			w.Write(body)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), store.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const testToken = "0b1d2f3a-4c5d-6e7f-8a9b-0c1d2e3f4a5b"

func entsoeConfig(url string) tariffconfig.Config {
	fixed := 0.0786
	return tariffconfig.Config{Plant: "p1",
		Market: &tariffconfig.Market{Provider: "entsoe", Zone: "10Y1001A1001A82H", Token: testToken, URL: url},
		Import: tariffconfig.Import{Market: true, Surcharge: 0.19, VAT: 19}, FeedIn: tariffconfig.FeedIn{Fixed: &fixed}}
}

// TestFetcherENTSOE steps the fetcher through two days against a local
// provider serving the recorded DE-LU document: one request for the
// horizon, none while it is stored, tomorrow asked for from 12:00 UTC at
// most once an hour; a provider answering 500 or half a document marks
// the prices stale (one Warn line for the episode), keeps them, and waits
// longer; the next good answer clears it. A new service on the reopened
// database asks for nothing.
func TestFetcherENTSOE(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "entsoe-de-lu-2024-10-06.xml", "text/xml")
	dbPath := filepath.Join(t.TempDir(), "plantd.db")
	st := openStore(t, dbPath)
	clk := &clock{t: time.Date(2024, 10, 6, 10, 0, 0, 0, berlin)}
	var logs logBuf
	s, err := New(entsoeConfig(p.URL+"/api"), Deps{Location: berlin, Store: st, Client: p.Client(), Now: clk.now, WallClock: clk.now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	step := func(what string, wantRequests int64) {
		t.Helper()
		s.Step(ctx)
		if n := p.requests.Load(); n != wantRequests {
			t.Fatalf("%s (%s): %d requests, want %d", what, clk.now().UTC().Format("Jan 2 15:04Z"), n, wantRequests)
		}
	}

	step("today missing", 1)
	if u := p.lastURL.Load().(string); !strings.Contains(u, "documentType=A44") || !strings.Contains(u, "in_Domain=10Y1001A1001A82H") ||
		!strings.Contains(u, "out_Domain=10Y1001A1001A82H") || !strings.Contains(u, "periodStart=202410052200") ||
		!strings.Contains(u, "periodEnd=202410062200") || !strings.Contains(u, "securityToken="+testToken) {
		t.Errorf("query %s", u)
	}
	step("today stored", 1)
	clk.set(time.Date(2024, 10, 6, 12, 30, 0, 0, time.UTC))
	step("tomorrow stored too (the document has both days)", 1)
	clk.set(time.Date(2024, 10, 7, 11, 59, 0, 0, time.UTC))
	step("the 8th not due before 12:00 UTC", 1)
	clk.set(time.Date(2024, 10, 7, 12, 0, 0, 0, time.UTC))
	step("the 8th due", 2)
	if u := p.lastURL.Load().(string); !strings.Contains(u, "periodStart=202410072200") || !strings.Contains(u, "periodEnd=202410082200") {
		t.Errorf("query for the 8th: %s", u)
	}
	for range 5 {
		clk.add(10 * time.Minute)
		step("the 8th still missing, within the hour", 2)
	}
	clk.add(10 * time.Minute)
	step("an hour later", 3)
	if st := s.Status(); st.Stale || st.LastError != "" {
		t.Errorf("an answer without the 8th is no failure: %+v", st)
	}

	// The provider fails: the prices are kept, marked stale.
	before := s.Slots(time.Date(2024, 10, 7, 0, 0, 0, 0, berlin), time.Date(2024, 10, 8, 0, 0, 0, 0, berlin))
	if len(before) != 24 || before[0].Stale {
		t.Fatalf("slots of the 7th: %d, stale %v", len(before), before[0].Stale)
	}
	p.mode.Store("500")
	clk.add(time.Hour)
	step("provider down", 4)
	st1 := s.Status()
	if !st1.Stale || !strings.Contains(st1.LastError, "HTTP 500") || strings.Contains(st1.LastError, testToken) {
		t.Errorf("after a 500: %+v", st1)
	}
	stale := s.Slots(time.Date(2024, 10, 7, 0, 0, 0, 0, berlin), time.Date(2024, 10, 8, 0, 0, 0, 0, berlin))
	if len(stale) != 24 || !stale[0].Stale || stale[18].Import != before[18].Import {
		t.Errorf("slots while stale: %d, stale %v, %v (was %v)", len(stale), stale[0].Stale, stale[18].Import, before[18].Import)
	}
	clk.add(time.Hour)
	step("an hour after the first failure", 5)
	p.mode.Store("garbage")
	clk.add(time.Hour)
	step("two hours after the second failure: not yet", 5)
	clk.add(time.Hour)
	step("two hours after the second failure", 6)
	if st := s.Status(); !st.Stale || !strings.Contains(st.LastError, "malformed") || st.Failures != 3 {
		t.Errorf("after half a document: %+v", st)
	}
	if n := logs.count("level=WARN"); n != 1 {
		t.Errorf("%d Warn lines for one episode of 3 failures, want 1:\n%s", n, logs.b.String())
	}
	p.mode.Store("ok")
	clk.add(4 * time.Hour)
	step("four hours after the third failure", 7)
	if st := s.Status(); st.Stale || st.LastError != "" || st.Requests != 7 || st.Failures != 3 {
		t.Errorf("recovered: %+v", st)
	}
	if n := logs.count("prices fetched again"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}

	// A restart: the horizon is read from the store, no request.
	st.Close()
	st2 := openStore(t, dbPath)
	p2 := newProvider(t, "entsoe-de-lu-2024-10-06.xml", "text/xml")
	clk.set(time.Date(2024, 10, 6, 14, 0, 0, 0, berlin))
	s2, err := New(entsoeConfig(p2.URL+"/api"), Deps{Location: berlin, Store: st2, Client: p2.Client(), Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s2.Step(ctx)
	if n := p2.requests.Load(); n != 0 {
		t.Errorf("after a restart with the horizon stored: %d requests, want 0", n)
	}
	if got := s2.Slots(time.Date(2024, 10, 6, 0, 0, 0, 0, berlin), time.Date(2024, 10, 8, 0, 0, 0, 0, berlin)); len(got) != 48 {
		t.Errorf("slots after a restart: %d, want 48", len(got))
	}
	// A restart half an hour after the last request, the 8th still
	// missing: the stored fetch time holds the next request back to the
	// hour.
	clk.set(time.Date(2024, 10, 7, 21, 30, 0, 0, time.UTC))
	s3, err := New(entsoeConfig(p2.URL+"/api"), Deps{Location: berlin, Store: st2, Client: p2.Client(), Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if last := s3.Status().LastFetch; !last.Equal(time.Date(2024, 10, 7, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("last fetch after a restart: %v, want the stored 21:00Z", last)
	}
	s3.Step(ctx)
	if n := p2.requests.Load(); n != 0 {
		t.Errorf("a restart within the hour of the last request: %d requests, want 0", n)
	}
	clk.add(30 * time.Minute)
	s3.Step(ctx)
	if n := p2.requests.Load(); n != 1 {
		t.Errorf("an hour after the last request: %d requests, want 1", n)
	}
}

// TestFetcherUnreachable: a provider that does not answer is a failure
// whose error names the host but not the security token.
func TestFetcherUnreachable(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "entsoe-de-lu-2024-10-06.xml", "text/xml")
	url, client := p.URL, p.Client()
	p.Close()
	clk := &clock{t: time.Date(2024, 10, 6, 10, 0, 0, 0, berlin)}
	s, err := New(entsoeConfig(url+"/api"), Deps{Location: berlin, Store: openStore(t, filepath.Join(t.TempDir(), "p.db")), Client: client, Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(t.Context())
	st := s.Status()
	if !st.Stale || st.LastError == "" || strings.Contains(st.LastError, testToken) || !strings.Contains(st.LastError, strings.TrimPrefix(url, "https://")) {
		t.Errorf("unreachable: %+v", st)
	}
	if len(s.Slots(clk.now(), clk.now().Add(time.Hour))) != 0 {
		t.Error("slots without prices and without a fixed fallback")
	}
}

// TestFetcherAWATTar: the aWATTar query and the owner's prices of the
// recorded Saturday, hour by hour: (market + surcharge) × VAT, feed-in
// market + offset.
func TestFetcherAWATTar(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "awattar-de-2024-06-14.json", "application/json")
	clk := &clock{t: time.Date(2024, 6, 15, 15, 0, 0, 0, berlin)} // 13:00 UTC: tomorrow is due
	cfg := tariffconfig.Config{Plant: "p1", Market: &tariffconfig.Market{Provider: "awattar", Zone: "de", URL: p.URL + "/v1/marketdata"},
		Import: tariffconfig.Import{Market: true, Surcharge: 0.2, VAT: 19}, FeedIn: tariffconfig.FeedIn{Market: true, Offset: -0.004}}
	s, err := New(cfg, Deps{Location: berlin, Store: openStore(t, filepath.Join(t.TempDir(), "p.db")), Client: p.Client(), Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(t.Context())
	s.Step(t.Context())
	if n := p.requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if u := p.lastURL.Load().(string); u != "/v1/marketdata?end=1718575200000&start=1718402400000" {
		t.Errorf("query %s, want the 15th and 16th (CEST) in ms", u)
	}
	day := time.Date(2024, 6, 15, 0, 0, 0, 0, berlin)
	slots := s.Slots(day, day.AddDate(0, 0, 1))
	if len(slots) != 24 {
		t.Fatalf("%d slots, want 24", len(slots))
	}
	for i, sl := range slots {
		m := awattarDE0615[i]
		wantIm, wantFi := (m/1000+0.2)*1.19, m/1000-0.004
		if !sl.Start.Equal(day.Add(time.Duration(i)*time.Hour)) || math.Abs(sl.Import-wantIm) > 1e-12 || math.Abs(sl.FeedIn-wantFi) > 1e-12 ||
			sl.Source != "awattar:de" || sl.MarketEURPerMWh == nil || *sl.MarketEURPerMWh != m {
			t.Errorf("slot %d: %+v, want import %v, feed-in %v", i, sl, wantIm, wantFi)
		}
	}
}

// TestSlotsFixed: a time-of-use table cut at its windows' edges and at
// full hours, a window over midnight, and the table as the fallback of
// hours without a market price.
func TestSlotsFixed(t *testing.T) {
	t.Parallel()
	fixed := 0.08
	cfg := tariffconfig.Config{Plant: "p1", Import: tariffconfig.Import{Fixed: []string{"0.30", "Mon-Fri 17:30-20:00 0.42", "Fri 22:00-06:00 0.22"}},
		FeedIn: tariffconfig.FeedIn{Fixed: &fixed}}
	s, err := New(cfg, Deps{Location: berlin})
	if err != nil {
		t.Fatal(err)
	}
	fri := time.Date(2026, 12, 4, 0, 0, 0, 0, berlin)
	at := func(h, m int) time.Time { return fri.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	slots := s.Slots(at(16, 0), at(31, 0)) // Friday 16:00 to Saturday 07:00
	type want struct {
		start, end time.Time
		price      float64
	}
	wants := []want{{at(16, 0), at(17, 0), 0.30}, {at(17, 0), at(17, 30), 0.30}, {at(17, 30), at(18, 0), 0.42}, {at(18, 0), at(19, 0), 0.42}, {at(19, 0), at(20, 0), 0.42},
		{at(20, 0), at(21, 0), 0.30}, {at(21, 0), at(22, 0), 0.30}}
	for h := 22; h < 30; h++ {
		wants = append(wants, want{at(h, 0), at(h+1, 0), 0.22})
	}
	wants = append(wants, want{at(30, 0), at(31, 0), 0.30})
	if len(slots) != len(wants) {
		t.Fatalf("%d slots, want %d: %+v", len(slots), len(wants), slots)
	}
	for i, w := range wants {
		sl := slots[i]
		if !sl.Start.Equal(w.start) || !sl.End.Equal(w.end) || sl.Import != w.price || sl.FeedIn != 0.08 || sl.Source != SourceFixed || sl.Stale {
			t.Errorf("slot %d: %+v, want %v..%v at %v", i, sl, w.start.In(berlin).Format("Mon 15:04"), w.end.In(berlin).Format("15:04"), w.price)
		}
	}

	// With a market: its hours where it has prices, the table elsewhere.
	p := newProvider(t, "entsoe-de-lu-2024-10-06.xml", "text/xml")
	mcfg := entsoeConfig(p.URL + "/api")
	mcfg.Import.Fixed = []string{"0.35"}
	clk := &clock{t: time.Date(2024, 10, 7, 20, 0, 0, 0, berlin)}
	ms, err := New(mcfg, Deps{Location: berlin, Store: openStore(t, filepath.Join(t.TempDir(), "p.db")), Client: p.Client(), Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ms.Step(t.Context())
	mixed := ms.Slots(time.Date(2024, 10, 7, 22, 0, 0, 0, berlin), time.Date(2024, 10, 8, 2, 0, 0, 0, berlin))
	if len(mixed) != 4 || mixed[0].Source != "entsoe:10Y1001A1001A82H" || mixed[1].Source != "entsoe:10Y1001A1001A82H" ||
		mixed[2].Source != SourceFixed || mixed[2].Import != 0.35 || math.Abs(mixed[0].Import-(91.91/1000+0.19)*1.19) > 1e-12 {
		t.Errorf("market then fallback: %+v", mixed)
	}
	if now, ok := ms.Current(); !ok || now.Source != "entsoe:10Y1001A1001A82H" || *now.MarketEURPerMWh != 121.98 {
		t.Errorf("now (20:00 on the 7th): %+v, %v", now, ok)
	}
}

// TestRun: Run reads the store, asks for the horizon at once and returns
// when its context ends.
func TestRun(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "awattar-de-2024-06-14.json", "application/json")
	clk := &clock{t: time.Date(2024, 6, 15, 9, 0, 0, 0, berlin)}
	fixed := 0.08
	cfg := tariffconfig.Config{Plant: "p1", Market: &tariffconfig.Market{Provider: "awattar", Zone: "de", URL: p.URL},
		Import: tariffconfig.Import{Market: true}, FeedIn: tariffconfig.FeedIn{Fixed: &fixed}}
	s, err := New(cfg, Deps{Location: berlin, Store: openStore(t, filepath.Join(t.TempDir(), "p.db")), Client: p.Client(), Now: clk.now, WallClock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-p.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no request within 10 s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := p.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
