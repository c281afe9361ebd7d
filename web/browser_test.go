package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"plantd/internal/proctest"
)

// chromium finds Debian's chromium: without it the browser test is
// skipped, except in CI (CI=true), where it fails.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not installed (apt-get install chromium); CI=true needs the browser test")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
	return ""
}

var (
	listenRE = regexp.MustCompile(`http api listening.* addr=(\S+)`)
	deviceRE = regexp.MustCompile(`(?m)^\s+(\w+)\s+\S.*?\s+(127\.0\.0\.1):(\d+) unit (\d+)$`)
)

// startPlantd runs the binary with args and waits for its API address;
// the test's cleanup stops it with SIGINT.
func startPlantd(t *testing.T, bin string, args ...string) (base string, p *proctest.Proc) {
	t.Helper()
	p = proctest.Start(t, exec.Command(bin, args...))
	t.Cleanup(func() {
		p.Signal(os.Interrupt)
		select {
		case <-p.Exited():
		case <-time.After(10 * time.Second): // killed by proctest's cleanup
		}
	})
	return "http://" + listenRE.FindStringSubmatch(p.WaitLog(listenRE, 30*time.Second))[1], p
}

func apiGet(t *testing.T, base, token, path string, out any) {
	t.Helper()
	apiDo(t, "GET", base+path, token, "", "", out)
}

