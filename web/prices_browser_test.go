package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
)

// TestBrowserPricesDown: market prices whose provider is down (503, no
// prices ever fetched, no time-of-use fallback) show on the overview's
// "Prices and plan" card as stale with the provider's error, no price
// chart, the plan's fallback as "surplus-only: <why>" and no empty plan
// chart; phone width too.
func TestBrowserPricesDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plantd and a browser")
	}
	t.Parallel() // its own plantd, provider, browser and files
	chrome, shots, dir, bin := browserSetup(t)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(provider.Close)
	const token = "prices-browser-token-0123456789"
	cfg := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`http: {listen: "127.0.0.1:0"}
database: {path: %s}
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin}
tokens:
  - {name: std, sha256: %s, role: standard}
tariffs:
  plant: p1
  market: {provider: awattar, zone: de, url: %s/v1/marketdata}
  import: {market: true, surcharge: 0.2, vat: 19}
  feedIn: {market: true}
`, filepath.Join(dir, "plantd.db"), config.TokenHash(token), provider.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startPlantd(t, bin, "run", "-c", cfg)

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
	card := `(() => { const c = document.getElementById('prices');
		return c && !c.hidden && c.dataset.stale === 'true' && c.dataset.slots === '0' && !c.querySelector('#prices-chart') &&
			c.querySelector('#prices-stale')?.textContent.includes('503') && c.querySelector('#prices-empty') &&
			c.querySelector('#plan-fallback')?.textContent.startsWith('surplus-only: ') && !c.querySelector('#plan-chart') })()`
	b.waitJS("the card: stale, no prices, surplus-only", card, 30*time.Second)
	var text string
	js(`document.getElementById('prices').innerText`, &text)
	t.Logf("prices card: %q", text)
	if !strings.Contains(text, "awattar") || strings.Contains(text, "last good prices are kept") {
		t.Errorf("the card does not name the market's source, or speaks of prices it never had: %q", text)
	}
	for _, w := range []int64{1280, 390} {
		b.viewport(w, 900, w < 800)
		b.waitJS("the card at this width", card, 10*time.Second)
		b.screenshot(filepath.Join(shots, fmt.Sprintf("prices-down-%d.png", w)))
		for _, s := range scrollsSideways(t, b) {
			t.Errorf("at %d px: %s", w, s)
		}
	}
	problems.report(t)
}
