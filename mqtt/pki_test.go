package mqtt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a self-signed certificate authority for the TLS tests, its
// certificate written to file.
type testCA struct {
	t    testing.TB
	dir  string
	file string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newTestCA makes a CA named name and writes its certificate to
// dir/name-ca.pem.
func newTestCA(t testing.TB, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{t: t, dir: dir, cert: cert, key: key}
	ca.file = ca.write(name+"-ca.pem", "CERTIFICATE", der, 0o644)
	return ca
}

// leaf writes a certificate for name (with the IP addresses ips) signed by
// the CA, and its key, to dir/name.pem and dir/name.key.
func (ca *testCA) leaf(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string) {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der, 0o644), ca.write(name+".key", "EC PRIVATE KEY", kb, 0o600)
}

func (ca *testCA) write(file, typ string, b []byte, mode os.FileMode) string {
	ca.t.Helper()
	p := filepath.Join(ca.dir, file)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), mode); err != nil {
		ca.t.Fatal(err)
	}
	return p
}
