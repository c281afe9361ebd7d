package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/eebus"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
)

// eebusRig is dimmingSim's plant, plantd on dimmingConfig with its eebus
// section on (the box's SKI trusted, heartbeatTimeout as given) and the
// simulator's control box, `plantd sim --controlbox` (eebus-go's Energy
// Guard use cases), which trusts plantd's SKI, dials it over loopback TLS
// and takes line commands on its stdin. The box runs in a process of its
// own: spine-go's event bus is one per process, and two EEBus devices in
// one (this test's and TestEEBusControlBox's) race on it.
type eebusRig struct {
	t    *testing.T
	p    *sim.Plant
	path string
	box  *simBox
	d    *plantdRun
}

// simBox is `plantd sim --controlbox` with its certificate (and so its
// SKI) made beforehand in its cache directory.
type simBox struct {
	t       *testing.T
	ski     string
	cmd     *exec.Cmd
	in      io.WriteCloser
	answers chan string
	out     *proctest.Buffer
	stop    func()
}

func newEEBusRig(t *testing.T, heartbeatTimeout time.Duration) *eebusRig {
	t.Helper()
	r := &eebusRig{t: t, p: dimmingSim(t)}
	r.p.SetLoadOffset(30000)
	r.path = dimmingConfig(t, r.p)
	cert, err := eebus.LoadOrCreateCert(filepath.Dir(r.path), "gw")
	if err != nil {
		t.Fatal(err)
	}
	ski, err := eebus.SKI(cert)
	if err != nil {
		t.Fatal(err)
	}
	port := proctest.FreePort(t)
	r.box = newSimBox(t, fmt.Sprintf("%s@127.0.0.1:%d", ski, port))
	f, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "eebus: {enabled: true, port: %d, trusted: [%q], heartbeatTimeout: %s}\n", port, r.box.ski, heartbeatTimeout)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return r
}

// newSimBox makes the box's certificate where `plantd sim --controlbox`
// keeps it (its user cache directory, XDG_CACHE_HOME); start runs it.
func newSimBox(t *testing.T, target string) *simBox {
	t.Helper()
	cache := t.TempDir()
	dir := filepath.Join(cache, "plantd", "controlbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := eebus.LoadOrCreateCert(dir, "controlbox")
	if err != nil {
		t.Fatal(err)
	}
	b := &simBox{t: t, answers: make(chan string, 16), out: &proctest.Buffer{}}
	if b.ski, err = eebus.SKI(c); err != nil {
		t.Fatal(err)
	}
	b.cmd = exec.Command(binPath, "sim", "--listen", "127.0.0.1", "--controlbox", target)
	b.cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	b.cmd.Stderr = b.out
	return b
}

// start runs the box; its answers ("ok ...", "error ...") are read from
// its stdout, the simulator's banner skipped.
func (b *simBox) start() {
	b.t.Helper()
	var err error
	if b.in, err = b.cmd.StdinPipe(); err != nil {
		b.t.Fatal(err)
	}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			fmt.Fprintln(b.out, l)
			if strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "error") {
				b.answers <- l
			}
		}
		close(b.answers)
	}()
	// The box's command loop ends at the end of its stdin, the simulator
	// at SIGTERM: both, then its exit is waited for (killed after 15 s).
	b.stop = sync.OnceFunc(func() {
		_ = b.in.Close()
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = b.cmd.Process.Kill()
			<-done
		}
		_ = b.cmd.Wait()
	})
	b.t.Cleanup(func() {
		b.stop()
		if b.t.Failed() {
			b.t.Logf("control box:\n%s", b.out.String())
		}
	})
}

// do runs one command and returns its answer's value ("ok 7": "7"); an
// "error" answer is returned as an error.
func (b *simBox) do(cmd string) (string, error) {
	b.t.Helper()
	if _, err := fmt.Fprintln(b.in, cmd); err != nil {
		b.t.Fatalf("box %s: %v", cmd, err)
	}
	select {
	case a, ok := <-b.answers:
		if !ok {
			b.t.Fatalf("box %s: it ended", cmd)
		}
		if v, found := strings.CutPrefix(a, "ok"); found {
			return strings.TrimSpace(v), nil
		}
		return "", errors.New(a)
	case <-time.After(40 * time.Second): // the box bounds each command at 30 s
		b.t.Fatalf("box %s: no answer", cmd)
	}
	return "", nil
}

