package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	ucapi "github.com/enbility/eebus-go/usecases/api"

	"plantd/config"
	"plantd/eebus"
	"plantd/eebus/controlbox"
	"plantd/internal/proctest"
)

// TestBrowserEEBus: the Grid operator view shows the control box over
// EEBus (issue 44): connected, out of the start's failsafe, and the
// consumption limit the box set, in words; phone width too.
func TestBrowserEEBus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd, a control box and a browser")
	}
	t.Parallel() // its own plantd, box, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	cert, err := eebus.LoadOrCreateCert(dir, "gw")
	if err != nil {
		t.Fatal(err)
	}
	ski, err := eebus.SKI(cert)
	if err != nil {
		t.Fatal(err)
	}
	port := proctest.FreePort(t)
	box, err := controlbox.New(controlbox.Spec{Port: proctest.FreePort(t), Trust: ski, PeerAddr: fmt.Sprintf("127.0.0.1:%d", port), Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const token = "eebus-browser-token-0123456789"
	cfg := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`http: {listen: "127.0.0.1:0"}
database: {path: %s}
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin}
tokens:
  - {name: std, sha256: %s, role: standard}
eebus: {enabled: true, port: %d, trusted: [%q]}
`, filepath.Join(dir, "plantd.db"), config.TokenHash(token), port, box.SKI())), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startPlantd(t, bin, "run", "-c", cfg)
	box.Start()
	t.Cleanup(box.Stop)
	if err := box.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := box.Limit(ctx, false, ucapi.LoadLimit{IsActive: true, Value: 4200}); err != nil && err != controlbox.ErrNoAnswer {
		t.Fatal(err)
	}

	var problems consoleProblems
	b := startBrowser(t, chrome, problems.add)
	js := func(s string, out any) {
		t.Helper()
		if err := b.eval(s, out); err != nil {
			t.Fatal(err)
		}
	}
	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	js(`document.getElementById('token').value = `+strconv.Quote(token)+`; document.getElementById('signin-form').requestSubmit()`, nil)
	b.waitJS("overview", `document.querySelector('#live-values')`, 15*time.Second)
	js("location.hash = '#/operator'", nil)
	card := `document.querySelector('#eebus[data-connected=true][data-failsafe=false]')?.innerText.includes('Consumption limit 4.2 kW')`
	b.waitJS("the EEBus card: connected, 4.2 kW on the consumers", card, 20*time.Second)
	var text string
	var dimCard bool
	js(`document.getElementById('eebus').innerText`, &text)
	js(`!!document.getElementById('dimming')`, &dimCard)
	t.Logf("EEBus card: %q", text)
	if dimCard {
		t.Error("the dimming contact's card says no control box is wired, beside the EEBus box's")
	}
	for _, w := range []int64{1280, 390} {
		b.viewport(w, 900, w < 800)
		b.waitJS("the card at this width", card, 10*time.Second)
		p := filepath.Join(shots, fmt.Sprintf("eebus-operator-%d.png", w))
		b.screenshot(p)
		for _, s := range scrollsSideways(t, b) {
			t.Errorf("at %d px: %s", w, s)
		}
	}
	problems.report(t)
}
