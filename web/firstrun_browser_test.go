package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"plantd/config"
)

// TestBrowserFirstRun drives Debian's chromium against the real plantd on
// a config without devices, as the package installs it: signed in, the
// Overview and the Devices view show the first-run notice (plantd scan,
// the config file, systemctl reload), at desktop and phone width.
func TestBrowserFirstRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	const token = "first-run-test-token"
	cfg := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("http:\n  listen: 127.0.0.1:0\ndatabase:\n  path: %s\n"+
		"plants:\n  - {id: plant1, name: My PV plant, timezone: Europe/Berlin}\ndevices: []\n"+
		"tokens:\n  - {name: t, sha256: %s, role: installer}\n", filepath.Join(dir, "plantd.db"), config.TokenHash(token))), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startPlantd(t, bin, "run", "-c", cfg)
	b := startBrowser(t, chrome, func(any) {})
	js := func(s string) {
		t.Helper()
		if err := b.eval(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.viewport(1280, 900, false)
	b.navigate(base + "/")
	b.waitJS("sign-in form", `!document.getElementById('signin').hidden`, 15*time.Second)
	js(`document.getElementById('token').value = ` + strconv.Quote(token) + `; document.getElementById('signin-form').requestSubmit()`)
	notice := `document.querySelector('#first-run')?.textContent.includes('plantd scan HOST') && document.querySelector('#first-run').textContent.includes('/etc/plantd/plantd.yaml') && document.querySelector('#first-run').textContent.includes('systemctl reload plantd')`
	for _, view := range []string{"overview", "devices"} {
		js(`location.hash = '#/` + view + `'`)
		b.waitJS("first-run notice on "+view, `document.getElementById('view').dataset.view === '`+view+`' && `+notice, 15*time.Second)
		for _, w := range []struct {
			name          string
			width, height int64
			mobile        bool
		}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
			b.viewport(w.width, w.height, w.mobile)
			b.waitJS("first-run notice at "+w.name+" width", notice, 10*time.Second)
			p := filepath.Join(shots, "firstrun-"+view+"-"+w.name+".png")
			b.screenshot(p)
			t.Logf("screenshot %s", p)
		}
		b.viewport(1280, 900, false)
	}
}
