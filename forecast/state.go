package forecast

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"plantd/internal/atomicfile"
)

// StateFile is the name of the forecast's state beside the database: the
// day-ahead forecasts not yet judged and the days' accuracy, written
// (atomically) when one is recorded or judged: twice a day.
const StateFile = "forecast-state.json"

// stateDoc is the state file.
type stateDoc struct {
	Plants map[string]plantDoc `json:"plants"`
}

type plantDoc struct {
	DayAhead map[string]Recorded `json:"dayAhead,omitempty"`
	Days     []DayAccuracy       `json:"days,omitempty"`
}

// loadState reads the state file (none: an empty state).
func loadState(path string) (stateDoc, error) {
	var st stateDoc
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("forecast state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return stateDoc{}, fmt.Errorf("forecast state %s: %w", path, err)
	}
	return st, nil
}

// save writes the state file (logged when it fails: the forecast goes on).
func (s *Service) save() {
	if s.cfg.StateFile == "" {
		return
	}
	st := stateDoc{Plants: map[string]plantDoc{}}
	s.mu.Lock()
	for id, r := range s.byID {
		st.Plants[id] = plantDoc{DayAhead: r.dayAhead, Days: r.days}
	}
	b, err := json.Marshal(st)
	s.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(s.cfg.StateFile, b)
	}
	if err != nil {
		s.log.Warn("forecast state not written: the accuracy record may be lost at a restart", "file", s.cfg.StateFile, "err", err)
	}
}
