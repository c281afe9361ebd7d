package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeEEBus answers EEBusState with a fixed state.
type fakeEEBus EEBusState

func (f fakeEEBus) EEBusState() EEBusState { return EEBusState(f) }

// fakeInputs answers InputStates with a fixed list.
type fakeInputs []InputState

func (f fakeInputs) InputStates() []InputState { return f }

// TestInputsRoute calls GET /gateway/v1/inputs with the grid operator's
// inputs of a gateway (a ripple-control receiver holding 30 %, a lost
// control box dimming) and without any, with its filters and errors, and
// validates every answer against /openapi.json.
func TestInputsRoute(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	v := newValidator(t, e)
	at := time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)
	thirty := 30.0
	rcr := InputState{ID: "rcr", Name: "Ripple-control receiver", PlantID: "demo",
		Contacts: []InputContact{{Name: "K1", Input: 0}, {Name: "K2", Input: 1}, {Name: "K3", Input: 2, Closed: true}, {Name: "K4", Input: 3}},
		ReadAt:   at, Closed: []string{"K3"}, Since: at.Add(-time.Minute),
		Action:   &InputAction{Contacts: []string{"K3"}, Command: "opModMaxLimW", Value: 30, Unit: "%"},
		Actions:  []InputAction{{Contacts: []string{"K1"}, Command: "opModMaxLimW", Value: 100, Unit: "%"}, {Contacts: []string{"K3"}, Command: "opModMaxLimW", Value: 30, Unit: "%"}},
		Failsafe: &InputAction{Command: "opModMaxLimW", Value: 0, Unit: "%"},
		Window: &InputWindow{ScheduleID: "s1", Command: "opModMaxLimW", Status: "active", Value: &thirty, Unit: "%",
			Start: at.Add(-time.Minute), End: at.Add(23 * time.Hour)}}
	box := InputState{ID: "box", PlantID: "demo", Contacts: []InputContact{{Name: "S1", Input: 0, Dimming: true}},
		LostSince: at.Add(-2 * time.Minute), ReadErr: "i/o timeout", Dimming: []string{"S1"}, Dimmed: true, DimmedSince: at, Consumers: true}

	get := func(path, token string, want int) []byte {
		t.Helper()
		return v.get(e, path, token, want)
	}
	type answer struct {
		Inputs []struct {
			InputID, PlantID, Status, SinceUtc, LastReadUtc, LostSinceUtc, LastError string
			Closed, DimmingContacts                                                  []string
			Contacts                                                                 []InputContact
			Action                                                                   *InputAction
			Active                                                                   bool
			Window                                                                   *struct{ ScheduleID, Status, StartUtc, EndUtc string }
			Actions                                                                  []InputAction
		}
		Dimming []struct {
			PlantID, SinceUtc string
			Dimmed, Consumers bool
			Inputs            []string
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

	// Without inputs: empty lists, for every role.
	if a := decode(get("/gateway/v1/inputs", tokStandard, 200)); len(a.Inputs) != 0 || len(a.Dimming) != 0 {
		t.Errorf("without inputs: %+v, want empty lists", a)
	}

	e.srv.deps.Inputs = fakeInputs{rcr, box}
	a := decode(get("/gateway/v1/inputs", tokStandard, 200))
	if len(a.Inputs) != 2 {
		t.Fatalf("inputs %+v, want rcr and box", a.Inputs)
	}
	r := a.Inputs[0]
	if r.InputID != "rcr" || r.Status != "Ok" || !reflect.DeepEqual(r.Closed, []string{"K3"}) || r.Action == nil || r.Action.Value != 30 ||
		!r.Active || r.Window == nil || r.Window.ScheduleID != "s1" || r.SinceUtc != "2025-06-21T09:59:00Z" || r.LastReadUtc != "2025-06-21T10:00:00Z" ||
		len(r.Contacts) != 4 || !r.Contacts[2].Closed || len(r.Actions) != 2 || r.Window.EndUtc != "2025-06-22T09:00:00Z" {
		t.Errorf("rcr: %+v", r)
	}
	b := a.Inputs[1]
	if b.Status != "Lost" || b.LostSinceUtc != "2025-06-21T09:58:00Z" || b.LastError != "i/o timeout" || b.Action != nil || b.Active ||
		b.Closed == nil || !reflect.DeepEqual(b.DimmingContacts, []string{"S1"}) {
		t.Errorf("box: %+v", b)
	}
	if len(a.Dimming) != 1 || a.Dimming[0].PlantID != "demo" || !a.Dimming[0].Dimmed || !a.Dimming[0].Consumers ||
		a.Dimming[0].SinceUtc != "2025-06-21T10:00:00Z" || !reflect.DeepEqual(a.Dimming[0].Inputs, []string{"box"}) {
		t.Errorf("dimming: %+v, want demo dimmed since 10:00 by box", a.Dimming)
	}
	// The filter, a migrated id, and the errors as problem-JSON.
	if a := decode(get("/gateway/v1/inputs?plantId=demo", tokInstaller, 200)); len(a.Inputs) != 2 {
		t.Errorf("plantId=demo: %d inputs, want 2", len(a.Inputs))
	}
	if a := decode(get("/gateway/v1/inputs?plantId=7190000", tokStandard, 200)); len(a.Inputs) != 2 {
		t.Errorf("migrated plantId: %d inputs, want 2", len(a.Inputs))
	}
	for _, c := range []struct {
		path, token, field string
		want               int
	}{
		{"/gateway/v1/inputs?plantId=nope", tokStandard, "plantId", 404},
		{"/gateway/v1/inputs?plant=demo", tokStandard, "plant", 400},
		{"/gateway/v1/inputs", "", "", 401},
		{"/gateway/v1/inputs", "wrong", "", 401},
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
	// The control box over EEBus: absent until configured, then its state
	// (in failsafe: 4.2 kW on the consumers, no production limit).
	if raw := get("/gateway/v1/inputs", tokStandard, 200); strings.Contains(string(raw), `"eebus"`) {
		t.Errorf("eebus member without EEBus: %s", raw)
	}
	w := 4200.0
	e.srv.deps.EEBus = fakeEEBus{PlantID: "demo", SKI: "ab", ControlBox: "cd", Connected: true, Failsafe: true, ConsumptionLimitW: &w, LastHeartbeat: &at}
	var eb struct {
		EEBus *struct {
			PlantID, SKI, ControlBox, LastHeartbeatUtc string
			Connected, Failsafe                        bool
			ConsumptionLimitW, ProductionLimitW        *float64
		}
	}
	if err := json.Unmarshal(get("/gateway/v1/inputs?plantId=demo", tokStandard, 200), &eb); err != nil || eb.EEBus == nil ||
		!eb.EEBus.Failsafe || eb.EEBus.ConsumptionLimitW == nil || *eb.EEBus.ConsumptionLimitW != 4200 || eb.EEBus.ProductionLimitW != nil ||
		eb.EEBus.LastHeartbeatUtc != "2025-06-21T10:00:00Z" || eb.EEBus.SKI != "ab" {
		t.Errorf("eebus: %+v, %v", eb.EEBus, err)
	}
	if resp := e.do("POST", "/gateway/v1/inputs", tokInstaller, "application/json", "{}"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /gateway/v1/inputs: %d, want 405", resp.StatusCode)
	}
}
