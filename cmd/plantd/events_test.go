package main

import (
	"errors"
	"testing"

	"plantd/plant"
	"plantd/store"
)

// TestEventLevelsAreStoreLevels: every level a device event names is one
// the store takes (it refuses others), so that no transition is lost
// between plant.Live.Apply and the log.
func TestEventLevelsAreStoreLevels(t *testing.T) {
	ok := map[string]bool{store.LevelInfo: true, store.LevelWarning: true, store.LevelError: true}
	var es []plant.Event
	for _, s := range []plant.CommState{plant.StateOnline, plant.StateStale, plant.StateOffline} {
		es = append(es, plant.Event{DeviceID: "inv1", Prev: plant.StateUnknown, State: s, Err: errors.New("x")})
	}
	for _, h := range []plant.Health{plant.HealthOk, plant.HealthWarning, plant.HealthError, plant.HealthOff, plant.HealthNotAvailable} {
		es = append(es, plant.Event{DeviceID: "inv1", Prev: plant.StateOnline, State: plant.StateOnline, Health: h})
	}
	for _, e := range es {
		if !ok[e.Level()] {
			t.Errorf("%s: level %q is not a store level", e.Code(), e.Level())
		}
	}
}
