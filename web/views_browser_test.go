package web

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/modbus"
)

// TestBrowserViews drives chromium against the real plantd demo through
// the page in the owner's words: Devices with every value, set, kind and
// model in words (no API names, "—" for a model no device tells); the
// Grid operator view with the ripple-control receiver's contacts as read
// and, once K3 is closed on the I/O module from outside, its 30 % limit in
// force, as GET /gateway/v1/inputs says; the Settings view's four types in
// words, the two reactive-power functions told apart; Grid control's
// commands in words and its command selector wide enough for its words;
// the History chart at 390 px with a plotting area of 300 px and more and
// its legend folded. Every view is shot at 1280 and 390 px, and none
// scrolls sideways at 390 px.
func TestBrowserViews(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	base, demo := startPlantd(t, bin, "demo", "--speed", "300", "--interval", "250ms", "--start", "11:00", "--mqtt", "off",
		"--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "demo.db"))
	token, rcr := demoToken(t, demo), demoDeviceAddr(t, demo, "rcr")
	var problems consoleProblems
	b := startBrowser(t, chrome, problems.add)
	js := func(s string, out any) {
		t.Helper()
		if err := b.eval(s, out); err != nil {
			t.Fatal(err)
		}
	}
	shot := func(name string) {
		p := filepath.Join(shots, "views-"+name+".png")
		b.screenshot(p)
		t.Logf("screenshot %s", p)
	}
	// both shoots a view at desktop and phone width, and checks that at
	// the phone's nothing scrolls sideways.
	both := func(name, wait string) {
		t.Helper()
		b.viewport(1280, 900, false)
		b.waitJS(name+" at desktop width", wait, 15*time.Second)
		shot(name + "-desktop")
		b.viewport(390, 844, true)
		b.waitJS(name+" at phone width", wait, 15*time.Second)
		shot(name + "-phone")
		for _, p := range scrollsSideways(t, b) {
			t.Errorf("%s at 390 px: %s", name, p)
		}
		b.viewport(1280, 900, false)
	}
	nav := func(view string) { t.Helper(); js("location.hash = '#/"+view+"'", nil) }

	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	js(`document.getElementById('token').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("overview", `document.querySelector('#live-values .kpi')`, 15*time.Second)
	both("overview", `document.querySelector('#live-values .kpi')`)

	// Devices: values, sets and kinds in words, the API's names only as
	// titles; consumers' models "—", never "unknown".
	nav("devices")
	allOnline := `(() => { const arts = [...document.querySelectorAll('#devices article.device')];
		return arts.length === 10 && arts.every(a => a.dataset.comm === 'Ok' && a.querySelector('tr[data-name]')) })()`
	b.waitJS("ten devices online with values", allOnline, 20*time.Second)
	var dev struct {
		Values, Sets, Kinds, Models []string
		Heater                      string
	}
	js(`(() => ({ Values: [...document.querySelectorAll('#devices tr[data-name] td:first-child')].map(e => e.textContent),
		Sets: [...document.querySelectorAll('#devices tr.group th')].map(e => e.textContent),
		Kinds: [...document.querySelectorAll('#devices dl.kv dt')].filter(e => e.textContent === 'Kind').map(e => e.nextElementSibling.textContent),
		Models: [...document.querySelectorAll('#devices dd.model')].map(e => e.textContent),
		Heater: document.querySelector('#dev-heater dd.model')?.textContent ?? '' }))()`, &dev)
	for _, l := range append(append(append(dev.Values, dev.Sets...), dev.Kinds...), dev.Models...) {
		if rawName.MatchString(l) || strings.Contains(strings.ToLower(l), "unknown") || l == "" {
			t.Errorf("devices show %q: an API name, unknown or nothing, want words", l)
		}
	}
	for _, want := range []string{"Voltage L1–L2", "PV generation, lifetime", "DC power, input A"} {
		if !strings.Contains(strings.Join(dev.Values, "|"), want) {
			t.Errorf("devices' values %q: no %q", dev.Values, want)
		}
	}
	if dev.Heater != "—" || !strings.Contains(strings.Join(dev.Sets, "|"), "AC side") {
		t.Errorf("heater's model %q (want —), sets %q (want words such as AC side)", dev.Heater, dev.Sets)
	}
	t.Logf("devices: %d values in words, e.g. %q; sets %q", len(dev.Values), dev.Values[:min(4, len(dev.Values))], dev.Sets[:min(4, len(dev.Sets))])
	both("devices", allOnline)
	b.viewport(1280, 900, false)

	// Grid operator: rcr read, all open; then K3 closed from outside: the
	// page shows it closed, 30 % asked for and in force, as the API.
	nav("operator")
	b.waitJS("the input rcr read", `document.querySelector('#input-rcr[data-status=Ok]') && document.getElementById('dimming')`, 15*time.Second)
	var open struct{ Closed, Dimming, Text string }
	js(`(() => ({ Closed: document.getElementById('input-rcr').dataset.closed, Dimming: document.getElementById('dimming').dataset.dimmed,
		Text: document.getElementById('input-rcr').innerText }))()`, &open)
	if open.Closed != "" || open.Dimming != "none" || !strings.Contains(open.Text, "All contacts open") {
		t.Errorf("input rcr before K3: closed %q, dimming %q, text %q", open.Closed, open.Dimming, open.Text)
	}
	both("operator-open", `document.querySelector('#input-rcr[data-status=Ok]')`)
	pool := modbus.NewPool(nil)
	defer pool.Close()
	if err := pool.Endpoint(modbus.EndpointConfig{Address: rcr}).Unit(1, 2*time.Second).WriteCoils(t.Context(), 0, []bool{false, false, true, false}); err != nil {
		t.Fatal(err)
	}
	k3 := `document.querySelector('#input-rcr[data-closed=K3][data-active=true] li.contact.closed[data-contact=K3]')`
	b.waitJS("K3 closed and its limit in force", k3, 20*time.Second)
	var page struct{ Now, Held, Current string }
	js(`(() => { const c = document.getElementById('input-rcr'); return { Now: c.querySelector('p.now').innerText, Held: c.querySelector('p.held').innerText,
		Current: c.querySelector('tr.current')?.dataset.contacts ?? '' } })()`, &page)
	var api struct {
		Inputs []struct {
			InputID, Status string
			Closed          []string
			Active          bool
			Action          *struct{ Value float64 }
			Window          *struct{ ScheduleID, Status string }
		}
	}
	apiGet(t, base, token, "/gateway/v1/inputs?plantId=demo", &api)
	if len(api.Inputs) != 1 || api.Inputs[0].InputID != "rcr" || strings.Join(api.Inputs[0].Closed, "+") != "K3" || !api.Inputs[0].Active ||
		api.Inputs[0].Action == nil || api.Inputs[0].Action.Value != 30 || api.Inputs[0].Window == nil {
		t.Fatalf("GET /gateway/v1/inputs after K3: %+v", api.Inputs)
	}
	if !strings.Contains(page.Now, "Contact K3 closed since") || !strings.Contains(page.Now, "asks for inverters at most 30 % of rated power") ||
		!strings.Contains(page.Held, "in force") || page.Current != "K3" {
		t.Errorf("the page on K3: %+v; the API: %+v", page, api.Inputs[0])
	}
	t.Logf("grid operator after K3: %q / %q", page.Now, page.Held)
	js(`document.querySelector('#input-rcr details.pattern').open = true`, nil)
	both("operator-k3", k3)

	// Settings: four types in words, each function named, the two
	// reactive-power configurations told apart.
	nav("settings")
	fourTypes := `document.querySelectorAll('#settings section.settings[data-type] div.config').length >= 8`
	b.waitJS("the four settings types", fourTypes, 20*time.Second)
	var set struct{ Heads, Values, Reactive []string }
	js(`(() => { const text = e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
		return { Heads: [...document.querySelectorAll('#settings h2, #settings h3')].map(text),
			Values: [...document.querySelectorAll('#settings td.words')].map(e => e.textContent),
			Reactive: [...document.querySelectorAll('#settings section[data-type=reactivePowerGridSettings] h3')].map(text) } })()`, &set)
	apiName := regexp.MustCompile(`^[A-Za-z]+(Config|Setting|Settings|DeviceDefault)$|[a-z][A-Z]`)
	for _, w := range set.Heads {
		if apiName.MatchString(w) || !strings.Contains(w, " ") && w != "Settings" {
			t.Errorf("settings heading %q: an API name, want words", w)
		}
	}
	if len(set.Heads) < 12 || len(set.Reactive) != 2 || set.Reactive[0] == set.Reactive[1] {
		t.Errorf("settings headings %q, reactive %q: want four types and two reactive functions told apart", set.Heads, set.Reactive)
	}
	for _, v := range set.Values {
		if strings.Contains(v, "(") || strings.Contains(v, "=") {
			t.Errorf("a setting's value %q: raw points or parameters, want words", v)
		}
	}
	t.Logf("settings: %q; e.g. %q", set.Heads, set.Values[:min(3, len(set.Values))])
	both("settings", fourTypes)

	// Grid control: the input's window among the schedules, its command
	// in words; the command selector as wide as its words, at both widths.
	nav("grid")
	inputRow := `[...document.querySelectorAll('#sched-body tr[data-created-by^="input:rcr/K3"]')]`
	b.waitJS("the input's window in the schedule list", inputRow+`.length > 0`, 15*time.Second)
	var cmdWords string
	js(inputRow+`[0].querySelector('td[data-label=Command]').firstChild.firstChild.textContent`, &cmdWords)
	if cmdWords != "Active power limit of the inverters" {
		t.Errorf("the input's window's command shows %q, want Active power limit of the inverters", cmdWords)
	}
	for _, w := range []struct {
		width  int64
		mobile bool
	}{{1280, false}, {390, true}} {
		b.viewport(w.width, 844, w.mobile)
		var fit struct{ Select, Text float64 }
		js(`(() => { const s = document.getElementById('gc-command'), m = document.createElement('canvas').getContext('2d'), cs = getComputedStyle(s);
			m.font = cs.font; const text = Math.max(...[...s.options].map(o => m.measureText(o.text).width));
			return { Select: s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20, Text: text } })()`, &fit)
		if fit.Select < fit.Text {
			t.Errorf("at %d px the command selector has %.0f px for words %.0f px wide: cut", w.width, fit.Select, fit.Text)
		}
	}
	both("grid", inputRow+`.length > 0`)

	// History on a phone: the plotting area 300 px or more, the legend
	// folded below it and unfolded on a tap.
	nav("history")
	chart := `document.querySelector('#history-chart canvas') && +document.getElementById('history-chart').dataset.rows > 0`
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		js(chart, &ok)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no history chart with data after 30 s")
		}
		time.Sleep(time.Second) // the demo stores a row every simulated 5 min (1 s here)
		js(`document.getElementById('history-today').click()`, nil)
	}
	both("history", chart)
	b.viewport(390, 844, true)
	b.waitJS("the chart at phone width", chart+` && document.getElementById('history-chart').uplot.width <= 390`, 10*time.Second)
	var ph struct {
		Plot   float64
		Open   bool
		Legend float64
		Rows   int
	}
	js(`(() => { const u = document.getElementById('history-chart').uplot, l = document.getElementById('history-legend');
		return { Plot: u.over.getBoundingClientRect().height, Open: l.open, Legend: l.getBoundingClientRect().height,
			Rows: l.querySelectorAll('.u-series').length } })()`, &ph)
	if ph.Plot < 300 || ph.Open || ph.Legend > 60 {
		t.Errorf("history at 390 px: plotting area %.0f px (want ≥ 300), legend open %v and %.0f px high (want folded)", ph.Plot, ph.Open, ph.Legend)
	}
	js(`document.querySelector('#history-legend > summary').click()`, nil)
	b.waitJS("the legend unfolded", `document.getElementById('history-legend').open && document.querySelector('#history-legend .u-series').getBoundingClientRect().height > 0`, 5*time.Second)
	shot("history-legend-phone")
	t.Logf("history at 390 px: plotting area %.0f px, legend of %d rows folded to %.0f px", ph.Plot, ph.Rows, ph.Legend)
	b.viewport(1280, 900, false)

	for _, v := range []struct{ view, wait string }{
		{"consumers", `document.querySelector('#consumer-body tr')`},
		{"logs", `document.querySelector('#log-table tbody tr')`},
		{"consents", `document.getElementById('consent-table') || document.querySelector('#view .card')`},
	} {
		nav(v.view)
		both(v.view, v.wait)
	}

	problems.report(t)
}
