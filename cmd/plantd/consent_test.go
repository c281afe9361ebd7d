package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"plantd/config"
)

// TestConsentListQuotesStrings: a client's loginHint is whatever it
// posted; "plantd consent list" (the real binary against the real daemon)
// escapes its control and bidirectional formatting characters, so an ESC
// drives no terminal, a CR, LF or tab forges or shifts no table line and
// a U+202E shows nothing reversed.
func TestConsentListQuotesStrings(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	const owner, secret = "token-of-the-consent-list-test", "secret-of-the-consent-list-test"
	dir := t.TempDir()
	cfg := noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "plantd.db")) +
		fmt.Sprintf("tokens:\n  - {name: owner, sha256: %s, role: installer}\noauthClients:\n  - {clientId: portal, secretSha256: %s, role: standard}\n",
			config.TokenHash(owner), config.TokenHash(secret))
	d := startDaemonConfig(t, cfg)
	api := d.waitAPI(10 * time.Second)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"portal"}, "client_secret": {secret}}
	resp, err := http.PostForm("http://"+api+"/oauth2/token", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("client_credentials token: %d %v", resp.StatusCode, err)
	}
	hints := []struct{ raw, shown string }{
		{"owner\x1b[2J\r\nforged  Accepted  bc-authorize  admin", `owner\x1b[2J\r\nforged  Accepted  bc-authorize  admin`},
		{"tab\there", `tab\there`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bell\a", `bell\a`},
		{"admin\u202Etxt.exe", `admin\u202etxt.exe`},
		{"\u2066isolate\u2069 \u200Fmark", `\u2066isolate\u2069 \u200fmark`},
	}
	for _, h := range hints {
		body, _ := json.Marshal(map[string]string{"loginHint": h.raw})
		if st, b := d.request("POST", "/oauth2/v2/bc-authorize", tok.AccessToken, string(body)); st != 200 {
			t.Fatalf("bc-authorize %q: %d %s", h.raw, st, b)
		}
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(owner+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBinary(t, "consent", "list", "--url", "http://"+api, "--token-file", tokenFile)
	if code != 0 {
		t.Fatalf("consent list: exit %d %s", code, errOut)
	}
	for i, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Errorf("output holds %q at %d:\n%s", r, i, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1+len(hints) {
		t.Errorf("%d lines, want a header and %d requests:\n%s", len(lines), len(hints), out)
	}
	for _, h := range hints {
		if !strings.Contains(out, h.shown) {
			t.Errorf("output lacks the quoted hint %s:\n%s", h.shown, out)
		}
	}
	d.stop()
}
