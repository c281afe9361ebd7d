package eebus

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/enbility/ship-go/cert"
)

// CertFile is the name of plantd's EEBus certificate and key (PEM) in the
// state directory.
const CertFile = "eebus.pem"

// LoadOrCreateCert returns the certificate kept in dir (CertFile), making
// it at the first start: SHIP's self-signed ECDSA P-256 certificate
// with a subject key identifier, the SKI the control box is given. The
// file holds the private key and is written 0600, atomically.
func LoadOrCreateCert(dir, serial string) (tls.Certificate, error) {
	path := filepath.Join(dir, CertFile)
	data, err := os.ReadFile(path)
	if err == nil {
		c, err := tls.X509KeyPair(data, data)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("eebus certificate %s: %w", path, err)
		}
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("eebus certificate: %w", err)
	}
	c, err := cert.CreateCertificate("plantd", "plantd", "DE", serial)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("eebus certificate: make: %w", err)
	}
	key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("eebus certificate: key of type %T", c.PrivateKey)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("eebus certificate: key: %w", err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})...)
	if err := writeAtomic(path, out); err != nil {
		return tls.Certificate{}, fmt.Errorf("eebus certificate: %w", err)
	}
	return tls.X509KeyPair(out, out)
}

// SKI is the subject key identifier of c's leaf as SHIP writes it (40
// lower-case hex digits).
func SKI(c tls.Certificate) (string, error) {
	if len(c.Certificate) == 0 {
		return "", errors.New("eebus: no certificate")
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return "", fmt.Errorf("eebus: certificate: %w", err)
	}
	return cert.SkiFromCertificate(leaf)
}

// writeAtomic writes data to path 0600 through a temporary file in the
// same directory, synced and renamed over it: a crash leaves the old file
// or the new, never half of one.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename: nothing
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
