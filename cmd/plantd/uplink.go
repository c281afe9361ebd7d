package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	"plantd/config"
	"plantd/httpapi"
	"plantd/mqtt"
	"plantd/plant"
	"plantd/store"
)

// uplinkConfig maps the config's mqtt section onto the uplink's config.
func uplinkConfig(cfg *config.Config) mqtt.Config {
	m := cfg.MQTT
	return mqtt.Config{
		Brokers: m.BrokerURLs(), Username: m.Username, Password: m.Password,
		CAFile: m.CAFile, ClientCert: m.ClientCert, ClientKey: m.ClientKey,
		GatewayID: cfg.Gateway.ID, Version: versionString(), TopicPrefix: m.TopicPrefix, KeepAlive: m.KeepAlive,
		MaxRows: m.Outbox.MaxRows, MaxAge: m.Outbox.MaxAge, LiveInterval: m.LiveInterval,
		BacklogMessagesPerSecond: m.Backlog.MessagesPerSecond, BacklogBytesPerSecond: m.Backlog.BytesPerSecond,
		RemoteControl: m.RemoteControl,
	}
}

// storeRollups gives the uplink the plants' completed 5-minute
// energy-balance rows from the store.
type storeRollups struct {
	st   *store.Store
	locs map[string]*time.Location // by plant id
}

var _ mqtt.RollupSource = storeRollups{}

func (r storeRollups) RolledUpTo() time.Time { return r.st.Stats().RolledUpTo }

// Rollups reads the plant-local days that [from, to) touches and keeps
// the rows starting inside it.
func (r storeRollups) Rollups(ctx context.Context, plantID string, from, to time.Time) ([]plant.SetRow, error) {
	var out []plant.SetRow
	loc := r.locs[plantID]
	if loc == nil {
		loc = time.UTC
	}
	lf := from.In(loc)
	for day := time.Date(lf.Year(), lf.Month(), lf.Day(), 0, 0, 0, 0, loc); day.Before(to); day = day.AddDate(0, 0, 1) {
		res, err := r.st.QuerySet(ctx, plant.SetQuery{PlantID: plantID, SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day})
		if err != nil {
			return nil, err
		}
		for _, row := range res.Rows {
			if !row.Start.Before(from) && row.Start.Before(to) {
				out = append(out, row)
			}
		}
	}
	return out, nil
}

// uplinkHealth shows the uplink at /healthz and in the plant
// configuration's connectedService.
type uplinkHealth struct{ *mqtt.Uplink }

var _ httpapi.UplinkHealth = uplinkHealth{}

func (u uplinkHealth) UplinkHealth() httpapi.UplinkState {
	st := u.Status()
	out := make([]httpapi.UplinkStream, 0, len(st.Streams))
	for _, s := range st.Streams {
		us := httpapi.UplinkStream{Stream: s.Stream, Depth: s.Depth, Dropped: s.Dropped}
		if s.Depth > 0 && !s.Oldest.IsZero() {
			age := time.Since(s.Oldest).Seconds()
			us.OldestUnsentAgeSeconds = &age
		}
		out = append(out, us)
	}
	return httpapi.UplinkState{Broker: st.Broker, LastError: st.LastError, Streams: out}
}

// lateHandler is a handler set after it is handed out: the uplink is made
// before the HTTP API (whose health shows the uplink) and answers remote
// commands through it.
type lateHandler struct{ h http.Handler }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l.h == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	l.h.ServeHTTP(w, r)
}

// apiPlanItems gives the uplink the tariffs' prices and the day-ahead
// plan of the tariffs' plant as the HTTP API answers GET
// /gateway/v1/tariffs and /gateway/v1/plan, asked in process through h
// (the API as the standard role, set once the API is built): one
// definition of those documents. The tariffs' key leaves out what moves
// with the clock alone: fromUtc (the moment of the request) and the
// start of the first slot (the slots run from that moment).
type apiPlanItems struct {
	plant string
	h     *lateHandler
}

var _ mqtt.PlanSource = apiPlanItems{}

func (a apiPlanItems) TariffsItem(plantID string) (json.RawMessage, []byte, bool) {
	body, ok := a.get(plantID, "/gateway/v1/tariffs")
	if !ok {
		return nil, nil, false
	}
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return nil, nil, false
	}
	delete(doc, "fromUtc")
	if slots, _ := doc["slots"].([]any); len(slots) > 0 {
		if first, ok := slots[0].(map[string]any); ok {
			delete(first, "startUtc")
		}
	}
	key, err := json.Marshal(doc)
	return body, key, err == nil
}

func (a apiPlanItems) PlanItem(plantID string) (json.RawMessage, []byte, bool) {
	body, ok := a.get(plantID, "/gateway/v1/plan")
	return body, body, ok
}

// get asks the API for path; false for another plant, an answer not 200,
// or one with configured false.
func (a apiPlanItems) get(plantID, path string) (json.RawMessage, bool) {
	if plantID != a.plant {
		return nil, false
	}
	req, err := http.NewRequest(http.MethodGet, path, http.NoBody)
	if err != nil {
		return nil, false
	}
	req.RemoteAddr = "uplink"
	rec := httptest.NewRecorder() // the standard library's recorder: a buffer and a status
	a.h.ServeHTTP(rec, req)
	var doc struct{ Configured bool }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil || !doc.Configured {
		return nil, false
	}
	return rec.Body.Bytes(), true
}
