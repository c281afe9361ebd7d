package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/mqtt/mqtttest"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// TestGridControlKilledInsideWindow is the dead-gateway acceptance with
// the real binary: an installer's permanent 70 % limit on both inverters
// (classic 123 and DER 704), a 40 % window POSTed over HTTP, plantd killed
// with SIGKILL inside it after a renewal and started again once the DER
// inverter reverted (inv1 then has no reversion timer). An independent
// Modbus client reads both inverters' limit registers at 20 Hz all along:
// they never leave [40 %, 70 %], before the kill, while plantd is dead
// (the DER inverter reverts to the installer's 70 % that plantd programmed
// as its reversion value; the classic one, whose 123 would revert to no
// limit, was written without a reversion time and keeps 40 %) and after
// the restart (plantd reads what each holds: 40 % stays, 70 % is tightened
// at once, nothing ramps from a guess). Roles: standard gets 403, the grid
// operator and the installer may write, and the plant log names who sent
// the schedule and every write.
func TestGridControlKilledInsideWindow(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("kills and restarts plantd inside a limit window (~35 s)")
	}
	p := simtest.Start(t, noonConfig())
	// The installer's permanent limit, set before plantd ever ran.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	limitPoints := map[string][2]string{"inv1": {"WMaxLimPct", "WMaxLim_Ena"}, "inv2": {"WMaxLimPct", "WMaxLimPctEna"}}
	refs := map[string]sunspec.ModelRef{}
	clients := map[string]sunspec.ReadWriter{}
	for _, w := range []struct {
		id    string
		model uint16
	}{{"inv1", 123}, {"inv2", 704}} {
		cl := pool.Endpoint(modbus.EndpointConfig{Address: p.Device(w.id).Addr()}).Unit(1, 2*time.Second)
		d, err := devices.Discover(t.Context(), cl)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := d.Ref(w.model)
		pts := limitPoints[w.id]
		if _, err := sunspec.WritePoints(t.Context(), cl, ref, []sunspec.PointValue{{Point: pts[0], Value: 70}, {Point: pts[1], Value: 1}}); err != nil {
			t.Fatal(err)
		}
		refs[w.id], clients[w.id] = ref, cl
	}
	limit := func(id string) float64 { return p.Device(id).State().EffectiveLimitPct }
	// regLimit is the limit the registers say: WMaxLimPct when enabled.
	regLimit := func(id string) (float64, error) {
		inst, err := sunspec.ReadModel(t.Context(), clients[id], refs[id])
		if err != nil {
			return 0, err
		}
		pts := limitPoints[id]
		if ena, _ := inst.Float(pts[1]); ena != 1 {
			return 100, nil
		}
		return inst.Float(pts[0])
	}

	cfgPath := gridConfig(t, p)
	d := startDaemon(t, cfgPath)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")

	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	end := start.Add(35 * time.Second)
	sched := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40,"unit":"%%"}]}`,
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokStd, sched); code != 403 {
		t.Errorf("standard role POST: %d %s, want 403", code, b)
	}
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid, fmt.Sprintf(`{"commands":[{"command":"opModFixedPFInjectW","start":%q,"end":%q,"value":0.97}]}`, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))); code != 201 {
		t.Errorf("grid operator POST: %d %s, want 201", code, b)
	}
	code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst, sched)
	if code != 201 {
		t.Fatalf("installer POST: %d %s", code, b)
	}
	var created struct {
		Schedule struct {
			ScheduleID string `json:"scheduleId"`
		} `json:"schedule"`
	}
	_ = json.Unmarshal(b, &created)

	proctest.WaitFor(t, "40 % on both inverters", time.Until(start)+3*time.Second, func() bool { return limit("inv1") == 40 && limit("inv2") == 40 })

	// From here to the end of the test both registers and the limits in
	// effect stay within [40, 70], sampled at 20 Hz.
	stop := make(chan struct{})
	sampled := make(chan []string)
	go func() {
		var off []string
		n := 0
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sampled <- append(off, fmt.Sprintf("%d samples", n))
				return
			case <-tick.C:
			}
			n++
			for _, id := range []string{"inv1", "inv2"} {
				reg, err := regLimit(id)
				eff := limit(id)
				if err == nil && (reg < 40 || reg > 70) || eff < 40 || eff > 70 {
					off = append(off, fmt.Sprintf("%s register %g %% (err %v), in effect %g %% at start+%s", id, reg, err, eff, time.Since(start).Round(time.Millisecond)))
				}
			}
		}
	}()

	// Past a renewal (at half the reversion timeout): a write to both
	// inverters after the window's first.
	lastWrite := func(id string) time.Time {
		ws := p.Device(id).Writes()
		if len(ws) == 0 {
			return time.Time{}
		}
		return ws[len(ws)-1].Time
	}
	first1, first2 := lastWrite("inv1"), lastWrite("inv2")
	proctest.WaitFor(t, "a renewal on both inverters", 5*time.Second, func() bool {
		return lastWrite("inv1").After(first1.Add(time.Second)) && lastWrite("inv2").After(first2.Add(time.Second))
	})
	d.Kill() // SIGKILL: no chance to clean up
	killed := time.Now()
	proctest.WaitFor(t, "inv2 reverted to the installer's 70 %", 8*time.Second, func() bool { return limit("inv2") == 70 })
	t.Logf("SIGKILL after a renewal: inv2 at its stored fallback 70 %% %s later (reversion timeout 4 s, renewed from half of it on); inv1 (123) at %g %%", time.Since(killed).Round(10*time.Millisecond), limit("inv1"))
	// inv2's reversion came: inv1, written without a reversion time,
	// holds the window's 40 % and has no timer that could revert it.
	if s := p.Device("inv1").State(); s.EffectiveLimitPct != 40 || !s.RevertAt.IsZero() {
		t.Errorf("inv1 (123, written without reversion time) at %g %% with a reversion at %v after plantd died, want the window's 40 %% and none", s.EffectiveLimitPct, s.RevertAt)
	}

	d2 := startDaemon(t, cfgPath)
	d2.waitAPI(15 * time.Second)
	d2.waitOnline(10*time.Second, "inv2")
	onlineAt := time.Now()
	proctest.WaitFor(t, "40 % back after the restart", 3*time.Second, func() bool { return limit("inv1") == 40 && limit("inv2") == 40 })
	t.Logf("restart after the reversion: 40 %% back %s after inv2 came online (poll interval 500 ms)", time.Since(onlineAt).Round(10*time.Millisecond))
	// Renewals and the follow check after the restart: a write to both
	// after the restart's first.
	first1, first2 = lastWrite("inv1"), lastWrite("inv2")
	proctest.WaitFor(t, "a renewal on both after the restart", 5*time.Second, func() bool {
		return lastWrite("inv1").After(first1.Add(time.Second)) && lastWrite("inv2").After(first2.Add(time.Second))
	})
	close(stop)
	if off := <-sampled; len(off) > 1 {
		t.Errorf("the limit left [40, 70] in %d samples (%s): %s", len(off)-1, off[len(off)-1], strings.Join(off[:min(5, len(off)-1)], "; "))
	} else {
		t.Logf("within [40, 70] at every sample (%s) from the window's start to 2 s after the restart", off[0])
	}

	code, b = d2.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokStd, "")
	if code != 200 || !strings.Contains(string(b), created.Schedule.ScheduleID) || !strings.Contains(string(b), `"status":"active"`) {
		t.Errorf("GET schedules: %d %s", code, b)
	}
	proctest.WaitFor(t, "the plant log naming who sent what", 5*time.Second, func() bool {
		_, b := d2.request("GET", "/monitoring/v1/plants/p1/logs?limit=100", tokInst, "")
		s := string(b)
		return strings.Contains(s, "by inst (installer)") && strings.Contains(s, "by dso (gridoperator)") && strings.Contains(s, "WMaxLimPct 40") &&
			strings.Contains(s, "LimitWithoutReversion")
	})
	d2.Stop(os.Interrupt, 10*time.Second)
}

// The tokens of gridConfig.
const tokInst, tokStd, tokGrid = "installer-token-0123456789abcdef0123", "standard-token-0123456789abcdef01234", "gridop-token-0123456789abcdef0123456"

// gridConfig writes a config for plant p1 with the simulated plant's
// inverters, meter and battery polled every 500 ms, an installer, a
// standard and a grid-operator token, a 4 s reversion timeout and a
// 50 %/s ramp.
func gridConfig(t testing.TB, p *sim.Plant) string {
	t.Helper()
	dir := t.TempDir()
	var devs strings.Builder
	for _, d := range p.Devices()[:4] {
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s}\n", d.ID(), host, port)
	}
	cfgPath := filepath.Join(dir, "plantd.yaml")
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Grid, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: inst, sha256: %s, role: installer}
  - {name: std, sha256: %s, role: standard}
  - {name: dso, sha256: %s, role: gridoperator}
gridControl:
  reversionTimeout: 4s
  rampRatePercentPerSecond: 50
`, filepath.Join(dir, "plantd.db"), devs.String(), config.TokenHash(tokInst), config.TokenHash(tokStd), config.TokenHash(tokGrid))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

