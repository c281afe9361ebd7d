package store

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/plant/kind"
)

// fillDB writes a few MB of samples into a new database and closes it.
func fillDB(t *testing.T, path string) {
	t.Helper()
	s := openTest(t, Config{Path: path})
	stop := runStore(t, s)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20000 {
		var rs []plant.Reading
		for c := plant.ActivePower; c <= plant.DisplacementPowerFactor; c++ {
			rs = append(rs, plant.Reading{Channel: c, Value: float64(i%1000) + float64(c)/7})
		}
		record(t, s, Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: t0.Add(time.Duration(i) * 5 * time.Second), Readings: rs})
	}
	stop()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptionInTheMiddle: 8 KB of garbage in the middle of the database
// file. Open must notice (quick_check), report ErrCorrupt through Health,
// stop writing, keep the file and say in the log how to recover.
func TestCorruptionInTheMiddle(t *testing.T) {
	t.Parallel() // its own database files
	path := filepath.Join(t.TempDir(), "plantd.db")
	fillDB(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Size() < 1<<20 {
		t.Fatalf("database only %d bytes", fi.Size())
	}
	garbage := make([]byte, 8192)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	if _, err := f.WriteAt(garbage, fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var logs proctest.Buffer
	s, err := Open(t.Context(), Config{Path: path, Plants: []PlantInfo{{ID: "p1"}}}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		// Refusing to start is also acceptable only if it says so; the
		// issue asks for a running daemon that reports it.
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if err := s.Health(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("health %v, want ErrCorrupt", err)
	}
	if s.Record(Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: time.Now(),
		Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}) {
		t.Error("Record accepted a measurement into a corrupt database")
	}
	if fi2, err := os.Stat(path); err != nil || fi2.Size() != fi.Size() {
		t.Errorf("the corrupt file was not kept as it was: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "plantd backup") || !strings.Contains(l, "corrupt") {
		t.Errorf("the log does not say how to recover:\n%s", l)
	}
}
