package httpapi

import (
	"context"
	"errors"

	"plantd/plant"
)

// Sentinel errors a History returns (wrapped) so that the API can answer
// with the right status; test with errors.Is.
var (
	// ErrNotFound: the plant, device or set is unknown to the history (404).
	ErrNotFound = errors.New("not found")
	// ErrBadQuery: the query cannot be answered as asked (400).
	ErrBadQuery = errors.New("bad query")
)

// History is the stored side of the API: measurement sets by period, logs
// and schedules. cmd/plantd adapts the store to it.
type History interface {
	// QuerySet returns the rows of one measurement set for one period.
	// ErrNotFound for a device's set means nothing stored: the API
	// answers an empty set for a set it lists.
	QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error)
	// DeviceSets lists the set types the history holds for a device;
	// ErrNotFound means nothing stored of it (the API lists no sets).
	DeviceSets(ctx context.Context, deviceID string) ([]plant.SetType, error)
	// Logs returns log entries newest first and the cursor of the next
	// page ("" on the last page).
	Logs(ctx context.Context, q plant.LogQuery) ([]plant.LogEntry, string, error)
	// Schedules lists a plant's stored grid-control schedules (as stored:
	// their statuses as last written) without internal fallback schedules.
	Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error)
	// Health reports whether the storage works.
	Health() error
}

// Live is the live state the API reads; *plant.Live implements it.
type Live interface {
	Plants() []plant.Plant
	Plant(id string) (plant.Plant, bool)
	Device(id string) (plant.DeviceLive, bool)
	// DeviceStatuses lists a plant's devices without their readings: the
	// API's device lists need identity, health and communication only.
	DeviceStatuses(plantID string) ([]plant.DeviceLive, error)
	EnergyBalance(plantID string) (plant.Balance, error)
	EnergyMix(plantID string) (plant.EnergyMix, error)
	// Changes grows with every update of the live state; the API keeps
	// encoded live answers while it stays the same.
	Changes() uint64
}

var _ Live = (*plant.Live)(nil)