// noonConfig is the simulated plant at a clear-sky June noon, when its
// inverters make enough power for every limit to show.
func noonConfig() sim.Config {
	c := sim.DefaultConfig()
	c.Start, c.ClearSky = time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC), true
	return c
}

// gridConfigWith is gridConfig with more top-level YAML appended (a
// modbusServer section, say).
func gridConfigWith(t testing.TB, p *sim.Plant, extra string) string {
	t.Helper()
	path := gridConfig(t, p)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, path, string(raw)+extra)
	return path
}

// TestGridControlEveryCommandOverHTTP posts one schedule with every
// command but FeedInLimit over HTTP to the real binary. While the window
// is open the simulator's registers have every function enabled on both
// generations (123 and 704 limit, PF, disconnect on 123, every curve
// model); after it, every writable register of the classic models and the
// enables and curve 1 of the 7xx models are back at what they were.
func TestGridControlEveryCommandOverHTTP(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs a schedule of every command through plantd (~15 s)")
	}
	p := simtest.Start(t, noonConfig())
	pool := modbus.NewPool(nil)
	defer pool.Close()
	type dev struct {
		cl   sunspec.ReadWriter
		info *sunspec.Device
	}
	devs := map[string]dev{}
	for _, id := range []string{"inv1", "inv2"} {
		cl := pool.Endpoint(modbus.EndpointConfig{Address: p.Device(id).Addr()}).Unit(1, 2*time.Second)
		info, err := devices.Discover(t.Context(), cl)
		if err != nil {
			t.Fatal(err)
		}
		devs[id] = dev{cl, info}
	}
	read := func(id string, model uint16) *sunspec.Instance {
		t.Helper()
		ref, _ := devs[id].info.Ref(model)
		inst, err := sunspec.ReadModel(t.Context(), devs[id].cl, ref)
		if err != nil {
			t.Fatalf("read %s model %d: %v", id, model, err)
		}
		return inst
	}
	models := map[string][]uint16{"inv1": {123, 126, 129, 130, 132, 134, 135, 136}, "inv2": {704, 705, 706, 707, 708, 709, 710, 711}}
	before := map[string]map[uint16]*sunspec.Instance{"inv1": {}, "inv2": {}}
	for id, ms := range models {
		for _, m := range ms {
			before[id][m] = read(id, m)
		}
	}
	// Curves: inv1's curve 1 of each classic model, y moved a little.
	curve := func(m uint16, x, y string, dy float64) string {
		inst := before["inv1"][m]
		c := inst.Root.Groups("curve")[0]
		n, _ := inst.FloatIn(&c, "ActPt")
		var pts []string
		for j := 1; j <= int(n); j++ {
			xv, _ := inst.FloatIn(&c, fmt.Sprint(x, j))
			yv, _ := inst.FloatIn(&c, fmt.Sprint(y, j))
			pts = append(pts, fmt.Sprintf(`{"x":%g,"y":%g}`, xv, yv+dy))
		}
		return `{"points":[` + strings.Join(pts, ",") + `]}`
	}
	// 711 (DER freq-droop) takes parameters: its KOf moved a little.
	ctl := before["inv2"][711].Root.Groups("Ctl")[0]
	kof, err := before["inv2"][711].FloatIn(&ctl, "KOf")
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, gridConfig(t, p))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	end := start.Add(5 * time.Second)
	win := func(cmd, rest string) string {
		return fmt.Sprintf(`{"command":%q,"start":%q,"end":%q%s}`, cmd, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), rest)
	}
	body := `{"commands":[` + strings.Join([]string{
		win("opModMaxLimW", `,"value":45`), win("OpModDisconnect", ""),
		win("opModFixedPFInjectW", `,"value":0.95`), win("opModFixedPfAbsorbW", `,"value":0.9`),
		win("opModVoltVar", `,"curve":`+curve(126, "V", "VAr", -5)),
		win("opModVoltWatt", `,"curve":`+curve(132, "V", "W", -10)),
		win("opModFreqWatt", `,"curve":`+strings.TrimSuffix(curve(134, "Hz", "W", -10), "}")+fmt.Sprintf(`,"params":{"KOf":%g}}`, kof+0.01)),
		win("opModLvrtMustTrip", `,"curve":`+curve(129, "Tms", "V", 2)),
		win("opModHvrtMustTrip", `,"curve":`+curve(130, "Tms", "V", -2)),
		win("opModLfrtMustTrip", `,"curve":`+curve(135, "Tms", "Hz", 0.2)),
		win("opModHfrtMustTrip", `,"curve":`+curve(136, "Tms", "Hz", -0.2)),
	}, ",") + `]}`
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid, body); code != 201 {
		t.Fatalf("POST every command: %d %s", code, b)
	}
	enabled := func() []string {
		var off []string
		want := map[string]map[uint16][]string{
			"inv1": {123: {"WMaxLim_Ena", "OutPFSet_Ena"}, 126: {"ModEna"}, 129: {"ModEna"}, 130: {"ModEna"}, 132: {"ModEna"}, 134: {"ModEna"}, 135: {"ModEna"}, 136: {"ModEna"}},
			"inv2": {704: {"WMaxLimPctEna", "PFWInjEna", "PFWAbsEna"}, 705: {"Ena"}, 706: {"Ena"}, 707: {"Ena"}, 708: {"Ena"}, 709: {"Ena"}, 710: {"Ena"}, 711: {"Ena"}},
		}
		for id, ms := range want {
			for m, names := range ms {
				inst := read(id, m)
				for _, n := range names {
					if v, err := inst.Float(n); err != nil || int(v)&1 != 1 {
						off = append(off, fmt.Sprintf("%s %d %s", id, m, n))
					}
				}
			}
		}
		if v, _ := read("inv1", 123).Float("Conn"); v != 0 {
			off = append(off, "inv1 123 Conn")
		}
		return off
	}
	// Seen inside the window, however slowly plantd writes: the bound is
	// the window's end, not a time after its start.
	proctest.WaitFor(t, "every function enabled on both inverters inside the window", time.Until(end), func() bool { return len(enabled()) == 0 })
	t.Logf("every function enabled %s after the start", time.Since(start).Round(10*time.Millisecond))
	if s := p.Device("inv1").State(); s.Connected || s.EffectiveLimitPct != 45 {
		t.Errorf("inv1 in the window: connected %v, limit %g %%", s.Connected, s.EffectiveLimitPct)
	}
	// Restored after the end (inside the window every control differs).
	restored := func() []string {
		var diff []string
		for id, ms := range models {
			for _, m := range ms {
				now, was := read(id, m), before[id][m]
				if m >= 700 {
					// 7xx: the enables and the curve in effect (curve 1).
					for _, n := range []string{"Ena", "WMaxLimPctEna", "PFWInjEna", "PFWAbsEna", "WMaxLimPct"} {
						a, errA := now.Float(n)
						b, errB := was.Float(n)
						if (errA == nil) != (errB == nil) || a != b {
							diff = append(diff, fmt.Sprintf("%s %d %s %g≠%g", id, m, n, a, b))
						}
					}
					for _, g := range []string{"Crv", "Ctl"} {
						if gs, ws := now.Root.Groups(g), was.Root.Groups(g); len(gs) > 0 && len(ws) > 0 &&
							!slices.Equal(now.Regs[gs[0].Offset:gs[0].Offset+gs[0].Len], was.Regs[ws[0].Offset:ws[0].Offset+ws[0].Len]) {
							diff = append(diff, fmt.Sprintf("%s %d %s[1] %v≠%v", id, m, g, now.Regs[gs[0].Offset:gs[0].Offset+gs[0].Len], was.Regs[ws[0].Offset:ws[0].Offset+ws[0].Len]))
						}
					}
					continue
				}
				for _, pt := range now.Model.Group.Points {
					if !pt.Writable {
						continue
					}
					o := int(pt.Offset)
					if !slices.Equal(now.Regs[o:o+int(pt.Size)], was.Regs[o:o+int(pt.Size)]) {
						diff = append(diff, fmt.Sprintf("%s %d %s", id, m, pt.Name))
					}
				}
				if gs, ws := now.Root.Groups("curve"), was.Root.Groups("curve"); len(gs) > 0 {
					last := gs[len(gs)-1]
					if !slices.Equal(now.Regs[last.Offset:last.Offset+last.Len], was.Regs[ws[len(ws)-1].Offset:ws[len(ws)-1].Offset+ws[len(ws)-1].Len]) {
						diff = append(diff, fmt.Sprintf("%s %d curve[%d]", id, m, len(gs)))
					}
				}
			}
		}
		return diff
	}
	// The restore is waited for, not timed: the bound only ends a test
	// that would never pass (how soon it comes is for a benchmark).
	deadline := end.Add(60 * time.Second)
	look := time.NewTicker(100 * time.Millisecond)
	defer look.Stop()
	for left := restored(); len(left) > 0; left = restored() {
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the end, not back at the default: %v", left)
		}
		<-look.C
	}
	t.Logf("every control back at its default %s after the end", time.Since(end).Round(10*time.Millisecond))
	code, b := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokStd, "")
	if code != 200 || strings.Count(string(b), `"status":"done"`) != 11 {
		t.Errorf("GET schedules after the window: %d %s", code, b)
	}
}

