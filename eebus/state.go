package eebus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"plantd/internal/atomicfile"
)

// StateFile is the name of the failsafe values the control box wrote,
// kept in the state directory (JSON, written atomically).
const StateFile = "eebus-state.json"

// Failsafe are the failsafe values in force: the config's until the
// control box writes its own, then the box's, kept across restarts.
type Failsafe struct {
	// ConsumptionW is the controllable consumers' limit in failsafe.
	ConsumptionW float64 `json:"consumptionW"`
	// ProductionW is the production limit in failsafe (nil: none).
	ProductionW *float64 `json:"productionW,omitempty"`
	// Duration is the failsafe duration minimum.
	Duration time.Duration `json:"durationNs"`
}

// stored is the state file.
type stored struct {
	// Failsafe values the control box wrote, each nil until it did.
	ConsumptionW *float64       `json:"consumptionW,omitempty"`
	ProductionW  *float64       `json:"productionW,omitempty"`
	Duration     *time.Duration `json:"durationNs,omitempty"`
	// LostSince is when a lost heartbeat put plantd in failsafe, while it
	// holds: a restart within the failsafe duration resumes it (held
	// until the duration is over and the heartbeat is back, as without
	// the restart). Wall clock, Unix ms.
	LostSince *int64 `json:"failsafeSinceMs,omitempty"`
}

func loadState(dir string) (stored, error) {
	var s stored
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("eebus state: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return stored{}, fmt.Errorf("eebus state %s: %w", StateFile, err)
	}
	return s, nil
}

func saveState(dir string, s stored) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, StateFile), data); err != nil {
		return fmt.Errorf("eebus state: %w", err)
	}
	return nil
}

// apply returns the defaults with the stored values over them.
func (s stored) apply(def Failsafe) Failsafe {
	if s.ConsumptionW != nil {
		def.ConsumptionW = *s.ConsumptionW
	}
	if s.ProductionW != nil {
		v := *s.ProductionW
		def.ProductionW = &v
	}
	if s.Duration != nil {
		def.Duration = *s.Duration
	}
	return def
}
