package mqtt

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
)

// writePKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, both signed by the CA, and returns their files.
func writePKI(t testing.TB, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	c := newTestCA(t, dir, "test")
	srvCert, srvKey = c.leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	cliCert, cliKey = c.leaf("gw-tls", 3, x509.ExtKeyUsageClientAuth, nil)
	return c.file, srvCert, srvKey, cliCert, cliKey
}

// TestTLSClientCertAndPassword: mosquitto with a TLS listener that
// requires a client certificate and a password: the uplink configured with
// the CA file, its certificate and key and the password connects and
// delivers every log entry; without the client certificate it is refused,
// retries with backoff and logs each kind of failure once (not once per
// attempt), never the password.
func TestTLSClientCertAndPassword(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	if mqtttest.MosquittoPath(t) == "" {
		t.Skip("needs mosquitto (a TLS listener with client certificates)")
	}
	dir := t.TempDir()
	ca, srvCert, srvKey, cliCert, cliKey := writePKI(t, dir)
	tlsPort := proctest.FreePort(t)
	b := mqtttest.Start(t, mqtttest.Options{Users: map[string]string{"gw-tls": "tls-secret-pw"},
		Extra: fmt.Sprintf("listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate true\n", tlsPort, ca, srvCert, srvKey)})
	col := mqtttest.Collect(t, b) // on the plain listener, with the password
	tlsURL := fmt.Sprintf("ssl://127.0.0.1:%d", tlsPort)

	t.Run("client certificate and password", func(t *testing.T) {
		st := openStore(t, "")
		cfg := fastConfig(b, "gw-tls")
		cfg.Broker, cfg.CAFile, cfg.ClientCert, cfg.ClientKey = tlsURL, ca, cliCert, cliKey
		cfg.Username, cfg.Password = "gw-tls", "tls-secret-pw"
		u, err := New(cfg, Deps{Outbox: st}, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		stop := runUplink(t, u)
		proctest.WaitFor(t, "connected over TLS", 10*time.Second, u.connected.Load)
		for i := range 100 {
			u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
		}
		proctest.WaitFor(t, "every log entry", 10*time.Second, func() bool { return col.Distinct("log/p1") >= 100 })
		proctest.WaitFor(t, "an empty outbox", 10*time.Second, func() bool { return outboxDepth(t, st) == 0 })
		stop()
		distinct, dups, gaps := col.Check("log/p1", true)
		t.Logf("over TLS with a client certificate: %d seqs, %d duplicates, gaps %v", distinct, dups, gaps)
		if distinct != 100 || len(gaps) > 0 {
			t.Errorf("%d of 100 delivered, gaps %v", distinct, gaps)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		cfg := Config{Broker: tlsURL, GatewayID: "gw-nocert", CAFile: ca, Username: "gw-tls", Password: "tls-secret-pw",
			BackoffMin: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond, ConnectTimeout: time.Second}
		h := newCountingHandler()
		u, err := New(cfg, Deps{Outbox: openStore(t, "")}, slog.New(h))
		if err != nil {
			t.Fatal(err)
		}
		// Four attempts: the backoff (100 to 400 ms, jitter d/2..d) waits
		// at least 50, 100 and 200 ms between them.
		start := time.Now()
		stop := runUplink(t, u)
		proctest.WaitFor(t, "four connection attempts", 30*time.Second, func() bool { return u.Status().Attempts >= 4 })
		el := time.Since(start)
		stop()
		st := u.Status()
		t.Logf("%d attempts in %s, %d connects, warnings %q", st.Attempts, el.Round(time.Millisecond), st.Connects, h.lines)
		if st.Connects != 0 || el < 340*time.Millisecond {
			t.Errorf("%d connects, 4 attempts in %s: want none, retried with backoff (at least 350 ms)", st.Connects, el.Round(time.Millisecond))
		}
		// mosquitto refuses the handshake in one of two ways (the alert, or
		// a reset while plantd writes): each kind is logged once.
		if n := h.warns.Load(); n < 1 || n > 2 {
			t.Errorf("%d warnings for one state, want one per kind of error: %q", n, h.lines)
		}
		if strings.Contains(strings.Join(h.lines, " "), "tls-secret-pw") {
			t.Errorf("password logged: %q", h.lines)
		}
	})
}
