package web

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
)

// consumer is the part of GET /gateway/v1/consumers the browser test
// compares with the page.
type consumer struct {
	DeviceID, Name, Driver, Mode, SwitchingState, Reason string
	SGReadyState                                         int `json:"sgReadyState"`
	Charger                                              *struct{ Current float64 }
}

// consumerReasons are the page's words for the reason codes (labels.js
// REASONS).
var consumerReasons = map[string]string{
	"Surplus": "On: PV surplus", "NoSurplus": "Off: not enough PV surplus", "MustRun": "On: must-run window",
	"Manual": "Set by hand (mode On or Off)", "MinOnTime": "Held on: minimum on time", "MinOffTime": "Held off: minimum off time",
	"MaxSwitches": "Held: switchings per hour used up", "Offline": "Device not answering", "Starting": "Starting: no decision yet",
	"Probing": "Off: waits its turn to try curtailed PV", "NoMeter": "Off: no grid meter answers",
	"Dimmed": "Limited: dimmed by the grid operator (§14a)", "MinPV": "Charging at its minimum: the surplus carries no more",
	"EnableDelay":  "Waiting: the surplus must hold for the start delay",
	"DisableDelay": "At its minimum: stops when the surplus stays gone for the stop delay", "NoVehicle": "No car plugged in",
}

// sgReadyWords are the page's words for the SG-Ready states (labels.js).
var sgReadyWords = map[int]string{1: "1 Locked", 2: "2 Normal", 3: "3 Recommended", 4: "4 Forced"}

// TestBrowserConsumers drives chromium against the real plantd demo's
// consumers: the nav entry, one row per consumer of the API with its
// state (SG-Ready words), consumption, mode and reason in words, a mode
// changed from the page and back (checked against the API each time), the
// phone layout, and the overview's "of which consumers" line inside Home.
// Skipped while the demo has no consumers.
func TestBrowserConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	base, demo := startPlantd(t, bin, "demo", "--speed", "60", "--interval", "250ms", "--start", "11:00", "--mqtt", "off",
		"--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "demo.db"))
	token := demoToken(t, demo)
	var list struct{ Consumers []consumer }
	apiGet(t, base, token, "/gateway/v1/consumers?plantId=demo", &list)
	if len(list.Consumers) == 0 {
		t.Skip("demo has no consumers yet")
	}

	var mu sync.Mutex
	var requests, problems []string
	b := startBrowser(t, chrome, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		default:
			if p := pageProblem(ev); p != "" {
				problems = append(problems, p)
			}
		}
	})
	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	if err := b.eval(`document.getElementById('token').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit()`, nil); err != nil {
		t.Fatal(err)
	}
	b.waitJS("overview", `document.querySelector('#live-values .kpi')`, 15*time.Second)
	checkConsumersView(t, b, base, token, "demo", shots)

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			t.Errorf("the page asked %s, not the gateway", u)
		}
	}
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}

