package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/modbus"
)

// gridSchedule is the part of GET .../schedules[?include=finished] the
// grid view's test compares with the page.
type gridSchedule struct {
	ScheduleID, CreatedBy string
	Commands              []struct {
		Command, Status, Repeat string
		AppliedAt               *string
		Cancelled               bool
		Next                    []struct{ Start, End string }
		Writes                  []auditWrite
		Finished                []struct {
			Start, Status string
			Writes        []auditWrite
		}
	}
}

// auditWrite is a write of a window's audit (include=finished).
type auditWrite struct {
	DeviceID string
	Points   []struct {
		Point    string
		Value    float64
		ReadBack *float64
	}
}

// auditRows are the rows the page's audit table should have for writes,
// each as auditRowsJS reads them: device, point, value and read-back as
// data, then the value and read-back as shown.
func auditRows(writes []auditWrite) []string {
	var out []string
	for _, w := range writes {
		for _, p := range w.Points {
			v, rb, rbData := strconv.FormatFloat(p.Value, 'f', -1, 64), "–", ""
			if p.ReadBack != nil {
				rb = strconv.FormatFloat(*p.ReadBack, 'f', -1, 64)
				rbData = rb
			}
			out = append(out, strings.Join([]string{w.DeviceID, p.Point, v, rbData, v, rb}, " "))
		}
	}
	return out
}

