package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plantd/config"
	"plantd/httpapi/oauth2/oauthconfig"
)

// TestClientAdd: "plantd client add" generates a 256-bit secret, prints
// it once and adds the client with the secret's hash, redirect URIs and
// pre-approval to the config (mode kept, comments kept); a taken id or a
// bad redirect URI leaves the file unchanged.
func TestClientAdd(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	path, _ := exampleConfigCopy(t)
	out, errOut, code := runBinary(t, "client", "add", "--id", "portal", "--role", "standard", "-c", path,
		"--redirect-uri", "https://portal.example.com/cb", "--redirect-uri", "http://127.0.0.1:8765/cb", "--pre-approved")
	if code != 0 {
		t.Fatalf("client add: exit %d %s", code, errOut)
	}
	i := strings.Index(out, "keep it secret): ")
	if i < 0 {
		t.Fatalf("no secret printed: %q", out)
	}
	secret := strings.TrimSpace(out[i+len("keep it secret): "):])
	if len(secret) < 43 { // 32 bytes, base64url
		t.Errorf("secret %q shorter than 256 bits", secret)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config after client add: %v", err)
	}
	var got *oauthconfig.Client
	for i := range cfg.OAuthClients {
		if cfg.OAuthClients[i].ClientID == "portal" {
			got = &cfg.OAuthClients[i]
		}
	}
	if got == nil || got.SecretSHA256 != config.TokenHash(secret) || got.Role != "standard" || !got.PreApproved ||
		!slices.Equal(got.RedirectURIs, []string{"https://portal.example.com/cb", "http://127.0.0.1:8765/cb"}) {
		t.Fatalf("client in the config: %+v", got)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), secret) || !strings.Contains(string(data), "# Clients that get expiring tokens") {
		t.Error("the config holds the secret, or lost its comments")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after client add: %v %v", fi.Mode(), err)
	}
	for _, args := range [][]string{
		{"--id", "portal"},
		{"--id", "other", "--redirect-uri", "https://x.example.com/cb#frag"},
		{"--id", "other", "--redirect-uri", "/relative"},
	} {
		_, errOut, code := runBinary(t, append([]string{"client", "add", "-c", path}, args...)...)
		if code != exitConfig {
			t.Errorf("client add %v: exit %d, want %d: %s", args, code, exitConfig, errOut)
		}
		if after, _ := os.ReadFile(path); string(after) != string(data) {
			t.Errorf("client add %v changed the file", args)
		}
	}
	// Without a token, plantd consent says where to get one.
	_, errOut, code = runBinary(t, "consent", "list", "--url", "http://127.0.0.1:9")
	if code != exitUsage || !strings.Contains(errOut, "PLANTD_TOKEN") {
		t.Errorf("consent list without a token: exit %d %s", code, errOut)
	}
}

// TestClientAddRefusesIDs: "plantd client add" refuses a client id with
// control characters, space or separators (with and without
// --print-only), naming the character quoted, and leaves the file as it
// was.
func TestClientAddRefusesIDs(t *testing.T) {
	t.Parallel() // its own files and processes
	path, example := exampleConfigCopy(t)
	for _, tt := range []struct {
		id, named string
		printOnly bool
	}{
		{"evil\x1b[2J", `'\x1b'`, false},
		{"evil\x1b[2J", `'\x1b'`, true},
		{"a:b", `':'`, false},
		{`say"hi"`, `'"'`, true},
		{"two\r\nlines", `'\r'`, false},
		{"with space", `' '`, false},
	} {
		args := []string{"client", "add", "--id", tt.id, "--role", "standard", "-c", path}
		if tt.printOnly {
			args = append(args, "--print-only")
		}
		out, errOut, code := runBinary(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tt.named) || strings.ContainsAny(errOut, "\x1b\r") {
			t.Errorf("client add --id %q (print-only %v): exit %d, stdout %q, stderr %q; want exit %d naming %s",
				tt.id, tt.printOnly, code, out, errOut, exitUsage, tt.named)
		}
		if after, _ := os.ReadFile(path); string(after) != string(example) {
			t.Fatalf("client add --id %q changed the file", tt.id)
		}
	}
}

// TestAddRefusesRole: "plantd token add" and "plantd client add" refuse a
// role that is none of standard, installer and gridoperator, say so on
// stderr and leave the file as it was.
func TestAddRefusesRole(t *testing.T) {
	t.Parallel() // its own files and processes
	path, example := exampleConfigCopy(t)
	for _, args := range [][]string{
		{"token", "add", "--name", "laptop", "--role", "admin", "-c", path},
		{"client", "add", "--id", "portal", "--role", "admin", "-c", path},
	} {
		out, errOut, code := runBinary(t, args...)
		want := "plantd " + args[0] + ` add: --role "admin": want standard, installer or gridoperator`
		if code != exitUsage || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("%s add --role admin: exit %d, stdout %q, stderr %q; want exit %d and %q", args[0], code, out, errOut, exitUsage, want)
		}
		if after, _ := os.ReadFile(path); string(after) != string(example) {
			t.Fatalf("%s add --role admin changed the file", args[0])
		}
	}
}

// exampleConfigCopy writes packaging/plantd.yaml.example to plantd.yaml in
// a temporary directory (0640) and returns its path and contents.
func exampleConfigCopy(t *testing.T) (path string, example []byte) {
	t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "..", "packaging", "plantd.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "plantd.yaml")
	if err := os.WriteFile(path, example, 0o640); err != nil {
		t.Fatal(err)
	}
	return path, example
}
