package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"plantd/config"
)

// The running plants' file: a plantd started by "plantd run" writes its
// plants' ids, names and time zones next to its database at each start
// (one small file, written once), so that "plantd check-config --running"
// (the unit's ExecReload) can refuse a reload that changes what only a
// restart applies, and "systemctl reload" fails with the reason instead of
// reporting success while the daemon refuses the reload (notify.go).

// runningPlantsPath is the file next to the config's database.
func runningPlantsPath(cfg *config.Config) string { return cfg.Database.Path + ".plants.json" }

// runningPlant is a plant as the running daemon started with it.
type runningPlant struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
}

// writeRunningPlants writes cfg's plants to the running plants' file
// (atomically: a temporary file renamed over it).
func writeRunningPlants(cfg *config.Config) error {
	ps := make([]runningPlant, len(cfg.Plants))
	for i, p := range cfg.Plants {
		ps[i] = runningPlant{p.ID, p.Name, p.Timezone}
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return err
	}
	path := runningPlantsPath(cfg)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("running plants: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("running plants: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("running plants: %w", err)
	}
	return nil
}

// checkRunning reports (to w) each key of cfg a reload would refuse
// because the running daemon (its running plants' file) has another value;
// ok when there is none, or no such file (no daemon started on this
// database).
func checkRunning(cfg *config.Config, file string, w io.Writer) (ok bool, err error) {
	b, err := os.ReadFile(runningPlantsPath(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("the running plantd's plants: %w", err)
	}
	var ps []runningPlant
	if err := json.Unmarshal(b, &ps); err != nil {
		return false, fmt.Errorf("the running plantd's plants (%s): %w", runningPlantsPath(cfg), err)
	}
	running := &config.Config{}
	for _, p := range ps {
		running.Plants = append(running.Plants, config.Plant{ID: p.ID, Name: p.Name, Timezone: p.Timezone})
	}
	keys := restartOnly(running, cfg)
	for _, k := range keys {
		fmt.Fprintf(w, "%s: %s: differs from the running plantd's; a plant's name and time zone take effect at a restart only (systemctl restart plantd), a reload is refused\n", file, k)
	}
	return len(keys) == 0, nil
}
