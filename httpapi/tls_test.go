package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/config"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "plantd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestTLS serves HTTPS from the configured cert and key.
func TestTLS(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	certFile, keyFile, pool := selfSigned(t)
	e := newEnv(t, envOpts{polls: 1, modify: func(c *Config) { c.TLSCert, c.TLSKey = certFile, keyFile }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", "https://"+ln.Addr().String()+"/live/v2/plants/demo/devices", nil)
	req.Header.Set("Authorization", "Bearer "+tokStandard)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("https: %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestCORS: off by default; configured origins get the headers and
// preflights are answered.
func TestCORS(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	for _, tt := range []struct {
		name    string
		origins []string
		origin  string
		allowed bool
	}{
		{"off by default", nil, "https://app.example", false},
		{"listed origin", []string{"https://app.example"}, "https://app.example", true},
		{"other origin", []string{"https://app.example"}, "https://evil.example", false},
		{"any", []string{"*"}, "https://evil.example", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{polls: 1, modify: func(c *Config) { c.CORSOrigins = tt.origins }})
			req, _ := http.NewRequest("OPTIONS", e.ts.URL+"/monitoring/v1/plants", nil)
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Access-Control-Request-Method", "GET")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("Access-Control-Allow-Origin") == tt.origin
			if got != tt.allowed || tt.allowed && resp.StatusCode != http.StatusNoContent {
				t.Errorf("preflight: %d allow-origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}

// TestTLSFilesReadByNew: a key that cannot be read or parsed fails New
// (plantd's start), naming the files, instead of Serve later.
func TestTLSFilesReadByNew(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	certFile, keyFile, _ := selfSigned(t)
	e := newEnv(t, envOpts{polls: 1})
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{
		"missing":     filepath.Join(t.TempDir(), "missing.pem"),
		"a directory": t.TempDir(),
		"not a key":   garbage,
	} {
		cfg := testConfig(config.RateLimit{})
		cfg.TLSCert, cfg.TLSKey = certFile, key
		_, err := New(cfg, Deps{Live: e.live, History: e.hist}, nil)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("key %s: New: %v, want an error naming %s", name, err, key)
		}
	}
	cfg := testConfig(config.RateLimit{})
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	if _, err := New(cfg, Deps{Live: e.live, History: e.hist}, nil); err != nil {
		t.Errorf("good pair: %v", err)
	}
}
