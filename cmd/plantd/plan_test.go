package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
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

// TestPlanGridCharge is issue 45's battery plan with the real binary: a
// time-of-use tariff cheap (0.10 EUR/kWh) for the 45 minutes from now and
// dear (0.40) otherwise, the demo's battery at 20 % at night (no PV), grid
// charging allowed: the plan charges the battery from the grid now, a
// BatteryPower setpoint of the plan's door, and the battery's registers
// (through the simulator) show it charging with the grid meter importing
// it; GET /gateway/v1/plan shows chargeGrid and a saving against no plan.
func TestPlanGridCharge(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd with a battery and a time-of-use tariff (~20 s)")
	}
	p := nightBatterySim(t)
	path := consumerConfigOf(t, p, consumerOpts{devices: []string{"bat"}, plant: ", battery: {gridCharge: true, reserveSoc: 10}",
		top: cheapNowTariffs(t)})
	d := startDaemon(t, path)
	defer d.stop()
	d.waitAPI(30 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter", "bat")

	before := p.Balance()
	proctest.WaitFor(t, "the battery charging from the grid (its registers)", 60*time.Second, func() bool {
		b := p.Balance()
		if b.BatteryW < -1000 && b.GridW > b.LoadW+500 {
			return true
		}
		_, pb := d.request("GET", "/gateway/v1/plan", tokStd, "")
		t.Logf("balance %+v plan %.600s", b, pb)
		return false
	})
	code, b := d.request("GET", "/gateway/v1/plan", tokStd, "")
	var pl struct {
		Configured bool
		SavingEur  *float64
		Steps      []struct {
			Battery  string
			BatteryW float64
			SoCPct   float64
		}
	}
	if err := json.Unmarshal(b, &pl); code != 200 || err != nil || !pl.Configured || len(pl.Steps) == 0 {
		t.Fatalf("GET plan: %d %.400s %v", code, b, err)
	}
	if s := pl.Steps[0]; s.Battery != "chargeGrid" || s.BatteryW <= 0 {
		t.Errorf("plan's first slot %+v, want chargeGrid", s)
	}
	if pl.SavingEur == nil || *pl.SavingEur <= 0 {
		t.Errorf("plan's saving %v, want above 0", pl.SavingEur)
	}
	code, b = d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	if code != 200 {
		t.Fatalf("GET schedules: %d %s", code, b)
	}
	after := p.Balance()
	t.Logf("before %+v; charging %+v; plan saving %.2f EUR", before, after, *pl.SavingEur)
}

// TestPlanWiredToForecast: the daemon builds the PV forecast before the
// day-ahead plan that reads it (built the other way round, the plan took
// every plant's PV as 0: scripts/plan-days showed a sunny day planned
// without PV); a plant without a location has no forecast, and the plan
// says so at start.
func TestPlanWiredToForecast(t *testing.T) {
	t.Parallel() // its own daemon and files
	for _, tc := range []struct {
		name, location string
		warned         bool
	}{
		{"located", ", location: {latitude: 48.1, longitude: 11.6}", false},
		{"no location", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("plan.yaml", []byte(fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Plan, timezone: Europe/Berlin%s}
tariffs:
  import: {fixed: ["0.30", "00:00-06:00 0.18"]}
  feedIn: {fixed: 0.08}
`, filepath.Join(t.TempDir(), "plantd.db"), tc.location)))
			if err != nil {
				t.Fatal(err)
			}
			var logs proctest.Buffer
			d := runInProcess(t, cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)))
			if d.plan == nil || (d.forecast != nil) == tc.warned {
				t.Fatalf("plan %v, forecast %v: want a plan, and a forecast for a located plant", d.plan != nil, d.forecast != nil)
			}
			if got := strings.Contains(logs.String(), "plan: no PV forecast"); got != tc.warned {
				t.Errorf("logged \"plan: no PV forecast\": %v, want %v; log:\n%s", got, tc.warned, logs.String())
			}
		})
	}
}

// batteryPlantConfig is the demo plant without its sensor and
// ripple-control receiver (no forecast, no §14a input), its battery at
// 20 %.
func batteryPlantConfig() sim.Config {
	cfg := sim.DemoConfig()
	var devs []sim.DeviceConfig
	for _, d := range cfg.Devices {
		if d.Kind == kind.Battery {
			d.SoCPct = 20
		}
		if d.Kind != kind.Sensor && d.ID != "rcr" {
			devs = append(devs, d)
		}
	}
	cfg.Devices = devs
	return cfg
}

// nightBatterySim is batteryPlantConfig on a January night (no PV): a
// plan has every reason to charge the battery from the grid when power is
// cheap.
func nightBatterySim(t *testing.T) *sim.Plant {
	t.Helper()
	cfg := batteryPlantConfig()
	cfg.Start = time.Date(2026, 1, 15, 2, 0, 0, 0, mustLocation(t, "Europe/Berlin"))
	return simtest.Start(t, cfg)
}

// cheapNowTariffs is a tariffs: section for plant p1, 0.10 EUR/kWh for
// the slot of now and the two after it (Europe/Berlin) and 0.40
// otherwise, feed-in 0.08: too short to fill the battery, so the plan
// charges in each of them, now too (with two hours of cheap slots it may,
// on a tie, start later in them).
func cheapNowTariffs(t *testing.T) string {
	t.Helper()
	h := time.Now().Truncate(15 * time.Minute).In(mustLocation(t, "Europe/Berlin"))
	cheap := fmt.Sprintf("%s-%s 0.10", h.Format("15:04"), h.Add(45*time.Minute).Format("15:04"))
	return fmt.Sprintf("tariffs:\n  plant: p1\n  import: {fixed: [\"0.40\", %q]}\n  feedIn: {fixed: 0.08}\n", cheap)
}
