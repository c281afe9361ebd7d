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
// the two packages do not know each other, so the field-for-field copy and
// the error mapping live here, where they are wired.
type storeHistory struct{ st *store.Store }

var _ httpapi.History = storeHistory{}

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

func (h storeHistory) QuerySet(ctx context.Context, q httpapi.SetQuery) (plant.SetResult, error) {
	if q.Period == "" {
		q.Period = string(store.PeriodRecent)
	}
	period, err := store.ParsePeriod(q.Period)
	if err != nil {
		return plant.SetResult{}, fmt.Errorf("%w: %v", httpapi.ErrBadQuery, err)
	}
	sq := store.SetQuery{
		PlantID: q.PlantID, DeviceID: q.DeviceID, SetType: plant.SetType(q.SetType), Period: period,
		Date: q.Date, WithTotal: q.WithTotal, ReturnEnergyValues: q.ReturnEnergyValues,
	}
	if sq.SetType == plant.SetEnergyMix {
		// A device's energy mix is its plant's (the API lists it for every
		// device that takes part in the balance).
		sq.DeviceID = ""
	}
	res, err := h.st.QuerySet(ctx, sq)
	return res, apiError(err)
}

func (h storeHistory) DeviceSets(ctx context.Context, deviceID string) ([]string, error) {
	sets, err := h.st.DeviceSets(ctx, deviceID)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = string(s)
	}
	return out, nil
}

func (h storeHistory) Logs(ctx context.Context, q httpapi.LogQuery) ([]httpapi.LogEntry, string, error) {
	es, next, err := h.st.Logs(ctx, store.LogQuery{PlantID: q.PlantID, DeviceID: q.DeviceID, From: q.From, To: q.To, Cursor: q.Cursor, Limit: q.Limit})
	if err != nil {
		return nil, "", apiError(err)
	}
	out := make([]httpapi.LogEntry, len(es))
	for i, e := range es {
		out[i] = httpapi.LogEntry{Time: e.Time, Level: e.Level, Code: e.Code, Message: e.Message, PlantID: e.PlantID, DeviceID: e.DeviceID}
	}
	return out, next, nil
}

func (h storeHistory) Schedules(ctx context.Context, plantID string) ([]httpapi.Schedule, error) {
	ss, err := h.st.Schedules(ctx, plantID)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]httpapi.Schedule, len(ss))
	for i, s := range ss {
		out[i] = httpapi.Schedule{ID: s.ID, PlantID: s.PlantID, CreatedAt: s.CreatedAt, Body: s.Body}
	}
	return out, nil
}

func (h storeHistory) Health() error { return h.st.Health() }