// TestGridControlOperatorLinkLoss is the operator-link-loss acceptance
// (the CSIP-AUS ALL-23 idea) with the real binary and mosquitto: a 40 %
// window arrives over MQTT, the cloud's link, and the broker then stays
// away for the whole window and beyond (plantd has no link timeout that
// would drop a stored schedule). The window is applied at its start and
// held to its end, its reversion timeout renewed throughout; after it the
// fallback ramps both inverters back to their default.
func TestGridControlOperatorLinkLoss(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs a schedule through a broker outage (~25 s)")
	}
	p := simtest.Start(t, noonConfig())
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	cfgPath := gridConfig(t, p)
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "gateway:\n  id: gw-link\nmqtt:\n  broker: %s\n  remoteControl: true\n  remoteRole: gridoperator\n", b.URL())
	f.Close()
	limit := func(id string) float64 { return p.Device(id).State().EffectiveLimitPct }

	d := startDaemon(t, cfgPath)
	d.waitAPI(15 * time.Second)
	// Looked for from the first line: under load the uplink may connect
	// before the API's line, which waitAPI passed.
	connected := regexp.MustCompile(`mqtt connected`)
	d.WaitLines("mqtt connected", 10*time.Second, func(lines []string) bool { return slices.ContainsFunc(lines, connected.MatchString) })
	d.waitOnline(10*time.Second, "inv1", "inv2")

	start := time.Now().Truncate(time.Second).Add(5 * time.Second)
	end := start.Add(12 * time.Second) // three reversion timeouts of 4 s
	col.Publish("plantd/v1/gw-link/down/schedule/p1", true, fmt.Sprintf(
		`{"requestId":"req-link","version":1,"schedule":{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40}]}}`,
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
	proctest.WaitFor(t, "the ack of req-link", 4*time.Second, func() bool { return len(col.Acks("req-link")) > 0 })
	if a := col.Acks("req-link")[0]; a.Status != 201 {
		t.Fatalf("schedule over MQTT: %d %s", a.Status, a.Body)
	}
	if time.Until(start) < 500*time.Millisecond {
		t.Fatal("too slow: the window started before the link was cut")
	}
	b.Stop() // the operator's link is gone, before the window starts
	lost := time.Now()
	d.WaitLog(regexp.MustCompile(`mqtt connection lost`), 5*time.Second)

	proctest.WaitFor(t, "40 % on both inverters without the link", time.Until(start)+3*time.Second, func() bool { return limit("inv1") == 40 && limit("inv2") == 40 })
	applied := time.Since(start)
	// Held to the end: sampled every 50 ms until just before it.
	var hi float64
	var rises []string
	look := time.NewTicker(50 * time.Millisecond)
	defer look.Stop()
	for time.Until(end) > 200*time.Millisecond {
		l1, l2 := limit("inv1"), limit("inv2")
		if l1 != 40 || l2 != 40 {
			rises = append(rises, fmt.Sprintf("start+%s: inv1 %g %%, inv2 %g %%", time.Since(start).Round(10*time.Millisecond), l1, l2))
		}
		hi = max(hi, l1, l2)
		<-look.C
	}
	if hi != 40 {
		t.Errorf("limit rose to %g %% inside the window while the link was down: %v", hi, rises)
		t.Logf("plantd's log:\n%s", d.Tail(60))
	}
	proctest.WaitFor(t, "the fallback: both back at their default 100 %", 5*time.Second, func() bool { return limit("inv1") == 100 && limit("inv2") == 100 })
	t.Logf("link down %s before the start; 40 %% applied %s after the start, held (max %g %%) to the end, default 100 %% %s after the end; link down %s in all",
		start.Sub(lost).Round(10*time.Millisecond), applied.Round(10*time.Millisecond), hi, time.Since(end).Round(10*time.Millisecond), time.Since(lost).Round(100*time.Millisecond))
	code, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokStd, "")
	if code != 200 || !strings.Contains(string(body), `"status":"done"`) || !strings.Contains(string(body), "mqtt:gw-link (gridoperator)") {
		t.Errorf("GET schedules after the window: %d %s", code, body)
	}
	d.Stop(os.Interrupt, 10*time.Second)
}