// checkConsumersView checks the Consumers view and the overview's
// consumer line of a signed-in page (installer role) against the API of
// base, and writes screenshots to shots.
func checkConsumersView(t *testing.T, b *browser, base, token, plantID string, shots string) {
	t.Helper()
	js := func(s string, out any) {
		t.Helper()
		if err := b.eval(s, out); err != nil {
			t.Fatal(err)
		}
	}
	shot := func(name string) {
		p := filepath.Join(shots, name+".png")
		b.screenshot(p)
		t.Logf("screenshot %s", p)
	}
	both := func(name, wait string) {
		for _, w := range []struct {
			suffix        string
			width, height int64
			mobile        bool
		}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
			b.viewport(w.width, w.height, w.mobile)
			b.waitJS(name+" at "+w.suffix+" width", wait, 10*time.Second)
			shot(name + "-" + w.suffix)
		}
		b.viewport(1280, 900, false)
	}
	var list struct{ Consumers []consumer }
	apiGet(t, base, token, "/gateway/v1/consumers?plantId="+plantID, &list)

	b.waitJS("the Consumers nav entry", `!document.querySelector('#nav a[data-view=consumers]').hidden`, 10*time.Second)
	js(`location.hash = '#/consumers'`, nil)
	rows := fmt.Sprintf(`document.querySelectorAll('#consumer-body tr[data-consumer]').length === %d`, len(list.Consumers))
	b.waitJS("a row per consumer", rows, 15*time.Second)

	// Each row against the API: name, driver and mode as listed; the
	// changing state shown consistently (the state's badge, SG-Ready's
	// words, the consumption with est., the reason in words).
	type pageRow struct {
		ID, Name, Mode, Switching, Badge, SG, SGText, Reason, ReasonText, Consumption, ConsumptionText, Estimated string
		Current, ChargerText                                                                                      string
		Select                                                                                                    bool
	}
	var got []pageRow
	js(`[...document.querySelectorAll('#consumer-body tr[data-consumer]')].map(r => ({ ID: r.dataset.consumer, Name: r.querySelector('.name').textContent,
		Mode: r.dataset.mode, Switching: r.dataset.switching, Badge: r.querySelector('.badge')?.textContent || '', SG: r.dataset.sg,
		SGText: r.querySelector('.sg')?.textContent || '', Reason: r.dataset.reason, ReasonText: r.querySelector('td.reason').textContent,
		Consumption: r.dataset.consumption, ConsumptionText: r.querySelector('td.consumption').textContent, Estimated: r.dataset.estimated,
		Current: r.dataset.current, ChargerText: r.querySelector('.charger')?.textContent || '',
		Select: !!r.querySelector('select.mode') && r.querySelector('select.mode').value === r.dataset.mode }))`, &got)
	byID := map[string]pageRow{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for _, c := range list.Consumers {
		r, ok := byID[c.DeviceID]
		if !ok {
			t.Errorf("consumer %s of the API has no row", c.DeviceID)
			continue
		}
		if r.Name != c.Name || !r.Select {
			t.Errorf("row %s: name %q, selector showing its mode %v; want %q and a selector (installer)", c.DeviceID, r.Name, r.Select, c.Name)
		}
		if r.Switching != "" && r.Badge != r.Switching {
			t.Errorf("row %s: switching %q shown as %q", c.DeviceID, r.Switching, r.Badge)
		}
		if r.SG != "" {
			n, _ := strconv.Atoi(r.SG)
			if !strings.Contains(r.SGText, sgReadyWords[n]) {
				t.Errorf("row %s: SG-Ready %s shown as %q, want %q", c.DeviceID, r.SG, r.SGText, sgReadyWords[n])
			}
		}
		if c.Charger != nil && (r.Current == "" || !strings.Contains(r.ChargerText, r.Current+" A × 3")) {
			t.Errorf("row %s: a charger at %q A shown as %q, want its current × phases", c.DeviceID, r.Current, r.ChargerText)
		}
		if words, ok := consumerReasons[r.Reason]; !ok || r.ReasonText != words {
			t.Errorf("row %s: reason %q shown as %q, want %q", c.DeviceID, r.Reason, r.ReasonText, words)
		}
		want := "–"
		if r.Consumption != "" {
			w, _ := strconv.ParseFloat(r.Consumption, 64)
			want = fmtW(w)
			if r.Estimated == "true" {
				want += " est."
			}
		}
		if r.ConsumptionText != want {
			t.Errorf("row %s: consumption %q (estimated %s) shown as %q, want %q", c.DeviceID, r.Consumption, r.Estimated, r.ConsumptionText, want)
		}
	}
	both("consumers", rows)

	// On a phone every row is a block of label and value: nothing scrolls
	// sideways.
	b.viewport(390, 844, true)
	for _, p := range scrollsSideways(t, b) {
		t.Errorf("consumers at 390 px: %s", p)
	}
	b.viewport(1280, 900, false)

	// A mode set on the page and back, each time as the API then lists it.
	c := list.Consumers[0]
	from, to := c.Mode, "Off"
	if from == "Off" {
		to = "On"
	}
	for _, mode := range []string{to, from} {
		js(fmt.Sprintf(`(() => { const s = document.querySelector('#consumer-body select.mode[data-consumer=%q]'); s.value = %q; s.dispatchEvent(new Event('change')) })()`, c.DeviceID, mode), nil)
		b.waitJS("mode "+mode+" of "+c.DeviceID, fmt.Sprintf(`document.querySelector('#consumer-set[data-consumer=%q][data-mode=%q]') && document.querySelector('#consumer-body tr[data-consumer=%q][data-mode=%q]')`,
			c.DeviceID, mode, c.DeviceID, mode), 10*time.Second)
		var api consumer
		apiGet(t, base, token, "/gateway/v1/consumers/"+c.DeviceID, &api)
		if api.Mode != mode {
			t.Errorf("after setting %s to %s on the page the API lists mode %q", c.DeviceID, mode, api.Mode)
		}
		if mode == to {
			shot("consumers-mode-set-desktop")
		}
	}

	// The overview: the consumers' part inside Home, Home's value still the
	// balance's total consumption.
	js(`location.hash = '#/overview'`, nil)
	line := `document.getElementById('home-consumers')?.textContent.startsWith('of which consumers: ')`
	b.waitJS("the consumers' line in Home", line, 15*time.Second)
	var home struct{ Value, Text, Total, Line, LineValue string }
	js(`(() => { const n = document.querySelector('.node.n-home'), l = document.getElementById('home-consumers');
		return { Value: n.dataset.value, Text: n.querySelector('.value').textContent,
			Total: document.querySelector('#live-values [data-field=totalConsumption]').dataset.value, Line: l.textContent, LineValue: l.dataset.value } })()`, &home)
	if home.Value != home.Total {
		t.Errorf("Home shows %s W, the live balance's total consumption is %s W: the consumers must not be added", home.Value, home.Total)
	}
	if v, err := strconv.ParseFloat(home.Value, 64); err == nil && home.Text != fmtW(v) {
		t.Errorf("Home's value %q, want %q", home.Text, fmtW(v))
	}
	if home.LineValue != "" {
		v, _ := strconv.ParseFloat(home.LineValue, 64)
		if !strings.Contains(home.Line, fmtW(v)) {
			t.Errorf("consumers' line %q, want %s", home.Line, fmtW(v))
		}
	}
	t.Logf("Home %s; %s", home.Text, home.Line)
	both("overview-consumers", line)
}
