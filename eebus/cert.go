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

	"plantd/internal/atomicfile"
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
	if err := atomicfile.Write(path, out); err != nil {
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