// must is do that fails the test on an error answer.
func (b *simBox) must(cmd string) string {
	b.t.Helper()
	v, err := b.do(cmd)
	if err != nil {
		b.t.Fatalf("box %s: %v", cmd, err)
	}
	return v
}

// start runs plantd (again) on the rig's config and waits for its API.
func (r *eebusRig) start() {
	r.t.Helper()
	r.d = startDaemon(r.t, r.path)
	r.d.waitAPI(15 * time.Second)
}

// controllableW is the heater's and the heat pump's draw on their meters.
func (r *eebusRig) controllableW() float64 {
	return r.p.Device("heatmeter").State().PowerW + r.p.Device("hpmeter").State().PowerW
}

// logged: the plant log holds an entry of code whose message has part,
// after since (zero: any).
func (r *eebusRig) logged(code, part string, since time.Time) func() bool {
	return func() bool {
		for _, e := range plantLog(r.t, r.d) {
			if e.Code == code && strings.Contains(e.Message, part) && !e.Time.Before(since.Truncate(time.Second)) {
				return true
			}
		}
		return false
	}
}

// eebusInputs is GET /gateway/v1/inputs' eebus member.
type eebusInputs struct {
	Connected, Failsafe bool
	ConsumptionLimitW   *float64
	ProductionLimitW    *float64
	LastHeartbeatUtc    string
}

func (r *eebusRig) inputs() eebusInputs {
	r.t.Helper()
	code, raw := r.d.request("GET", "/gateway/v1/inputs", tokStd, "")
	var st struct{ EEBus *eebusInputs }
	if err := json.Unmarshal(raw, &st); code != 200 || err != nil || st.EEBus == nil {
		r.t.Fatalf("GET inputs: %d %s %v", code, raw, err)
	}
	return *st.EEBus
}

// window is the box's active FeedInLimit window in the schedule list
// (createdBy eebus:<box SKI>..., role gridoperator).
func (r *eebusRig) window() (plant.Schedule, bool) {
	r.t.Helper()
	code, b := r.d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	var out struct{ Schedules []plant.Schedule }
	if err := json.Unmarshal(b, &out); code != 200 || err != nil {
		r.t.Fatalf("GET schedules: %d %s %v", code, b, err)
	}
	for _, sc := range out.Schedules {
		if strings.HasPrefix(sc.CreatedBy, "eebus:"+r.box.ski) && strings.HasSuffix(sc.CreatedBy, "(gridoperator)") &&
			len(sc.Commands) == 1 && sc.Commands[0].Status == plant.WindowActive {
			return sc, true
		}
	}
	return plant.Schedule{}, false
}

// inverterLimited: an inverter's active power limit acts below 100 %.
func (r *eebusRig) inverterLimited() bool {
	for _, id := range []string{"inv1", "inv2"} {
		if r.p.Device(id).State().EffectiveLimitPct < 100 {
			return true
		}
	}
	return false
}