// auditRowsJS reads the rows of the audit tables under a selector.
func auditRowsJS(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].map(r =>
		[r.dataset.device, r.dataset.point, r.dataset.value, r.dataset.readback, r.cells[3].textContent, r.cells[4].textContent].join(' '))`,
		sel+" table.audit tr[data-device]")
}

func gridSchedules(t *testing.T, base, token, query string) map[string]gridSchedule {
	t.Helper()
	var list struct{ Schedules []gridSchedule }
	apiGet(t, base, token, "/gridcontrol/v1/plants/demo/schedules"+query, &list)
	out := map[string]gridSchedule{}
	for _, s := range list.Schedules {
		out[s.ScheduleID] = s
	}
	return out
}

// eventually polls cond (an API answer) until it holds or d passed.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	proctest.WaitFor(t, what, d, cond)
}

// TestBrowserGridSchedules drives chromium against the real plantd demo's
// grid view (installer): a recurring window created through the API is
// listed with its rule in words and the same next three occurrences as
// the API; once applied it is cancelled with the page's button (two
// clicks), leaves the list of open windows, and with "also show finished"
// shows as cancelled with its writes, point by point as the API's audit
// has them; a window cancelled before its start leaves the open windows
// too; a recurring window's ended windows show with their writes. Then the
// demo's ripple-control receiver is switched to K3 over
// Modbus from outside: its window is listed as the grid operator's input
// rcr, contact K3, and the installer's Cancel shows the API's 403 problem
// (title and detail) while the window stays active. The words for
// creators, rules and durations (labels.js) are checked in the page on a
// table of cases.
func TestBrowserGridSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	base, demo := startPlantd(t, bin, "demo", "--speed", "60", "--interval", "250ms", "--start", "11:00", "--mqtt", "off",
		"--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "demo.db"))
	token, rcr := demoToken(t, demo), demoDeviceAddr(t, demo, "rcr")

	// The 403 the page is answered for the grid operator's schedule is a
	// failed load it handles: not a problem (pageProblem).
	var problems consoleProblems
	b := startBrowser(t, chrome, problems.add)
	js := func(s string, out any) {
		t.Helper()
		if err := b.eval(s, out); err != nil {
			t.Fatal(err)
		}
	}
	shot := func(name string, width, height int64, mobile bool) {
		b.viewport(width, height, mobile)
		p := filepath.Join(shots, name+".png")
		b.screenshot(p)
		t.Logf("screenshot %s", p)
		b.viewport(1280, 900, false)
	}
	// reload renders the grid view again (its list is read every 10 s).
	reload := func() { js(`location.hash = '#/logs'`, nil); js(`location.hash = '#/grid'`, nil) }

	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	js(`document.getElementById('token').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("overview", `document.querySelector('#live-values .kpi')`, 15*time.Second)

	// The words of labels.js for creators and rules, in the page itself.
	words := []struct{ fn, in, want string }{
		{"originLabel", "input:rcr/K3 (gridoperator)", "grid operator's input rcr, contact K3"},
		{"originLabel", "input:rcr/K1+K4 (gridoperator)", "grid operator's input rcr, contacts K1 + K4"},
		{"originLabel", "input:rcr/failsafe (gridoperator)", "grid operator's input rcr: failsafe (input device lost)"},
		{"originLabel", "mqtt:gw-1 (installer)", "cloud over MQTT (gateway gw-1, installer)"},
		{"originLabel", "dso (gridoperator)", "dso (grid operator)"},
		{"originLabel", "old-token", "old-token"},
		{"repeatLabel", "CRON_TZ=Europe/Berlin 0 11 * * *", "every day at 11:00 (Europe/Berlin)"},
		{"repeatLabel", "30 6 * * 1-5", "every Mon–Fri at 06:30 (UTC)"},
		{"repeatLabel", "0 22 * * SAT,sun", "every Sat, Sun at 22:00 (UTC)"},
		{"repeatLabel", "0 3 1 * *", "on day 1 of every month at 03:00 (UTC)"},
		{"repeatLabel", "*/15 * * * *", "every 15 minutes"},
		{"repeatLabel", "5 * * * *", "every hour at minute 5"},
		{"repeatLabel", "0 0 1 1 *", "cron “0 0 1 1 *”"},
		{"durationLabel", "4h", "4 h"},
		{"durationLabel", "1h30m0s", "1 h 30 min"},
	}
	for _, w := range words {
		var got string
		js(fmt.Sprintf(`(async () => (await import(document.querySelector('script[type=module]').src.replace(/app\.js$/, 'labels.js'))).%s(%q))()`, w.fn, w.in), &got)
		if got != w.want {
			t.Errorf("%s(%q) = %q, want %q", w.fn, w.in, got, w.want)
		}
	}

	// A daily window that began 10 simulated minutes ago: open now.
	var live struct{ Set []map[string]any }
	apiGet(t, base, token, "/live/v1/plants/demo/measurements/sets/EnergyBalance", &live)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.ParseInLocation("2006-01-02T15:04:05", live.Set[0]["time"].(string), loc)
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-10 * time.Minute).Truncate(time.Minute)
	spec := fmt.Sprintf("CRON_TZ=Europe/Berlin %d %d * * *", at.Minute(), at.Hour())
	var created struct{ Schedule gridSchedule }
	apiDo(t, "POST", base+"/gridcontrol/v1/plants/demo/schedules", token, "application/json",
		fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","repeat":%q,"duration":"4h","value":60}]}`, spec), &created)
	id := created.Schedule.ScheduleID
	if id == "" || len(created.Schedule.Commands[0].Next) != 3 {
		t.Fatalf("recurring schedule: %+v, want an id and three next windows", created.Schedule)
	}

	js(`location.hash = '#/grid'`, nil)
	row := fmt.Sprintf(`#sched-body tr[data-schedule=%q]`, id)
	b.waitJS("the recurring window with three next windows", `document.querySelectorAll('`+row+` ul.next li').length === 3`, 15*time.Second)
	var rec struct {
		Rule, Origin, Status string
		Next                 []string
		Cancel               bool
	}
	js(`(() => { const r = document.querySelector('`+row+`');
		return { Rule: r.querySelector('.repeat > span').textContent, Origin: r.querySelector('td.origin .by').textContent,
			Status: r.querySelector('.badge').textContent, Next: [...r.querySelectorAll('ul.next li')].map(li => li.dataset.start),
			Cancel: !!r.querySelector('button.cancel') } })()`, &rec)
	wantRule := fmt.Sprintf("repeats every day at %02d:%02d (Europe/Berlin), 4 h each", at.Hour(), at.Minute())
	if rec.Rule != wantRule || rec.Origin != "demo (installer)" || !rec.Cancel {
		t.Errorf("recurring row: rule %q, origin %q, cancel button %v; want %q, \"demo (installer)\", a button", rec.Rule, rec.Origin, rec.Cancel, wantRule)
	}
	for i, n := range created.Schedule.Commands[0].Next {
		if i >= len(rec.Next) || rec.Next[i] != n.Start {
			t.Errorf("next windows on the page %q, the API's %+v", rec.Next, created.Schedule.Commands[0].Next)
			break
		}
	}
	var nextText string
	js(`document.querySelector('`+row+` ul.next li').textContent`, &nextText)
	next0 := at.AddDate(0, 0, 1)
	if want := next0.Format("2006-01-02 15:04:05") + " – " + next0.Add(4*time.Hour).Format("15:04:05"); nextText != want {
		t.Errorf("first next window shown as %q, want %q (plant time)", nextText, want)
	}
	shot("grid-recurring-desktop", 1280, 900, false)
	shot("grid-recurring-phone", 390, 844, true)

	// Applied (written to the inverters), then cancelled on the page.
	eventually(t, 30*time.Second, "the recurring window applied", func() bool {
		c := gridSchedules(t, base, token, "")[id].Commands
		return len(c) == 1 && c[0].AppliedAt != nil
	})
	btn := fmt.Sprintf(`document.querySelector('button.cancel[data-schedule=%q]')`, id)
	js(btn+`.click()`, nil)
	b.waitJS("the Confirm step", fmt.Sprintf(`document.querySelector('button.cancel.confirm[data-schedule=%q]')?.textContent === 'Confirm cancel'`, id), 5*time.Second)
	if s := gridSchedules(t, base, token, "")[id]; s.Commands[0].Cancelled {
		t.Fatal("cancelled on the first click, before the confirmation")
	}
	js(btn+`.click()`, nil)
	b.waitJS("the cancellation confirmed", fmt.Sprintf(`document.querySelector('#sched-cancelled[data-schedule=%q]')`, id), 10*time.Second)
	b.waitJS("the cancelled window gone from the open windows", `!document.querySelector('`+row+`')`, 10*time.Second)
	if c := gridSchedules(t, base, token, "")[id].Commands[0]; !c.Cancelled || c.Status != "done" || len(c.Next) != 0 {
		t.Errorf("after Cancel on the page the API lists %+v, want cancelled, done, no next windows", c)
	}

	// Its audit with "also show finished": cancelled, the writes as the API's.
	js(`document.getElementById('sched-all').click()`, nil)
	b.waitJS("the cancelled window with its writes", `document.querySelector('`+row+`[data-cancelled=true]') && document.querySelector(`+
		strconv.Quote(fmt.Sprintf(`#sched-body tr.audit[data-schedule=%q] table.audit tr[data-device]`, id))+`)`, 15*time.Second)
	var pageAudit struct {
		Badge string
		Rows  []string
	}
	js(`(() => ({ Badge: document.querySelector('`+row+` .badge').textContent,
		Rows: `+auditRowsJS(fmt.Sprintf(`#sched-body tr.audit[data-schedule=%q]`, id))+` }))()`, &pageAudit)
	apiRows := auditRows(gridSchedules(t, base, token, "?include=finished")[id].Commands[0].Writes)
	var ruleAfter string
	js(`document.querySelector('`+row+` .repeat > span').textContent`, &ruleAfter)
	if !strings.HasSuffix(ruleAfter, "no further windows (cancelled)") {
		t.Errorf("the cancelled recurring window's rule %q, want it to say no further windows", ruleAfter)
	}
	if pageAudit.Badge != "cancelled" || len(apiRows) == 0 || strings.Join(pageAudit.Rows, "\n") != strings.Join(apiRows, "\n") {
		t.Errorf("audit of the cancelled window: badge %q, page rows\n%s\nAPI rows\n%s", pageAudit.Badge, strings.Join(pageAudit.Rows, "\n"), strings.Join(apiRows, "\n"))
	}
	devs := map[string]bool{}
	for _, r := range pageAudit.Rows {
		devs[strings.Fields(r)[0]] = true
	}
	if !devs["inv1"] || !devs["inv2"] {
		t.Errorf("audit rows %q: want writes to inv1 and inv2", pageAudit.Rows)
	}
	t.Logf("cancelled window's audit on the page: %d points: %q", len(pageAudit.Rows), pageAudit.Rows)
	shot("grid-audit-desktop", 1280, 900, false)
	b.viewport(390, 844, true)
	for _, p := range scrollsSideways(t, b) {
		t.Errorf("grid view with the audit at 390 px: %s", p)
	}
	shot("grid-audit-phone", 390, 844, true)

	// A window that has not begun, cancelled on the page: it never
	// starts; the API lists it cancelled (its end moved to its start, its
	// status pending until then), the page as cancelled among the
	// finished, not among the open windows.
	var pending struct{ Schedule gridSchedule }
	apiDo(t, "POST", base+"/gridcontrol/v1/plants/demo/schedules", token, "application/json",
		`{"commands":[{"command":"opModMaxLimW","start":"+2h","end":"+3h","value":70}]}`, &pending)
	pid := pending.Schedule.ScheduleID
	reload()
	pBtn := fmt.Sprintf(`document.querySelector('#sched-body tr[data-schedule=%q][data-status=pending] button.cancel')`, pid)
	b.waitJS("the pending window with its Cancel button", pBtn, 15*time.Second)
	js(pBtn+`.click()`, nil)
	b.waitJS("the Confirm step", fmt.Sprintf(`document.querySelector('button.cancel.confirm[data-schedule=%q]')`, pid), 5*time.Second)
	js(fmt.Sprintf(`document.querySelector('button.cancel.confirm[data-schedule=%q]').click()`, pid), nil)
	b.waitJS("the pending window cancelled", fmt.Sprintf(`document.querySelector('#sched-cancelled[data-schedule=%q]') && !document.querySelector('#sched-body tr[data-schedule=%q]')`, pid, pid), 10*time.Second)
	if c := gridSchedules(t, base, token, "")[pid].Commands[0]; !c.Cancelled {
		t.Errorf("the pending window after Cancel on the page: %+v, want cancelled", c)
	} else {
		t.Logf("a window cancelled before its start: the API lists status %q, cancelled", c.Status)
	}
	js(`document.getElementById('sched-all').click()`, nil)
	b.waitJS("the pending window among the finished as cancelled", fmt.Sprintf(`document.querySelector('#sched-body tr[data-schedule=%q][data-cancelled=true] .badge')?.textContent === 'cancelled' && !document.querySelector('#sched-body tr[data-schedule=%q] button.cancel')`, pid, pid), 10*time.Second)

	// A recurring window that ends by itself (5 of every 10 simulated
	// minutes): with "also show finished" its ended windows, each with
	// its status and its writes as the API's finished list has them.
	var every struct{ Schedule gridSchedule }
	apiDo(t, "POST", base+"/gridcontrol/v1/plants/demo/schedules", token, "application/json",
		`{"commands":[{"command":"opModMaxLimW","repeat":"*/10 * * * *","duration":"5m","value":50}]}`, &every)
	rid := every.Schedule.ScheduleID
	var ended struct {
		Start, Status string
		Writes        []auditWrite
	}
	eventually(t, 60*time.Second, "an ended window of the 10-minute schedule with writes", func() bool {
		for _, f := range gridSchedules(t, base, token, "?include=finished")[rid].Commands[0].Finished {
			if len(f.Writes) > 0 {
				ended.Start, ended.Status, ended.Writes = f.Start, f.Status, f.Writes
				return true
			}
		}
		return false
	})
	reload()
	b.waitJS("the 10-minute schedule listed", fmt.Sprintf(`document.querySelector('#sched-body tr[data-schedule=%q]')`, rid), 15*time.Second)
	js(`document.getElementById('sched-all').click()`, nil)
	endedSel := fmt.Sprintf(`#sched-body tr.audit[data-schedule=%q] .audit-window.finished[data-start=%q]`, rid, ended.Start)
	b.waitJS("the ended window's audit", `document.querySelector('`+endedSel+` table.audit tr[data-device]')`, 15*time.Second)
	var endedPage struct {
		Badge string
		Rows  []string
	}
	js(`(() => ({ Badge: document.querySelector('`+endedSel+` .badge').dataset.status, Rows: `+auditRowsJS(endedSel)+` }))()`, &endedPage)
	if want := auditRows(ended.Writes); endedPage.Badge != ended.Status || strings.Join(endedPage.Rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("ended window %s: page %s with\n%s\nAPI %s with\n%s", ended.Start, endedPage.Badge, strings.Join(endedPage.Rows, "\n"), ended.Status, strings.Join(want, "\n"))
	}
	t.Logf("ended window %s of the 10-minute schedule on the page: %s, %d points", ended.Start, endedPage.Badge, len(endedPage.Rows))
	shot("grid-ended-desktop", 1280, 900, false)

	// The grid operator's input: K3 closed on the I/O module from outside.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	if err := pool.Endpoint(modbus.EndpointConfig{Address: rcr}).Unit(1, 2*time.Second).WriteCoils(t.Context(), 0, []bool{false, false, true, false}); err != nil {
		t.Fatal(err)
	}
	var inputID string
	eventually(t, 15*time.Second, "a window of input:rcr/K3", func() bool {
		for sid, s := range gridSchedules(t, base, token, "") {
			if strings.HasPrefix(s.CreatedBy, "input:rcr/K3") && s.Commands[0].Status == "active" {
				inputID = sid
			}
		}
		return inputID != ""
	})
	reload()
	inRow := fmt.Sprintf(`#sched-body tr[data-schedule=%q]`, inputID)
	b.waitJS("the input's window", `document.querySelector('`+inRow+` button.cancel')`, 15*time.Second)
	var origin string
	js(`document.querySelector('`+inRow+` td.origin .by').textContent`, &origin)
	if origin != "grid operator's input rcr, contact K3" {
		t.Errorf("the input's window sent by %q, want the grid operator's input rcr, contact K3", origin)
	}
	inBtn := fmt.Sprintf(`document.querySelector('button.cancel[data-schedule=%q]')`, inputID)
	js(inBtn+`.click()`, nil)
	b.waitJS("the Confirm step", fmt.Sprintf(`document.querySelector('button.cancel.confirm[data-schedule=%q]')`, inputID), 5*time.Second)
	js(inBtn+`.click()`, nil)
	b.waitJS("the refusal", fmt.Sprintf(`document.querySelector('#cancel-problem[data-schedule=%q]')`, inputID), 10*time.Second)
	var refusal struct{ Status, Text string }
	js(`(() => { const p = document.getElementById('cancel-problem'); return { Status: p.dataset.status, Text: p.textContent } })()`, &refusal)
	// The API's own answer to the same request.
	status, body := apiSend(t, "DELETE", base+"/gridcontrol/v1/plants/demo/schedules/"+inputID, token, "", "")
	var pb struct{ Title, Detail string }
	if err := json.Unmarshal(body, &pb); err != nil || status != http.StatusForbidden || pb.Title == "" || pb.Detail == "" {
		t.Fatalf("DELETE of the input's schedule as installer: %d %s, want 403 problem-JSON", status, body)
	}
	if refusal.Status != "403" || !strings.Contains(refusal.Text, pb.Title) || !strings.Contains(refusal.Text, pb.Detail) {
		t.Errorf("refusal on the page %+v, want 403 with the API's %q and %q", refusal, pb.Title, pb.Detail)
	}
	t.Logf("refusal on the page: %s", refusal.Text)
	if s := gridSchedules(t, base, token, "")[inputID]; s.Commands[0].Status != "active" || s.Commands[0].Cancelled {
		t.Errorf("the input's window after the refused cancel: %+v, want active", s.Commands[0])
	}
	b.waitJS("the input's window still listed", `document.querySelector('`+inRow+`[data-status=active]')`, 10*time.Second)
	shot("grid-refused-desktop", 1280, 900, false)

	problems.report(t)
}
