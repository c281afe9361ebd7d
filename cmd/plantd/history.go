package main

import (
	"context"
	"errors"
	"fmt"

	"plantd/httpapi"
	"plantd/plant"
	"plantd/store"
)

// storeHistory adapts the store to the history interface of the HTTP API:
// the two packages do not know each other; both speak package plant's
// types (log entries, schedule records), so what is left here is the
// error mapping and the set query's translation.
type storeHistory struct{ st *store.Store }

var (
	_ httpapi.History      = storeHistory{}
	_ httpapi.StorageUsage = storeHistory{}
)

// StorageUsage gives /healthz the store's wear figures.
func (h storeHistory) StorageUsage() (bytesWritten uint64, ok bool, databaseBytes int64) {
	u := h.st.Usage()
	return u.BytesWritten, u.BytesWrittenOK, u.FileBytes + u.WALBytes
}

// apiError maps store errors onto the API's sentinels.
func apiError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrUnknownPlant), errors.Is(err, store.ErrUnknownDevice), errors.Is(err, store.ErrUnsupportedSet):
		return fmt.Errorf("%w: %v", httpapi.ErrNotFound, err)
	case errors.Is(err, store.ErrBadQuery):
		return fmt.Errorf("%w: %v", httpapi.ErrBadQuery, err)
	}
	return err
}

func (h storeHistory) QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error) {
	sq := q
	if sq.SetType == plant.SetEnergyMix {
		// A device's energy mix is its plant's (the API lists it for every
		// device that takes part in the balance).
		sq.DeviceID = ""
	}
	res, err := h.st.QuerySet(ctx, sq)
	return res, apiError(err)
}

func (h storeHistory) DeviceSets(ctx context.Context, deviceID string) ([]plant.SetType, error) {
	sets, err := h.st.DeviceSets(ctx, deviceID)
	if err != nil {
		return nil, apiError(err)
	}
	return sets, nil
}

func (h storeHistory) Logs(ctx context.Context, q plant.LogQuery) ([]plant.LogEntry, string, error) {
	es, next, err := h.st.Logs(ctx, q)
	return es, next, apiError(err)
}

func (h storeHistory) Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error) {
	ss, err := h.st.Schedules(ctx, plantID)
	return ss, apiError(err)
}

func (h storeHistory) Health() error { return h.st.Health() }
