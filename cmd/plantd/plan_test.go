package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
)

// TestPlanNegativePrice is issue 45's negative prices with the real
// binary: an aWATTar market served by a local HTTP server whose prices
// are negative from the hour before now to two hours after it (feed-in
// paid at the market price), the demo's inverters exporting at noon with
// no house load. The plan holds export at 0 W on the grid meter with an
// installer's FeedInLimit 0 W window from now to the end of the negative
// hours (plant log PriceNegative), GET /gateway/v1/plan shows the slots
// with export 0; a grid operator's 30 % limit during it governs the
// inverters, and export stays held.
func TestPlanNegativePrice(t *testing.T) {
	t.Parallel() // its own simulator, binary and server
	if testing.Short() {
		t.Skip("runs plantd against a price server and an exporting plant (~20 s)")
	}
	now := time.Now()
	negFrom, negTo := now.Truncate(time.Hour).Add(-time.Hour), now.Truncate(time.Hour).Add(2*time.Hour)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start, err1 := strconv.ParseInt(r.URL.Query().Get("start"), 10, 64)
		end, err2 := strconv.ParseInt(r.URL.Query().Get("end"), 10, 64)
		if err1 != nil || err2 != nil || end <= start {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		var items []string
		for ms := start; ms < end; ms += 3600_000 {
			price := 80.0
			if h := time.UnixMilli(ms); !h.Before(negFrom) && h.Before(negTo) {
				price = -50
			}
			items = append(items, fmt.Sprintf(`{"start_timestamp":%d,"end_timestamp":%d,"marketprice":%g,"unit":"Eur/MWh"}`, ms, ms+3600_000, price))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s],"url":"/de/v1/marketdata"}`, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)

	p := dimmingSim(t)
	p.SetLoadOffset(-1e6) // no house load: the PV is exported
	path := dimmingConfig(t, p)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `  - {name: dso, sha256: %s, role: gridoperator}
tariffs:
  plant: p1
  market: {provider: awattar, zone: de, url: %s/v1/marketdata}
  import: {market: true, surcharge: 0.2, vat: 19}
  feedIn: {market: true}
`, config.TokenHash(tokGrid), srv.URL)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	defer d.stop()
	d.waitAPI(30 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter")

	logged := func(code, part string) bool {
		for _, e := range plantLog(t, d) {
			if e.Code == code && strings.Contains(e.Message, part) {
				return true
			}
		}
		return false
	}
	proctest.WaitFor(t, "PriceNegative logged", 30*time.Second, func() bool {
		if logged("PriceNegative", "export held at 0 W") {
			return true
		}
		_, b := d.request("GET", "/gateway/v1/plan", tokStd, "")
		t.Logf("plan: %.300s", b)
		return false
	})
	type sched struct {
		ScheduleID, CreatedBy string
		Commands              []struct {
			Command, Status string
			Value           *float64
			EndUtc          string `json:"end"`
		}
	}
	code, b := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	var list struct{ Schedules []sched }
	if err := json.Unmarshal(b, &list); code != 200 || err != nil {
		t.Fatalf("GET schedules: %d %s %v", code, b, err)
	}
	var window *sched
	for i, sc := range list.Schedules {
		if strings.HasPrefix(sc.CreatedBy, "plan:negative-price") {
			window = &list.Schedules[i]
		}
	}
	if window == nil || len(window.Commands) != 1 || window.Commands[0].Command != "FeedInLimit" || window.Commands[0].Value == nil || *window.Commands[0].Value != 0 {
		t.Fatalf("no FeedInLimit 0 W window by the plan's door in %s", b)
	}
	if !strings.Contains(window.CreatedBy, "installer") {
		t.Errorf("window created by %q, want the installer's role", window.CreatedBy)
	}
	proctest.WaitFor(t, "export at most 50 W on the grid meter", 30*time.Second, func() bool { return -p.Balance().GridW <= 50 })

	// The plan: its first slots pay negative feed-in and export nothing.
	code, b = d.request("GET", "/gateway/v1/plan", tokStd, "")
	var pl struct {
		Configured bool
		Fallback   string
		Steps      []struct {
			StartUtc        string
			FeedInEurPerKWh float64
			ExportW         float64
			Reason          string
		}
	}
	if err := json.Unmarshal(b, &pl); code != 200 || err != nil || !pl.Configured || len(pl.Steps) < 4 {
		t.Fatalf("GET plan: %d %s %v", code, b, err)
	}
	if s := pl.Steps[0]; s.FeedInEurPerKWh >= 0 || s.ExportW != 0 {
		t.Errorf("plan's first slot %+v, want a negative feed-in price and no export", s)
	}
	if code, b := d.request("GET", "/gateway/v1/plan?x=1", tokStd, ""); code != 400 {
		t.Errorf("GET plan?x=1: %d %s, want 400", code, b)
	}

	// A grid operator's 30 % limit governs the inverters; export stays
	// held.
	start := time.Now().UTC()
	sc := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":30,"unit":"%%"}]}`,
		start.Format(time.RFC3339), start.Add(time.Hour).Format(time.RFC3339))
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid, sc); code != 201 {
		t.Fatalf("POST opModMaxLimW 30 %%: %d %s", code, b)
	}
	proctest.WaitFor(t, "both inverters limited to 30 % at most", 20*time.Second, func() bool {
		return p.Device("inv1").State().EffectiveLimitPct <= 30 && p.Device("inv2").State().EffectiveLimitPct <= 30
	})
	proctest.WaitFor(t, "export still at most 50 W", 20*time.Second, func() bool { return -p.Balance().GridW <= 50 })
	t.Logf("window %s %+v; balance %+v", window.ScheduleID, window.Commands[0], p.Balance())
}
