package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"
)

// imageHashes are the SHA-256 of each default device's register image as
// built (static points) at a fixed start: a change of the model tables
// that is meant to keep the images must keep these.
var imageHashes = map[string]string{
	"inv1":  "7b3490aca86c403e719289d478f4721d1f72844941e4149e935cfb824eaf4797",
	"inv2":  "1221fa5688087fa2430e3d5c6fb69eb88f1f3af0490dbf7c70f0f47c7d40bb34",
	"meter": "7bcbc2fddd2d5d514130ca6711c8867d35a2657eefc9bf859eedd3961653a115",
	"bat":   "b21be365a904d60d02f5522290aefd80c989f8a518666a57c89e071902e1fb36",
	"wx":    "0aa1e2c9367a334bb5e710c703a6f070053d6ae7ae952a1e8ea080785669905e",
}

// TestImageFingerprint builds the default plant at a fixed time and
// compares every device's register image with imageHashes.
func TestImageFingerprint(t *testing.T) {
	cfg := DefaultConfig()
	at := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return at }
	cfg.Start = at
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Devices() {
		h := sha256.New()
		_ = binary.Write(h, binary.BigEndian, d.regs)
		got := hex.EncodeToString(h.Sum(nil))
		if want := imageHashes[d.ID()]; got != want {
			t.Errorf("%s: image %s, want %s", d.ID(), got, want)
		}
	}
}