// TestEEBusHeartbeatLoss is issue 44's heartbeat loss with the real
// binary, the box `plantd sim --controlbox`. First the nominal maxima: the box reads the controllable
// consumers' rated sum and the inverters' (as plantd discovered them),
// and an LPP above the latter is refused. Then the box writes a failsafe production limit of 1 kW, then stops
// its heartbeat. Within eebus.heartbeatTimeout (10 s) plantd logs
// EEBusHeartbeatLost and EEBusFailsafe, the failsafe consumption limit
// (the config's 4.2 kW, never below the §14a minimum of two devices,
// 7.56 kW) brings the heater's and heat pump's draw down (the heat pump
// locked), and the failsafe production limit is a grid operator's
// FeedInLimit window of 1000 W in the schedule list that limits the
// simulator's inverters. The heartbeat's return does not end it (the
// failsafe duration, at least 2 h, holds). A restart of plantd within
// that duration resumes it (the window in force from the start, held when
// the box speaks again); a restart after it starts in the failsafe, the
// stored 1 kW window in force, until the box speaks again; then the
// failsafe ends, its window with it.
func TestEEBusHeartbeatLoss(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd against an EEBus control box that stops its heartbeat (~30 s)")
	}
	const timeout = 10 * time.Second // the box beats every 4 s
	r := newEEBusRig(t, timeout)
	r.start()
	r.d.waitOnline(10*time.Second, "inv1", "meter", "heatmeter", "hpmeter", "heater", "heatpump")
	r.box.start()
	r.box.must("ready")
	proctest.WaitFor(t, "the box connected and plantd out of its start's failsafe", 30*time.Second, r.logged("EEBusRecovered", "speaks", time.Time{}))

	// The nominal maxima the box reads: the controllable consumers' rated
	// sum (6 + 3 kW) and the inverters' as discovered (the simulator's
	// inv1 10 kW and inv2 8 kW); a production limit above it is refused.
	nominal := func(kind, want string) func() bool {
		return func() bool { v, err := r.box.do("nominal " + kind); return err == nil && v == want }
	}
	proctest.WaitFor(t, "the box reads a consumption nominal maximum of 9 kW", 20*time.Second, nominal("lpc", "9000"))
	proctest.WaitFor(t, "the box reads a production nominal maximum of 18 kW", 20*time.Second, nominal("lpp", "18000"))
	if n := r.box.must("lpp 19000"); n == "0" { // "-": the box missed the refusal (package controlbox)
		t.Error("LPP 19 kW above the inverters' 18 kW accepted")
	}
	proctest.WaitFor(t, "LPP 19 kW refused and logged", 10*time.Second, r.logged("EEBusLimitRefused", "above the nominal maximum 18000 W", time.Time{}))
	if _, open := r.window(); open {
		t.Error("a window for the refused LPP")
	}

	r.box.must("failsafe lpp 1000")
	proctest.WaitFor(t, "the box's failsafe production limit stored", 10*time.Second, r.logged("EEBusFailsafeSet", "1000", time.Time{}))

	// Both loads on by hand and the house's load gone: PV exports what
	// the loads leave (well above 1 kW once the heat pump is locked).
	for _, id := range []string{"heater", "heatpump"} {
		if code, b := r.d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"On"}`); code != 200 {
			t.Fatalf("PUT %s mode On: %d %s", id, code, b)
		}
	}
	proctest.WaitFor(t, "heater 6 kW and heat pump 3 kW on their meters", 20*time.Second, func() bool { return r.controllableW() == 9000 })
	r.p.SetLoadOffset(-1e6)
	if r.inverterLimited() {
		t.Fatal("an inverter limited before the failsafe")
	}

	stopped := time.Now()
	r.box.must("heartbeat stop")
	proctest.WaitFor(t, "EEBusHeartbeatLost", timeout+10*time.Second, r.logged("EEBusHeartbeatLost", r.box.ski, stopped))
	lostAfter := time.Since(stopped)
	proctest.WaitFor(t, "EEBusFailsafe", 5*time.Second, r.logged("EEBusFailsafe", "failsafe for at least", stopped))
	if lostAfter > timeout+2*time.Second {
		t.Errorf("failsafe %v after the heartbeat stopped, want within the timeout of %v (and the poll)", lostAfter, timeout)
	}
	pmin := consumer.MinPower14a(2)
	proctest.WaitFor(t, fmt.Sprintf("the controllable draw at most %v W, not 0", pmin), 10*time.Second, func() bool {
		w := r.controllableW()
		return w <= pmin && w > 0
	})
	if hp, _ := r.p.Load("heatpump"); hp.SGReady != 1 {
		t.Errorf("heat pump at SG-Ready %d in the failsafe, want 1 (locked)", hp.SGReady)
	}
	sc := proctest.WaitValue(t, "the failsafe's FeedInLimit window active", 10*time.Second, r.window)
	if cm := sc.Commands[0]; cm.Command != "FeedInLimit" || cm.Value == nil || *cm.Value != 1000 || cm.Unit != "W" {
		t.Errorf("failsafe window %+v, want FeedInLimit 1000 W", cm)
	}
	proctest.WaitFor(t, "an inverter limited by the failsafe window", 10*time.Second, r.inverterLimited)
	proctest.WaitFor(t, "the export at most 1 kW (and 100 W)", 20*time.Second, func() bool { return -r.p.Balance().GridW <= 1100 })
	st := r.inputs()
	if !st.Failsafe || st.ConsumptionLimitW == nil || *st.ConsumptionLimitW != 4200 || st.ProductionLimitW == nil || *st.ProductionLimitW != 1000 {
		t.Errorf("inputs' eebus %+v in the failsafe, want failsafe with 4200 W and 1000 W", st)
	}
	t.Logf("heartbeat stopped → failsafe after %v", lostAfter.Round(time.Millisecond))

	// The heartbeat returns: plantd receives it and the failsafe holds.
	before := st.LastHeartbeatUtc
	r.box.must("heartbeat start")
	st = proctest.WaitValue(t, "a heartbeat received again", 15*time.Second, func() (eebusInputs, bool) {
		st := r.inputs()
		return st, st.LastHeartbeatUtc != "" && st.LastHeartbeatUtc != before
	})
	if !st.Failsafe {
		t.Errorf("inputs' eebus %+v with the heartbeat back, want the failsafe held (its duration is 2 h at least)", st)
	}
	if r.logged("EEBusRecovered", "", stopped)() {
		t.Error("EEBusRecovered with the heartbeat back before the failsafe duration")
	}
	if _, open := r.window(); !open {
		t.Error("the failsafe window ended with the heartbeat back")
	}
	if w := r.controllableW(); w > pmin {
		t.Errorf("controllable draw %v W with the heartbeat back, want at most %v W (failsafe held)", w, pmin)
	}

	// A restart within the failsafe duration: plantd resumes the lost
	// heartbeat's failsafe, its window in force from the start, and holds
	// it when the box speaks again (the duration is not over).
	r.d.stop()
	statePath := filepath.Join(filepath.Dir(r.path), eebus.StateFile)
	kept := readEEBusState(t, statePath)
	if _, ok := kept["failsafeSinceMs"]; !ok {
		t.Fatalf("%s after a stop in the failsafe: %v, want failsafeSinceMs", eebus.StateFile, kept)
	}
	restarted := time.Now()
	r.start()
	proctest.WaitFor(t, "EEBusFailsafe resumed at the start", 15*time.Second,
		r.logged("EEBusFailsafe", "resuming the failsafe of the lost heartbeat", restarted))
	if _, open := r.window(); !open {
		t.Error("the failsafe window not in force at the restart")
	}
	proctest.WaitFor(t, "the box reconnected and beating", 60*time.Second, func() bool {
		st := r.inputs()
		return st.Connected && st.LastHeartbeatUtc != ""
	})
	if r.logged("EEBusRecovered", "", restarted)() {
		t.Error("EEBusRecovered after a restart within the failsafe duration")
	}
	if st := r.inputs(); !st.Failsafe {
		t.Errorf("inputs' eebus %+v after the restart, want the failsafe held", st)
	}
	if w := r.controllableW(); w > pmin {
		t.Errorf("controllable draw %v W after the restart, want at most %v W (failsafe held)", w, pmin)
	}

	// A restart after the failsafe duration (its start moved 3 h back in
	// the state file while plantd is stopped): plantd starts in the
	// failsafe with the stored values, until the box speaks; then the
	// failsafe ends, its window too.
	r.d.stop()
	kept = readEEBusState(t, statePath)
	kept["failsafeSinceMs"] = time.Now().Add(-3 * time.Hour).UnixMilli()
	writeEEBusState(t, statePath, kept)
	restarted = time.Now()
	r.start()
	proctest.WaitFor(t, "EEBusFailsafe at the start with the stored values", 15*time.Second,
		r.logged("EEBusFailsafe", "starting in the failsafe state until the control box speaks: consumption 4200 W, production 1000 W", restarted))
	proctest.WaitFor(t, "the box reconnected and plantd out of its start's failsafe", 60*time.Second, r.logged("EEBusRecovered", "speaks", restarted))
	proctest.WaitFor(t, "the failsafe window ended", 15*time.Second, func() bool { _, open := r.window(); return !open })
	proctest.WaitFor(t, "the inverters free again", 20*time.Second, func() bool { return !r.inverterLimited() })
	if st := r.inputs(); st.Failsafe || st.ProductionLimitW != nil || st.ConsumptionLimitW != nil {
		t.Errorf("inputs' eebus %+v after the recovery, want no failsafe and no limit", st)
	}
	if _, ok := readEEBusState(t, statePath)["failsafeSinceMs"]; ok {
		t.Errorf("%s still holds failsafeSinceMs after the failsafe's end", eebus.StateFile)
	}
}

// readEEBusState reads plantd's EEBus state file as JSON.
func readEEBusState(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func writeEEBusState(t *testing.T, path string, m map[string]any) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
