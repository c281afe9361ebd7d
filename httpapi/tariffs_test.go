package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"plantd/tariffs"
	"plantd/tariffs/tariffconfig"
)

// failingMarket is a tariffs service whose market fetcher has failed:
// its Status is that of a provider down.
type failingMarket struct {
	*tariffs.Service
	status tariffs.Status
}

func (f failingMarket) Status() tariffs.Status { return f.status }

// TestTariffsRoute calls GET /gateway/v1/tariffs without tariffs, with a
// time-of-use table (a real tariffs.Service) over its horizon and over
// hours=2, with a market marked stale, and with bad queries and no
// token, validating every answer against /openapi.json.
func TestTariffsRoute(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	v := newValidator(t, e)
	get := func(path, token string, want int) []byte {
		t.Helper()
		return v.get(e, path, token, want)
	}
	type answer struct {
		Configured     bool
		PlantID        string
		Timezone       string
		Stale          bool
		FromUtc, ToUtc string
		Tariff         *tariffconfig.Config
		Market         *struct {
			Source, LastError, NextAttemptUtc string
			Stale                             bool
			Requests, Failures                int
		}
		Slots []struct {
			StartUtc, EndUtc                 string
			ImportEurPerKWh, FeedInEurPerKWh float64
			Source                           string
			Stale                            bool
		}
	}
	decode := func(b []byte) answer {
		t.Helper()
		var a answer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return a
	}

	if a := decode(get("/gateway/v1/tariffs", tokStandard, 200)); a.Configured || a.Slots == nil || len(a.Slots) != 0 || a.Tariff != nil {
		t.Errorf("without tariffs: %+v, want configured false and no slots", a)
	}

	berlin := e.loc
	fixed := 0.08
	svc, err := tariffs.New(tariffconfig.Config{Plant: "demo", Import: tariffconfig.Import{Fixed: []string{"0.30", "Mon-Fri 17:00-20:00 0.42"}},
		FeedIn: tariffconfig.FeedIn{Fixed: &fixed}}, tariffs.Deps{Location: berlin, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.deps.Tariffs = svc
	e.clock.Set(time.Date(2025, 6, 20, 16, 30, 0, 0, berlin)) // a Friday
	a := decode(get("/gateway/v1/tariffs", tokStandard, 200))
	if !a.Configured || a.PlantID != "demo" || a.Timezone != "Europe/Berlin" || a.Stale || a.Market != nil ||
		a.FromUtc != "2025-06-20T14:30:00Z" || a.ToUtc != "2025-06-21T22:00:00Z" || a.Tariff == nil || len(a.Tariff.Import.Fixed) != 2 {
		t.Errorf("time-of-use: %+v", a)
	}
	// 16:30..17:00, then the hours to Saturday's end: 1 + 31 slots.
	if len(a.Slots) != 32 || a.Slots[0].EndUtc != "2025-06-20T15:00:00Z" || a.Slots[0].ImportEurPerKWh != 0.30 ||
		a.Slots[1].ImportEurPerKWh != 0.42 || a.Slots[3].ImportEurPerKWh != 0.42 || a.Slots[4].ImportEurPerKWh != 0.30 ||
		a.Slots[31].EndUtc != "2025-06-21T22:00:00Z" || a.Slots[31].FeedInEurPerKWh != 0.08 || a.Slots[31].Source != "fixed" {
		t.Errorf("slots: %d %+v", len(a.Slots), a.Slots)
	}
	if a := decode(get("/gateway/v1/tariffs?hours=2", tokInstaller, 200)); len(a.Slots) != 3 || a.ToUtc != "2025-06-20T16:30:00Z" {
		t.Errorf("hours=2: %+v", a)
	}

	// A market whose provider fails: its state and the stale flag.
	e.srv.deps.Tariffs = failingMarket{svc, tariffs.Status{Source: "entsoe:10Y1001A1001A82H", Stale: true, LastError: "tariffs: entsoe:10Y1001A1001A82H: HTTP 503",
		LastAttempt: e.clock.Now(), NextAttempt: e.clock.Now().Add(time.Hour), Requests: 3, Failures: 1}}
	if a := decode(get("/gateway/v1/tariffs", tokStandard, 200)); !a.Stale || a.Market == nil || !a.Market.Stale || a.Market.Failures != 1 ||
		a.Market.NextAttemptUtc != "2025-06-20T15:30:00Z" || a.Market.LastError == "" {
		t.Errorf("stale market: %+v", a.Market)
	}

	for _, c := range []struct {
		path, token, field string
		want               int
	}{
		{"/gateway/v1/tariffs?hours=0", tokStandard, "hours", 400},
		{"/gateway/v1/tariffs?hours=49", tokStandard, "hours", 400},
		{"/gateway/v1/tariffs?hours=2h", tokStandard, "hours", 400},
		{"/gateway/v1/tariffs?plantId=demo", tokStandard, "plantId", 400},
		{"/gateway/v1/tariffs", "", "", 401},
		{"/gateway/v1/tariffs", "wrong", "", 401},
	} {
		body := get(c.path, c.token, c.want)
		var p struct {
			Status int
			Errors []struct{ Field string }
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Status != c.want {
			t.Errorf("GET %s: %s, want a problem with status %d", c.path, body, c.want)
		}
		if c.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != c.field) {
			t.Errorf("GET %s: %s, want the problem to name %s", c.path, body, c.field)
		}
	}
}