// apiDo sends a request with an optional bearer token and body and decodes
// a 2xx answer into out.
func apiDo(t *testing.T, method, url, token, contentType, body string, out any) {
	t.Helper()
	status, b := apiSend(t, method, url, token, contentType, body)
	if status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, url, status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// apiSend sends a request with an optional bearer token and body and
// returns the answer's status and body, whatever the status.
func apiSend(t *testing.T, method, url, token, contentType, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// demoDeviceAddr is the host:port plantd demo printed for device id.
func demoDeviceAddr(t *testing.T, demo *proctest.Proc, id string) string {
	t.Helper()
	for _, d := range deviceRE.FindAllStringSubmatch(demo.Stdout.String(), -1) {
		if d[1] == id {
			return d[2] + ":" + d[3]
		}
	}
	t.Fatalf("demo output without the device %s: %s", id, demo.Stdout.String())
	return ""
}

// demoToken is the installer token plantd demo printed.
func demoToken(t *testing.T, demo *proctest.Proc) string {
	t.Helper()
	for _, l := range strings.Split(demo.Stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "demo token (installer role): "); ok {
			return v
		}
	}
	t.Fatalf("demo output without token: %s", demo.Stdout.String())
	return ""
}

// fmtW is the page's power format (util.js fmtW).
func fmtW(w float64) string {
	if math.Abs(w) >= 1000 {
		return toFixed2(w/1000) + " kW"
	}
	return strconv.FormatFloat(math.Round(w), 'f', 0, 64) + " W"
}

// toFixed2 is JavaScript's x.toFixed(2) (for |x| < 1e21): the n for which
// n/100 - x is closest to zero, x taken exactly as the double it is, the
// larger n on a tie. So 1.125 (a double exactly) is "1.13", where Go's
// formatting rounds half to even ("1.12"), and 1285/1000 (the double just
// below 1.285) is "1.28", where rounding x*100 in floating point gives
// 128.5 and "1.29".
func toFixed2(x float64) string {
	exact := new(big.Float).SetPrec(200).SetFloat64(math.Abs(x))
	scaled := new(big.Float).SetPrec(200).Mul(exact, big.NewFloat(100))
	n, _ := scaled.Int(nil) // the floor, x being non-negative here
	frac := new(big.Float).SetPrec(200).Sub(scaled, new(big.Float).SetPrec(200).SetInt(n))
	if frac.Cmp(big.NewFloat(0.5)) >= 0 {
		n.Add(n, big.NewInt(1))
	}
	s := fmt.Sprintf("%03d", n)
	s = s[:len(s)-2] + "." + s[len(s)-2:]
	if x < 0 && n.Sign() != 0 {
		s = "-" + s
	}
	return s
}

// TestBrowser drives Debian's chromium headless against the real plantd
// demo: sign-in, the overview's numbers against the API for the same
// instant, ten devices online with values, history charts (DST arithmetic
// included), logs as installer, a limit window created from the page and
// listed, a back-channel consent of the demo's client approved on the page;
// then a second gateway with a standard token, where logs and consents are
// refused, and whose overview shows the live balance's error once the
// demo's devices are gone. Every request the page makes must go to the
// gateway, and the console must stay free of errors (CSP violations
// included). Screenshots of each view at desktop and phone width go to
// $PLANTD_WEB_SHOTS (default a plantd-web-shots folder in the temp dir).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	base, demo := startPlantd(t, bin, "demo", "--speed", "300", "--interval", "250ms", "--start", "10:00", "--mqtt", "off",
		"--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "demo.db"))
	token := demoToken(t, demo)
	devs := deviceRE.FindAllStringSubmatch(demo.Stdout.String(), -1)
	if len(devs) != 8 {
		t.Fatalf("demo output without its eight Modbus devices: %s", demo.Stdout.String())
	}

	var evMu sync.Mutex
	var requests, problems []string
	var liveIDs []network.RequestID
	b := startBrowser(t, chrome, func(ev any) {
		evMu.Lock()
		defer evMu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *network.EventLoadingFinished:
			liveIDs = append(liveIDs, ev.RequestID)
		default:
			if p := pageProblem(ev); p != "" {
				problems = append(problems, p)
			}
		}
	})
	shot := func(name string) {
		p := filepath.Join(shots, name+".png")
		b.screenshot(p)
		t.Logf("screenshot %s", p)
	}
	both := func(name string, wait string) {
		b.viewport(1280, 900, false)
		b.waitJS(name+" at desktop width", wait, 10*time.Second)
		shot(name + "-desktop")
		b.viewport(390, 844, true)
		b.waitJS(name+" at phone width", wait, 10*time.Second)
		shot(name + "-phone")
		b.viewport(1280, 900, false)
	}
	js := func(s string, out any) {
		t.Helper()
		if err := b.eval(s, out); err != nil {
			t.Fatal(err)
		}
	}
	nav := func(view string) {
		t.Helper()
		js("location.hash = '#/"+view+"'", nil)
	}

	// Sign in.
	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	shot("signin-desktop")
	// First paint from the gateway on loopback with a cold cache (a fresh
	// profile). The target is under 1 s, reported here; the test fails
	// only on no paint or a gross regression (a loaded 2-core machine took
	// 572-2164 ms over 14 runs; the bound of 10 s is a backstop only).
	var fcp float64
	js(`performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1`, &fcp)
	t.Logf("first contentful paint after %.0f ms (target under 1000)", fcp)
	if fcp < 0 || fcp > 10000 {
		t.Errorf("first contentful paint after %.0f ms, want a paint, under 1000 on a quiet machine", fcp)
	}
	js(`document.getElementById('token').value = 'wrong'; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("refusal of a wrong token", `!document.getElementById('signin-error').hidden && document.getElementById('signin-error').textContent.includes('Not accepted')`, 10*time.Second)
	js(`document.getElementById('token').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("overview", `document.querySelector('#live-values [data-field=totalConsumption]') && document.querySelector('#today-values')`, 15*time.Second)
	var stored string
	js(`JSON.stringify(Object.keys(sessionStorage)) + localStorage.length + document.cookie`, &stored)
	if stored != `["plantd.auth"]0` {
		t.Errorf("credential storage: %s, want only sessionStorage plantd.auth", stored)
	}

	// The overview's numbers equal the API's for the same instant: the
	// page's values and their time against the live balance the API gave
	// for that time (the page's own answer, read from the browser's network
	// log, as the balance moves on with every device poll, so a second
	// request rarely sees the same instant).
	type live struct {
		Set []map[string]any `json:"set"`
	}
	var page struct {
		Time   string
		Values map[string]string
		Texts  map[string]string
	}
	js(`(() => { const r = {Time: document.getElementById('live').dataset.time, Values: {}, Texts: {}};
		for (const k of document.querySelectorAll('#live-values .kpi')) { r.Values[k.dataset.field] = k.dataset.value; r.Texts[k.dataset.field] = k.querySelector('.value').textContent; }
		return r })()`, &page)
	var api live
	evMu.Lock()
	ids := slices.Clone(liveIDs)
	evMu.Unlock()
	for _, id := range slices.Backward(ids) {
		body, err := b.responseBody(id)
		if err != nil {
			continue
		}
		var l live
		if json.Unmarshal(body, &l) == nil && len(l.Set) == 1 && l.Set[0]["time"] == page.Time {
			api = l
			break
		}
	}
	if len(api.Set) != 1 {
		t.Fatalf("no live balance answer of %s among the page's %d requests", page.Time, len(ids))
	}
	for _, f := range []string{"pvGeneration", "totalConsumption", "gridConsumption", "gridFeedIn", "batteryCharging", "batteryDischarging", "batteryStateOfCharge", "autarkyRate", "selfConsumptionRate"} {
		v, ok := api.Set[0][f].(float64)
		want := ""
		if ok {
			want = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if page.Values[f] != want {
			t.Errorf("overview %s at %s: page %q, API %q", f, page.Time, page.Values[f], want)
		}
		if ok && f != "batteryStateOfCharge" && !strings.HasSuffix(f, "Rate") && page.Texts[f] != fmtW(v) {
			t.Errorf("overview %s shows %q, want %q", f, page.Texts[f], fmtW(v))
		}
	}
	var flowW string
	js(`document.querySelector('.node.n-home').dataset.value`, &flowW)
	if flowW != page.Values["totalConsumption"] {
		t.Errorf("power flow home %q, live values %q", flowW, page.Values["totalConsumption"])
	}
	t.Logf("overview at %s equals the API's answer: %v", page.Time, page.Texts)

	both("overview", `document.querySelector('#live-values .kpi')`)
	// No tariffs: section: no "Prices and plan" card.
	b.waitJS("no prices card without tariffs", `document.getElementById('prices')?.dataset.configured === 'false' && document.getElementById('prices').hidden`, 10*time.Second)

	// Devices: all ten communicating, with values, the six SunSpec ones
	// with their models (the four consumers, the wallbox among them, have none).
	nav("devices")
	allOnline := `(() => { const arts = [...document.querySelectorAll('#devices article.device')];
		return arts.length === 10 && arts.every(a => a.dataset.comm === 'Ok' && a.querySelector('tr[data-name]')) &&
			['inv1', 'inv2', 'meter', 'bat', 'wx', 'heatmeter'].every(id => document.getElementById('dev-' + id)?.querySelector('.models')?.textContent.startsWith('1 ')) })()`
	b.waitJS("ten devices online with values", allOnline, 20*time.Second)
	var inv struct{ Product, Unit string }
	js(`(() => { const a = document.getElementById('dev-inv1'); return {Product: a.querySelector('dl').textContent, Unit: a.querySelector('tr[data-name=activePower]').dataset.unit} })()`, &inv)
	if !strings.Contains(inv.Product, "SIM-inv1") || inv.Unit != "W" {
		t.Errorf("inv1 card: %+v", inv)
	}
	both("devices", allOnline)

	// History: the day's balance as a chart with data, then the week and a
	// device set; DST days through the page's own arithmetic.
	nav("history")
	b.waitJS("history view", `document.getElementById('history-today')`, 10*time.Second)
	chartWithData := `document.querySelector('#history-chart canvas') && +document.getElementById('history-chart').dataset.rows > 0`
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		js(chartWithData+` && +document.getElementById('history-chart').dataset.rows >= 6`, &ok)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no history chart with six intervals after 30 s")
		}
		time.Sleep(time.Second) // the demo stores a 5-minute row every simulated 5 min (1 s here)
		js(`document.getElementById('history-today').click()`, nil)
	}
	both("history-day", chartWithData)
	checkChart(t, b, "Day", "W")
	js(`document.querySelector('button[data-period=Week]').click()`, nil)
	weekChart := chartWithData + ` && document.getElementById('history-chart').dataset.resolution === 'OneHour'`
	b.waitJS("week chart", weekChart, 10*time.Second)
	both("history-week", weekChart)
	js(`(() => { const s = document.getElementById('history-source'); s.value = 'device:inv2:PowerAc'; s.dispatchEvent(new Event('change')) })()`, nil)
	b.waitJS("inv2 PowerAc chart", chartWithData+` && /voltage/i.test(document.querySelector('.u-legend').textContent)`, 10*time.Second)
	var devLegend string
	js(`document.querySelector('.u-legend').textContent`, &devLegend)
	if !strings.Contains(devLegend, "Voltage L1 (V)") || rawName.MatchString(devLegend) {
		t.Errorf("inv2 PowerAc chart's legend %q: want Voltage L1 (V), no API field names", devLegend)
	}
	shot("history-device-desktop")
	var dst []float64
	js(dstCheckJS(), &dst)
	if want := []float64{1761438600000, 1761442200000, 1774746000000, 300, 288, 276, 90000, 82800}; fmt.Sprint(dst) != fmt.Sprint(want) {
		t.Errorf("DST arithmetic in the page: %v, want %v", dst, want)
	}
	// Month and Year of the demo's single day: the axis spans the whole
	// period, not years around one point.
	js(`(() => { const s = document.getElementById('history-source'); s.value = 'plant'; s.dispatchEvent(new Event('change')); document.querySelector('button[data-period=Month]').click() })()`, nil)
	for _, p := range []struct {
		period, resolution string
		minDays, maxDays   float64
	}{{"Month", "OneDay", 28, 31}, {"Year", "OneMonth", 364, 365}} {
		js(`document.querySelector('button[data-period=`+p.period+`]').click()`, nil)
		b.waitJS(p.period+" chart", chartWithData+` && document.getElementById('history-chart').dataset.resolution === '`+p.resolution+`'`, 10*time.Second)
		var days float64
		js(`(document.getElementById('history-chart').dataset.to - document.getElementById('history-chart').dataset.from) / 86400`, &days)
		if days < p.minDays-0.1 || days > p.maxDays+0.1 {
			t.Errorf("%s chart's time axis spans %.2f days, want %v to %v", p.period, days, p.minDays, p.maxDays)
		}
		checkChart(t, b, p.period, "Wh")
		checkBars(t, b, p.period)
		if p.period == "Month" {
			both("history-month", chartWithData)
		} else {
			shot("history-year-desktop")
		}
	}
	js(`document.querySelector('button[data-period=Day]').click()`, nil)

	// Logs as installer.
	nav("logs")
	b.waitJS("log entries", `document.querySelectorAll('#log-table tbody tr').length > 0`, 10*time.Second)
	both("logs", `document.querySelectorAll('#log-table tbody tr').length > 0`)
	// On a phone every entry's message is in sight: no column off-screen.
	b.viewport(390, 844, true)
	var logProblems []string
	js(`(() => { const w = document.documentElement.clientWidth, out = [];
		if (document.documentElement.scrollWidth > w) out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + w);
		for (const r of document.querySelectorAll('#log-table tbody tr')) {
			const c = r.cells[r.cells.length - 1], b = c.getBoundingClientRect();
			if (b.left < 0 || b.right > w + 0.5 || b.width < w / 2) out.push('message "' + c.textContent + '" at ' + Math.round(b.left) + '..' + Math.round(b.right) + ' of ' + w);
		}
		for (const s of document.querySelectorAll('#view .scroll')) if (s.scrollWidth > s.clientWidth) out.push('a scroll box ' + s.scrollWidth + ' wide in ' + s.clientWidth);
		return out })()`, &logProblems)
	for _, p := range logProblems {
		t.Errorf("logs at 390 px: %s", p)
	}
	b.viewport(1280, 900, false)

	// Grid control: a limit window from the page, then in the list.
	nav("grid")
	b.waitJS("grid form", `document.getElementById('gc-form')`, 20*time.Second)
	var now live
	apiGet(t, base, token, "/live/v1/plants/demo/measurements/sets/EnergyBalance", &now)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	plantNow, err := time.ParseInLocation("2006-01-02T15:04:05", now.Set[0]["time"].(string), loc)
	if err != nil {
		t.Fatal(err)
	}
	start, end := plantNow.Add(2*time.Hour).Format("2006-01-02T15:04"), plantNow.Add(26*time.Hour).Format("2006-01-02T15:04")
	js(fmt.Sprintf(`(() => { document.getElementById('gc-value').value = '40'; document.getElementById('gc-start').value = %q;
		document.getElementById('gc-end').value = %q; document.getElementById('gc-form').requestSubmit() })()`, start, end), nil)
	b.waitJS("schedule stored", `document.getElementById('gc-created') || document.querySelector('#gc-result .problem')`, 10*time.Second)
	var id, resultText string
	js(`document.getElementById('gc-created')?.dataset.schedule || ''`, &id)
	js(`document.getElementById('gc-result').textContent`, &resultText)
	if id == "" {
		t.Fatalf("creating a limit window from the page: %s", resultText)
	}
	listed := fmt.Sprintf(`document.querySelector('#sched-body tr[data-schedule=%q][data-value="40"]')`, id)
	b.waitJS("the new window in the schedule list", listed, 10*time.Second)
	var scheds struct {
		Schedules []struct {
			ScheduleID string
			Commands   []struct {
				Command, Start string
				Value          float64
			}
		}
	}
	apiGet(t, base, token, "/gridcontrol/v1/plants/demo/schedules", &scheds)
	found := false
	for _, s := range scheds.Schedules {
		if s.ScheduleID == id && s.Commands[0].Command == "opModMaxLimW" && s.Commands[0].Value == 40 {
			st, _ := time.Parse(time.RFC3339, s.Commands[0].Start)
			found = st.In(loc).Format("2006-01-02T15:04") == start
		}
	}
	if !found {
		t.Errorf("schedule %s from the page not in the API's list with value 40 from %s (plant time): %+v", id, start, scheds)
	}
	both("grid", listed)
	// Settings (their own view): headed in words, with the API's type name
	// beside; on a phone no table is wider than its card (every type
	// opened).
	nav("settings")
	b.waitJS("settings", `document.querySelectorAll('#settings section.settings div.config').length >= 8`, 20*time.Second)
	var heads struct{ Words, API []string }
	js(`(() => { const text = e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
		return { Words: [...document.querySelectorAll('#settings h2, #settings h3')].map(text),
			API: [...document.querySelectorAll('#settings code')].map(c => c.textContent) } })()`, &heads)
	apiName := regexp.MustCompile(`^[A-Za-z]+(Config|Setting|Settings|DeviceDefault)$|[a-z][A-Z]`)
	for _, w := range heads.Words {
		if apiName.MatchString(w) || !strings.Contains(w, " ") {
			t.Errorf("grid-control heading %q: an API name, want words", w)
		}
	}
	for _, want := range []string{"Active power", "Fixed active power limit", "Frequency-watt curve"} {
		if !slices.Contains(heads.Words, want) {
			t.Errorf("grid-control headings %q: no %q", heads.Words, want)
		}
	}
	if !slices.Contains(heads.API, "activePowerGridSettings") || !slices.ContainsFunc(heads.API, func(s string) bool { return strings.HasPrefix(s, "FixedActivePowerLimit") }) {
		t.Errorf("grid-control settings without the API's type names beside the words: %q", heads.API)
	}
	b.viewport(390, 844, true)
	var gridProblems []string
	js(`(() => { document.querySelectorAll('#settings details').forEach(d => d.open = true);
		const w = document.documentElement.clientWidth, out = [];
		if (document.documentElement.scrollWidth > w) out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + w);
		const tables = document.querySelectorAll('#settings table');
		if (!tables.length) out.push('no settings tables');
		for (const t of tables) {
			const b = t.getBoundingClientRect(), box = t.parentElement, cb = t.closest('.card').getBoundingClientRect();
			if (b.left < cb.left || b.right > cb.right) out.push('a table at ' + Math.round(b.left) + '..' + Math.round(b.right) + ' in its card at ' + Math.round(cb.left) + '..' + Math.round(cb.right));
			if (box.scrollWidth > box.clientWidth) out.push('a table ' + box.scrollWidth + ' wide in a box of ' + box.clientWidth);
		}
		return out })()`, &gridProblems)
	for _, p := range gridProblems {
		t.Errorf("grid control at 390 px: %s", p)
	}
	b.viewport(1280, 900, false)
	// A disconnect only the classic inverter carries: the page says the
	// window is partial and which inverter does not act.
	var disc struct {
		Schedule struct{ ScheduleID string }
	}
	apiDo(t, "POST", base+"/gridcontrol/v1/plants/demo/schedules", token, "application/json",
		fmt.Sprintf(`{"commands":[{"command":"OpModDisconnect","start":%q,"end":%q}]}`, plantNow.Add(3*time.Hour).Format(time.RFC3339), plantNow.Add(4*time.Hour).Format(time.RFC3339)), &disc)
	partialRow := fmt.Sprintf(`document.querySelector('#sched-body tr[data-schedule=%q]')?.textContent.includes('partial: governs') && document.querySelector('#sched-body tr[data-schedule=%q]').textContent.includes('inv2 (NotOfferedOnNewerPlatform)')`, disc.Schedule.ScheduleID, disc.Schedule.ScheduleID)
	nav("logs")
	nav("grid")
	b.waitJS("the partial disconnect in the schedule list", partialRow, 15*time.Second)

	// Consents: the demo's OAuth2 client asks for the owner's consent over
	// the back channel; the installer approves it on the page.
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	apiDo(t, "POST", base+"/oauth2/token", "", "application/x-www-form-urlencoded",
		"grant_type=client_credentials&client_id=demo&client_secret="+token, &tok)
	var bc struct{ State string }
	apiDo(t, "POST", base+"/oauth2/v2/bc-authorize", tok.AccessToken, "application/json", `{"loginHint":"owner@example.com"}`, &bc)
	if bc.State != "Pending" {
		t.Fatalf("back-channel consent: %q, want Pending", bc.State)
	}
	nav("consents")
	pending := `document.querySelector('#consent-table tr[data-state=Pending] button.approve')`
	b.waitJS("the pending consent", pending, 10*time.Second)
	both("consents", pending)
	js(pending+`.click()`, nil)
	b.waitJS("the consent approved", `document.querySelector('#consent-decided[data-state=Accepted]') && document.querySelector('#consent-table tr[data-state=Accepted]')`, 10*time.Second)
	apiDo(t, "GET", base+"/oauth2/v2/bc-authorize/owner@example.com", tok.AccessToken, "", "", &bc)
	if bc.State != "Accepted" {
		t.Errorf("back-channel consent after approving on the page: %q, want Accepted", bc.State)
	}
	shot("consents-approved-desktop")

	// Sign out, then in again as the demo's OAuth2 client.
	js(`document.getElementById('sign-out').click()`, nil)
	b.waitJS("signed out", `!document.getElementById('signin').hidden && !sessionStorage.getItem('plantd.auth')`, 5*time.Second)
	js(`(() => { document.querySelector('input[name=kind][value=client]').click(); document.getElementById('client-id').value = 'demo';
		document.getElementById('client-secret').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit() })()`, nil)
	b.waitJS("signed in as the OAuth2 client", `document.getElementById('signin').hidden && JSON.parse(sessionStorage.getItem('plantd.auth')).kind === 'client'`, 10*time.Second)
	nav("devices")
	b.waitJS("devices as the OAuth2 client", allOnline, 20*time.Second)

	// A second gateway on the same simulated devices, with a standard token:
	// the page signs in, shows data and is refused the logs and the
	// consents; it lists a schedule (an installer's) without a Cancel
	// button; when the demo (and its devices) stops, the overview shows
	// the live balance's error naming the devices.
	std, inst := "standard-"+token, "installer-"+token
	sum, instSum := sha256.Sum256([]byte(std)), sha256.Sum256([]byte(inst))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "plants:\n  - id: demo\n    name: plantd demo plant (standard token)\n    timezone: Europe/Berlin\ndevices:\n")
	for _, d := range devs {
		fmt.Fprintf(&cfg, "  - id: %s\n    host: %s\n    port: %s\n    unit: %s\n    pollInterval: 250ms\n", d[1], d[2], d[3], d[4])
	}
	// A fixed time-of-use table (no network): the overview's "Prices and
	// plan" card with its charts and the plan over the demo's battery.
	fmt.Fprintf(&cfg, "tariffs:\n  plant: demo\n  import: {fixed: [\"0.30\", \"00:00-06:00 0.20\", \"17:00-20:00 0.45\"]}\n  feedIn: {fixed: 0.08}\n")
	fmt.Fprintf(&cfg, "http:\n  listen: 127.0.0.1:0\ndatabase:\n  path: %s\ntokens:\n  - name: viewer\n    sha256: %s\n    role: standard\n  - name: inst\n    sha256: %s\n    role: installer\n",
		filepath.Join(dir, "std.db"), hex.EncodeToString(sum[:]), hex.EncodeToString(instSum[:]))
	cfgPath := filepath.Join(dir, "std.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	stdBase, _ := startPlantd(t, bin, "run", "-c", cfgPath)
	b.navigate(stdBase + "/#/logs")
	b.waitJS("sign-in on the second gateway", `!document.getElementById('signin').hidden`, 15*time.Second)
	js(`document.getElementById('token').value = `+strconv.Quote(std)+`; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("logs refused for the standard role", `document.getElementById('log-refused')`, 15*time.Second)
	both("logs-standard", `document.getElementById('log-refused')`)
	nav("consents")
	b.waitJS("consents refused for the standard role", `document.getElementById('consent-refused')`, 15*time.Second)
	var stdSched struct{ Schedule struct{ ScheduleID string } }
	apiDo(t, "POST", stdBase+"/gridcontrol/v1/plants/demo/schedules", inst, "application/json",
		`{"commands":[{"command":"opModMaxLimW","start":"+1h","end":"+2h","value":50}]}`, &stdSched)
	nav("grid")
	b.waitJS("the installer's schedule without a Cancel button for the standard role", fmt.Sprintf(
		`document.querySelector('#sched-body tr[data-schedule=%q]') && !document.querySelector('#sched-body button.cancel') && !document.getElementById('sched-role').hidden`,
		stdSched.Schedule.ScheduleID), 15*time.Second)
	// The plan made at the start knew no battery yet (before the first
	// polls); the next, made once it is known, has its SoC.
	proctest.WaitFor(t, "a plan with the demo battery's SoC", 30*time.Second, func() bool {
		var pl struct{ Steps []struct{ SocPct float64 } }
		apiGet(t, stdBase, std, "/gateway/v1/plan", &pl)
		return len(pl.Steps) > 0 && pl.Steps[0].SocPct > 0
	})
	nav("overview")
	b.waitJS("overview for the standard role", `document.querySelector('#live-values .kpi')`, 15*time.Second)
	checkPricesCard(t, b, stdBase, std)
	both("overview-prices", pricesCardJS)
	demo.Signal(os.Interrupt)
	select {
	case <-demo.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the demo did not stop on SIGINT")
	}
	b.waitJS("the live balance's error naming the stopped devices", `document.getElementById('live-error')?.textContent.includes('bat: ')`, 15*time.Second)
	var errText, batFlow string
	js(`document.getElementById('live-error').innerText`, &errText)
	js(`document.querySelector('.node.n-bat').innerText`, &batFlow)
	t.Logf("overview with the devices gone: %q; battery in the flow: %q", errText, batFlow)
	if !strings.Contains(batFlow, "–") || !strings.Contains(batFlow, "no value") {
		t.Errorf("the flow's battery without values shows %q, want – and no value", batFlow)
	}
	both("overview-error", `document.getElementById('live-error')`)

	evMu.Lock()
	defer evMu.Unlock()
	for _, u := range requests {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, stdBase+"/") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			t.Errorf("the page asked %s, not the gateway", u)
		}
	}
	t.Logf("%d requests, all to the gateways", len(requests))
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}

// dstCheckJS runs util.js and history.js of the page on the Berlin DST
// days of 2025/2026: the repeated 02:30 of 26 Oct 2025 resolves first to
// 00:30 UTC, after that to 01:30 UTC; 03:00 on 29 Mar 2026 is 01:00 UTC;
// a fully measured 25-, 24- and 23-hour day (interval-end labels as the API
// writes them) gives 300, 288 and 276 strictly increasing 5-minute steps;
// the day chart's axis spans 25 h on 26 Oct 2025 and 23 h on 29 Mar 2026.
func dstCheckJS() string {
	return `(async () => {
	const base = document.querySelector('script[type=module]').src.replace(/js\/app\.js$/, 'js/');
	const u = await import(base + 'util.js'), hi = await import(base + 'history.js');
	const tz = 'Europe/Berlin';
	const first = u.localToMs('2025-10-26T02:30:00', tz);
	const labels = (fromUtc, toUtc) => {
		const rows = [];
		for (let t = Date.parse(fromUtc) + 300e3; t <= Date.parse(toUtc); t += 300e3) {
			const w = u.wall(t, tz), p = n => String(n).padStart(2, '0');
			rows.push({ time: w.y + '-' + p(w.m) + '-' + p(w.d) + 'T' + p(w.H) + ':' + p(w.M) + ':' + p(w.S), pvGeneration: 1 });
		}
		return rows;
	};
	const steps = rows => { const xs = hi.toData(rows, tz).data[0]; return xs.every((x, i) => i === 0 || x - xs[i - 1] === 300) ? xs.length : -1; };
	return [first, u.localToMs('2025-10-26T02:30:00', tz, first), u.localToMs('2026-03-29T03:00:00', tz),
		steps(labels('2025-10-25T22:00:00Z', '2025-10-26T23:00:00Z')),
		steps(labels('2025-06-20T22:00:00Z', '2025-06-21T22:00:00Z')), steps(labels('2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z')),
		...['2025-10-26', '2026-03-29'].map(d => { const [a, b] = hi.span('Day', d, tz); return b - a; })];
})()`
}

// scrollsSideways says what scrolls sideways in the page at its viewport's
// width: the page itself, or a scroll box of the view (none on a phone).
func scrollsSideways(t *testing.T, b *browser) []string {
	t.Helper()
	var out []string
	if err := b.eval(`(() => { const w = document.documentElement.clientWidth, out = [];
		if (document.documentElement.scrollWidth > w) out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + w);
		for (const s of document.querySelectorAll('#view .scroll')) if (s.scrollWidth > s.clientWidth) out.push('a scroll box ' + s.scrollWidth + ' wide in ' + s.clientWidth);
		return out })()`, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// consoleProblems collects the page's problems (pageProblem) from the
// browser's event goroutine, for the test to report at its end.
type consoleProblems struct {
	mu   sync.Mutex
	list []string
}

func (c *consoleProblems) add(ev any) {
	if p := pageProblem(ev); p != "" {
		c.mu.Lock()
		c.list = append(c.list, p)
		c.mu.Unlock()
	}
}

// report fails the test for each problem collected.
func (c *consoleProblems) report(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.list {
		t.Errorf("browser console: %s", p)
	}
}

// pageProblem is what a browser event says went wrong in the page: a
// console error or an uncaught exception; "" for any other event. A
// 401/403/404 the page asked for and handles is logged by the browser as a
// failed resource load and does not count.
func pageProblem(ev any) string {
	switch ev := ev.(type) {
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError && !strings.Contains(ev.Entry.Text, "status of 40") {
			return ev.Entry.Text + " " + ev.Entry.URL
		}
	case *runtime.EventExceptionThrown:
		return (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error()
	}
	return ""
}

// browser is one tab of a headless Chromium that chromedp drives over
// --remote-debugging-pipe.
type browser struct {
	t     *testing.T
	ctx   context.Context // of the tab
	width int64           // of the viewport
}

// callTimeout bounds each command sent to the browser.
const callTimeout = 30 * time.Second

// startBrowser starts chromium with a fresh profile and opens one page;
// every event of that page goes to onEvent, in the order they arrive and
// before a command that follows them returns (onEvent must return fast).
func startBrowser(t *testing.T, path string, onEvent func(ev any)) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc) // after the tab's cleanup: waits for chromium to exit
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first use of ctx starts the browser, so it has no timeout.
	if err := chromedp.Listen(ctx, onEvent); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx}
}

// do runs actions in the tab, each call limited to callTimeout.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// navigate loads url in the tab and waits for its load event.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
}

// eval runs JavaScript in the page (awaiting a promise) and decodes its
// value, if it has one, into out.
func (b *browser) eval(js string, out any) error {
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil || out == nil || len(raw) == 0 {
		return err
	}
	return json.Unmarshal(raw, out)
}

// waitJS polls a JavaScript condition until it is true or the deadline.
func (b *browser) waitJS(what, js string, d time.Duration) {
	b.t.Helper()
	proctest.WaitValue(b.t, what+" (last: the evaluation's error)", d, func() (error, bool) {
		var ok bool
		err := b.eval("!!("+js+")", &ok)
		return err, err == nil && ok
	})
}

// responseBody is the body of a response the page received.
func (b *browser) responseBody(id network.RequestID) ([]byte, error) {
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
	return res.Body, err
}

// viewport sets the page's size: a desktop or a phone.
func (b *browser) viewport(width, height int64, mobile bool) {
	b.t.Helper()
	b.width = width
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	b.do(chromedp.EmulateViewport(width, height, opts...))
}

// screenshot writes the whole page, as wide as the viewport, as a PNG.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, err
		}
		shot, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			CaptureBeyondViewport: new(true),
			Clip: &page.Viewport{Width: min(m.CSSContentSize.Width, float64(b.width)),
				Height: min(m.CSSContentSize.Height, 6000), Scale: 1},
		})
		return shot.Data, err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// rawName is an API field name in a label: camelCase or a unit in brackets.
var rawName = regexp.MustCompile(`\b[a-z]+[A-Z]\w*|\[`)

// checkChart checks the history chart of the plant's balance for a
// period: legend and totals in words with units (the energies in unit),
// no API field name, and the % axis within 0..100.
func checkChart(t *testing.T, b *browser, period, unit string) {
	t.Helper()
	var c struct {
		Legend, Totals []string
		Pct            []float64
	}
	if err := b.eval(`(() => { const el = document.getElementById('history-chart'), u = el.uplot;
		return { Legend: [...el.querySelectorAll('.u-legend .u-series .u-label')].map(e => e.textContent),
			Totals: [...document.querySelectorAll('#history-total th')].map(e => e.textContent),
			Pct: u && u.scales['%'] ? [u.scales['%'].min, u.scales['%'].max] : [] } })()`, &c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PV generation (" + unit + ")", "Grid feed-in (" + unit + ")", "Battery state of charge (%)", "Autarky (%)"} {
		if !slices.Contains(c.Legend, want) {
			t.Errorf("%s chart's legend %q: no %q", period, c.Legend, want)
		}
	}
	if !slices.Contains(c.Totals, "PV generation") {
		t.Errorf("%s totals %q: no PV generation", period, c.Totals)
	}
	for _, l := range append(c.Legend, c.Totals...) {
		if rawName.MatchString(l) {
			t.Errorf("%s chart shows %q: an API field name", period, l)
		}
	}
	if len(c.Pct) != 2 || c.Pct[0] < 0 || c.Pct[1] > 100 {
		t.Errorf("%s chart's %% axis spans %v, want within 0..100", period, c.Pct)
	}
}

// checkBars checks, in the chart's canvas, that the energies of a Month or
// Year chart are drawn as bars: halfway between zero and each shown
// energy's value (where a line or point draws nothing of that day), the
// day's or month's slot has pixels of that series' colour.
func checkBars(t *testing.T, b *browser, period string) {
	t.Helper()
	var res []struct {
		Label  string
		Height float64
		Pixels int
	}
	if err := b.eval(`(() => { const u = document.getElementById('history-chart').uplot, out = [];
		if (!u) return out;
		const ctx = u.ctx, half = `+map[string]string{"Month": "43200", "Year": "15 * 86400"}[period]+`;
		u.series.forEach((s, i) => {
			if (i === 0 || !s.show || s.scale !== 'Wh') return;
			const j = u.data[i].findIndex(v => v !== null && v !== undefined);
			if (j < 0) return;
			const x = u.data[0][j], v = u.data[i][j];
			const y0 = u.valToPos(0, 'Wh', true), y1 = u.valToPos(v, 'Wh', true), y = Math.round((y0 + y1) / 2);
			const a = Math.floor(u.valToPos(x - half, 'x', true)), z = Math.ceil(u.valToPos(x + half, 'x', true));
			const px = ctx.getImageData(a, y, z - a, 1).data, c = typeof s.stroke === 'function' ? s.stroke(u, i) : s.stroke;
			const [r, g, bl] = [1, 3, 5].map(k => parseInt(c.slice(k, k + 2), 16));
			let n = 0;
			for (let k = 0; k < px.length; k += 4) if (px[k + 3] > 100 && Math.abs(px[k] - r) < 12 && Math.abs(px[k + 1] - g) < 12 && Math.abs(px[k + 2] - bl) < 12) n++;
			out.push({ Label: s.label, Height: Math.abs(y0 - y1), Pixels: n });
		});
		return out })()`, &res); err != nil {
		t.Fatal(err)
	}
	tall := 0
	for _, r := range res {
		if r.Height < 12 {
			continue
		}
		tall++
		if r.Pixels == 0 {
			t.Errorf("%s chart: %s (%.0f px high) is no bar: none of its colour halfway up", period, r.Label, r.Height)
		}
	}
	if tall < 2 {
		t.Errorf("%s chart: %d energies tall enough to check for bars (%+v), want 2 or more", period, tall, res)
	}
}

// browserSetup is what every browser test needs: Chromium, the folder
// for screenshots ($PLANTD_WEB_SHOTS, default a plantd-web-shots folder in
// the temp dir), a temp dir and the plantd binary (built once for the
// package's tests, see plantdBinary).
func browserSetup(t *testing.T) (chrome, shots, dir, bin string) {
	t.Helper()
	chrome = chromium(t)
	shots = os.Getenv("PLANTD_WEB_SHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "plantd-web-shots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return chrome, shots, t.TempDir(), plantdBinary(t)
}

// The plantd binary the browser tests run, built by the first of them to
// ask for it into binDir, which TestMain removes.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func plantdBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "plantd-web-bin"); binErr == nil {
			binErr = proctest.Build(filepath.Join(binDir, "plantd"), "../cmd/plantd")
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "plantd")
}

// TestMain runs the four browser tests at once (each mostly waits on its
// demo's clock and its browser, not on the CPU; go test's default would
// run two at a time on a 2-core machine) and removes the plantd binary
// they built.
func TestMain(m *testing.M) {
	code := proctest.RunParallel(m, 4)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// pricesCardJS is true once the overview's "Prices and plan" card shows
// the price chart and the plan (its battery action and saving, or why
// control is surplus-only).
const pricesCardJS = `(() => { const c = document.getElementById('prices');
	return c && !c.hidden && +c.dataset.slots > 0 && c.querySelector('#prices-chart canvas') && c.querySelector('#plan-chart canvas') &&
		!!(c.querySelector('#plan-values [data-field=battery]') || c.querySelector('#plan-fallback')) })()`

// checkPricesCard waits for the card and holds it against the API: one
// price point per slot edge for each of import and feed-in, the prices
// of the time-of-use table, and the plan's action and saving as the API
// gives them.
func checkPricesCard(t *testing.T, b *browser, base, token string) {
	t.Helper()
	b.waitJS("the Prices and plan card with its charts", pricesCardJS, 30*time.Second)
	var tariffs struct {
		Configured bool
		Slots      []struct{ ImportEurPerKWh, FeedInEurPerKWh float64 }
	}
	apiGet(t, base, token, "/gateway/v1/tariffs", &tariffs)
	var card struct {
		Slots           int
		Import, FeedIn  []float64
		SoC             []float64
		Battery, Saving string
		Fallback        string
	}
	if err := b.eval(`(() => { const c = document.getElementById('prices'), u = document.getElementById('prices-chart').uplot;
		return {Slots: +c.dataset.slots, Import: [...new Set(u.data[1].filter(v => v !== null))], FeedIn: [...new Set(u.data[2].filter(v => v !== null))],
			SoC: document.getElementById('plan-chart').uplot.data[4].filter(v => v !== null),
			Battery: c.querySelector('#plan-values [data-field=battery] .value')?.textContent ?? '',
			Saving: c.querySelector('#plan-values [data-field=savingEur]')?.dataset.value ?? '',
			Fallback: c.querySelector('#plan-fallback')?.textContent ?? ''} })()`, &card); err != nil {
		t.Fatal(err)
	}
	t.Logf("prices card: %d slots, import %v, feed-in %v, battery %q, saving %q, fallback %q, planned SoC %d values", card.Slots, card.Import, card.FeedIn, card.Battery, card.Saving, card.Fallback, len(card.SoC))
	// The API's answer is a moment later: a slot may have ended between.
	if !tariffs.Configured || card.Slots < 24 || card.Slots-len(tariffs.Slots) > 1 || card.Slots < len(tariffs.Slots) {
		t.Errorf("the card has %d price slots, the API %d (configured %v); want the same, 24 h and more", card.Slots, len(tariffs.Slots), tariffs.Configured)
	}
	want := map[float64]bool{}
	for _, s := range tariffs.Slots {
		want[s.ImportEurPerKWh] = true
	}
	for _, v := range card.Import {
		if !want[v] {
			t.Errorf("the chart's import price %v is none of the API's slots", v)
		}
	}
	if len(card.Import) == 0 || len(card.FeedIn) != 1 || card.FeedIn[0] != 0.08 {
		t.Errorf("the chart's prices: import %v, feed-in %v; want the table's, feed-in 0.08 only", card.Import, card.FeedIn)
	}
	var plan struct {
		Configured bool
		Fallback   string
		SavingEur  *float64
		Steps      []struct{ Battery string }
	}
	apiGet(t, base, token, "/gateway/v1/plan", &plan)
	switch {
	case card.Fallback != "":
		if !strings.HasPrefix(card.Fallback, "surplus-only: ") {
			t.Errorf("the card's fallback %q, want surplus-only: <why>", card.Fallback)
		}
	case len(plan.Steps) == 0 || plan.SavingEur == nil:
		t.Errorf("the card shows a plan (%q), the API none: %+v", card.Battery, plan)
	case card.Battery == "" || card.Saving == "":
		t.Errorf("the card's plan without an action or saving: %+v", card)
	case len(card.SoC) != len(plan.Steps) || slices.Max(card.SoC) <= 0:
		t.Errorf("the plan chart's SoC %v for the API's %d steps; want one a step, the battery's", card.SoC, len(plan.Steps))
	}
	if rawName.MatchString(card.Battery) {
		t.Errorf("the card's battery action %q is the API's name, not words", card.Battery)
	}
}
