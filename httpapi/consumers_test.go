package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// fakeConsumers is a Consumers standing in for the home energy manager
// (package consumer's Manager): a fixed list whose modes SetMode changes,
// recording who asked.
type fakeConsumers struct {
	mu   sync.Mutex
	list []plant.ConsumerStatus
	by   []string // "id mode by" of each SetMode
	// vanish: SetMode answers unknown device for this id although the
	// list has it (removed by a reload between the two calls).
	vanish string
	// fail: SetMode fails with this error.
	fail error
}

func (f *fakeConsumers) Consumers() []plant.ConsumerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

func (f *fakeConsumers) SetMode(_ context.Context, id string, m plant.ConsumerMode, by string) (plant.ConsumerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return plant.ConsumerStatus{}, f.fail
	}
	for i := range f.list {
		if f.list[i].DeviceID == id && id != f.vanish {
			f.by = append(f.by, fmt.Sprintf("%s %s %s", id, m, by))
			f.list[i].Mode = m
			f.list[i].Reason = "Manual"
			if m == plant.ModeAuto {
				f.list[i].Reason = "Surplus"
			}
			return f.list[i], nil
		}
	}
	return plant.ConsumerStatus{}, fmt.Errorf("consumer %q: %w", id, plant.ErrUnknownDevice)
}

// SetPlan refuses every consumer of the list: none is a charger (the
// binary's tests set a real charger's plan).
func (f *fakeConsumers) SetPlan(_ context.Context, id string, p plant.ChargePlan, by string) (plant.ConsumerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.list {
		if f.list[i].DeviceID == id {
			f.by = append(f.by, fmt.Sprintf("%s plan %v by %s", id, p.EnergyWh, by))
			return plant.ConsumerStatus{}, fmt.Errorf("%s is no charger: %w", id, plant.ErrModeNotForConsumer)
		}
	}
	return plant.ConsumerStatus{}, fmt.Errorf("consumer %q: %w", id, plant.ErrUnknownDevice)
}

func (f *fakeConsumers) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.by)
}

// consumerEnv is the simulated demo plant plus a second plant, "cabin",
// and three consumer devices: a heat pump (SG-Ready, demo), a boiler
// relay (demo, metered) and a plug (cabin); their readings are applied to
// the live cache as the consumer manager's loops would.
func consumerEnv(t *testing.T, withManager bool) (*env, *fakeConsumers) {
	t.Helper()
	next := time.Date(2025, 6, 22, 11, 0, 0, 0, day.Location()) // a local time: the API writes it in UTC
	f := &fakeConsumers{list: []plant.ConsumerStatus{
		{DeviceID: "hp", PlantID: "demo", Name: "Heat pump", Driver: "sgready", Mode: plant.ModeAuto, Priority: 1, RatedPowerW: 2000,
			SwitchingState: plant.SwitchedOn, SGReady: 3, ConsumptionW: float(2000), Estimated: true, EnergyTodayWh: float(5400),
			Reason: "Surplus", NextMustRun: &next, SwitchesLastHour: 2, MaxSwitchesPerHour: 4, MinOnTimeS: 600, MinOffTimeS: 300},
		{DeviceID: "boiler", PlantID: "demo", Name: "Boiler", Driver: "relay", Mode: plant.ModeOff, Priority: 2, RatedPowerW: 3000,
			SwitchingState: plant.SwitchedOff, ConsumptionW: float(0), Reason: "Manual"},
		{DeviceID: "plug", PlantID: "cabin", Name: "Plug", Driver: "shelly", Mode: plant.ModeAuto, RatedPowerW: 500, Reason: "Starting"},
	}}
	o := envOpts{polls: 2,
		plants: []plant.Plant{{ID: "cabin", Name: "Cabin", Location: day.Location()}},
		more: []plant.DeviceInfo{{ID: "hp", PlantID: "demo", Name: "Heat pump", Kind: kind.Consumer},
			{ID: "boiler", PlantID: "demo", Name: "Boiler", Kind: kind.Consumer},
			{ID: "plug", PlantID: "cabin", Name: "Plug", Kind: kind.Consumer}},
		modify: func(c *Config) { c.Migrated.Devices["old-hp"] = "hp" },
	}
	if withManager {
		o.consumers = f
	}
	e := newEnv(t, o)
	at := e.clock.Now()
	for _, s := range []plant.Sample{
		{Device: "hp", Consumer: &plant.ConsumerReading{Switch: plant.SwitchedOn, SGReady: 3, PowerW: 2000, HasPower: true, Estimated: true}},
		{Device: "boiler", Consumer: &plant.ConsumerReading{Switch: plant.SwitchedOff, PowerW: 0, HasPower: true, EnergyWh: 123456, HasEnergy: true}},
		{Device: "plug", Consumer: &plant.ConsumerReading{Switch: plant.SwitchedOn}},
	} {
		s.Time, s.State = at, plant.StateOnline
		e.live.Apply(s)
	}
	return e, f
}

// send makes one request and returns its status and body; the validator,
// when given, checks the exchange against /openapi.json.
func (e *env) send(v *validator, method, path, token, ctype, body string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body == "" {
		req.Body = nil
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if v == nil || resp.StatusCode == http.StatusMethodNotAllowed {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if body != "" {
		req.Body = io.NopCloser(strings.NewReader(body))
	}
	return resp.StatusCode, v.check(req, resp)
}

// problemFields are the fields a problem document names.
func problemFields(t *testing.T, b []byte) []string {
	t.Helper()
	var p struct {
		Errors []FieldError `json:"errors"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("problem %s: %v", b, err)
	}
	var out []string
	for _, f := range p.Errors {
		out = append(out, f.Field)
	}
	return out
}

// TestConsumerRoutes: the consumer list and by-id for every role, the
// plantId filter, migrated ids, and PUT mode's roles, bodies and errors,
// each answer validated against /openapi.json.
func TestConsumerRoutes(t *testing.T) {
	e, f := consumerEnv(t, true)
	v := newValidator(t, e)
	const js = "application/json"
	ids := func(b []byte) string {
		var l struct{ Consumers []plant.ConsumerStatus }
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var out []string
		for _, c := range l.Consumers {
			out = append(out, c.DeviceID)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		name                             string
		method, path, token, ctype, body string
		want                             int
		check                            func(t *testing.T, b []byte)
	}{
		{name: "list standard", method: "GET", path: "/gateway/v1/consumers", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				if got := ids(b); got != "hp,boiler,plug" {
					t.Errorf("consumers %s, want hp,boiler,plug", got)
				}
			}},
		{name: "list, plantId empty", method: "GET", path: "/gateway/v1/consumers?plantId=", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				if got := ids(b); got != "hp,boiler,plug" {
					t.Errorf("consumers %s, want hp,boiler,plug", got)
				}
			}},
		{name: "list of a plant", method: "GET", path: "/gateway/v1/consumers?plantId=demo", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				if got := ids(b); got != "hp,boiler" {
					t.Errorf("consumers of demo %s, want hp,boiler", got)
				}
			}},
		{name: "list of another plant", method: "GET", path: "/gateway/v1/consumers?plantId=cabin", token: tokInstaller, want: 200,
			check: func(t *testing.T, b []byte) {
				if got := ids(b); got != "plug" {
					t.Errorf("consumers of cabin %s, want plug", got)
				}
			}},
		{name: "list of a migrated plant id", method: "GET", path: "/gateway/v1/consumers?plantId=7190000", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				if got := ids(b); got != "hp,boiler" {
					t.Errorf("consumers of 7190000 %s, want demo's hp,boiler", got)
				}
			}},
		{name: "list of an unknown plant", method: "GET", path: "/gateway/v1/consumers?plantId=nope", token: tokStandard, want: 404,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"plantId"}) {
					t.Errorf("fields %q, want plantId", got)
				}
			}},
		{name: "list without token", method: "GET", path: "/gateway/v1/consumers", want: 401},
		{name: "by id", method: "GET", path: "/gateway/v1/consumers/hp", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				want := map[string]any{"deviceId": "hp", "plantId": "demo", "driver": "sgready", "mode": "Auto", "switchingState": "On",
					"sgReadyState": 3.0, "consumption": 2000.0, "consumptionEstimated": true, "energyToday": 5400.0, "reason": "Surplus",
					"nextMustRun": "2025-06-22T09:00:00Z", "switchesLastHour": 2.0, "maxSwitchesPerHour": 4.0, "minOnTime": 600.0, "minOffTime": 300.0,
					"ratedPower": 2000.0, "priority": 1.0}
				for k, w := range want {
					if m[k] != w {
						t.Errorf("%s %v, want %v", k, m[k], w)
					}
				}
			}},
		{name: "by id, nothing unknown sent", method: "GET", path: "/gateway/v1/consumers/plug", token: tokStandard, want: 200,
			check: func(t *testing.T, b []byte) {
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				for _, k := range []string{"switchingState", "sgReadyState", "consumption", "energyToday", "nextMustRun"} {
					if _, ok := m[k]; ok {
						t.Errorf("%s sent for a consumer that has none: %s", k, b)
					}
				}
			}},
		{name: "by migrated id", method: "GET", path: "/gateway/v1/consumers/old-hp", token: tokStandard, want: 308},
		{name: "by unknown id", method: "GET", path: "/gateway/v1/consumers/nope", token: tokStandard, want: 404},
		{name: "a device that is no consumer", method: "GET", path: "/gateway/v1/consumers/inv1", token: tokStandard, want: 404},
		{name: "mode by standard", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokStandard, ctype: js, body: `{"mode":"On"}`, want: 403},
		{name: "mode without token", method: "PUT", path: "/gateway/v1/consumers/hp/mode", ctype: js, body: `{"mode":"On"}`, want: 401},
		{name: "mode On by installer", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"On"}`, want: 200,
			check: func(t *testing.T, b []byte) {
				var c plant.ConsumerStatus
				_ = json.Unmarshal(b, &c)
				if c.DeviceID != "hp" || c.Mode != plant.ModeOn || c.Reason != "Manual" {
					t.Errorf("answer %s, want hp in mode On, reason Manual", b)
				}
			}},
		{name: "mode by grid operator", method: "PUT", path: "/gateway/v1/consumers/boiler/mode", token: tokGridOperator, ctype: js, body: `{"mode":"Auto"}`, want: 200},
		{name: "mode of a migrated id", method: "PUT", path: "/gateway/v1/consumers/old-hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"On"}`, want: 308},
		{name: "bad mode", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"Boost"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"mode"}) {
					t.Errorf("fields %q, want mode", got)
				}
			}},
		{name: "no mode", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"mode"}) {
					t.Errorf("fields %q, want mode", got)
				}
			}},
		{name: "mode a number", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":1}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"mode"}) {
					t.Errorf("fields %q, want mode", got)
				}
			}},
		{name: "unknown field", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"On","until":"+1h"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"until"}) {
					t.Errorf("fields %q, want until", got)
				}
			}},
		{name: "duplicate key", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"On","mode":"Off"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"mode"}) || !strings.Contains(string(b), "duplicate key mode") {
					t.Errorf("%s: fields %q, want mode named as given twice", b, got)
				}
			}},
		{name: "malformed JSON", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":`, want: 400},
		{name: "trailing data", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js, body: `{"mode":"On"} {}`, want: 400},
		{name: "not JSON", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: "text/plain", body: `{"mode":"On"}`, want: 415},
		{name: "too large", method: "PUT", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, ctype: js,
			body: `{"mode":"On","pad":"` + strings.Repeat("x", maxBody) + `"}`, want: 413},
		{name: "mode of an unknown device", method: "PUT", path: "/gateway/v1/consumers/nope/mode", token: tokInstaller, ctype: js, body: `{"mode":"On"}`, want: 404},
		{name: "mode of a device that is no consumer", method: "PUT", path: "/gateway/v1/consumers/inv1/mode", token: tokInstaller, ctype: js, body: `{"mode":"On"}`, want: 404},
		{name: "GET mode", method: "GET", path: "/gateway/v1/consumers/hp/mode", token: tokInstaller, want: 405},
		{name: "plan by standard", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokStandard, ctype: js, body: `{"energy":10000,"deadline":"2030-01-01T07:00:00Z"}`, want: 403},
		{name: "plan without a target", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"deadline":"2030-01-01T07:00:00Z"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"energy"}) {
					t.Errorf("fields %q, want energy", got)
				}
			}},
		{name: "plan with energy and soc", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"energy":10000,"soc":80,"deadline":"2030-01-01T07:00:00Z"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"energy"}) {
					t.Errorf("fields %q, want energy", got)
				}
			}},
		{name: "plan energy 0", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"energy":0,"deadline":"2030-01-01T07:00:00Z"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"energy"}) {
					t.Errorf("fields %q, want energy", got)
				}
			}},
		{name: "plan soc 120", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"soc":120,"deadline":"2030-01-01T07:00:00Z"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"soc"}) {
					t.Errorf("fields %q, want soc", got)
				}
			}},
		{name: "plan without a deadline", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"energy":10000}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"deadline"}) {
					t.Errorf("fields %q, want deadline", got)
				}
			}},
		{name: "plan with a bad deadline", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"energy":10000,"deadline":"tomorrow 7:00"}`, want: 400,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"deadline"}) {
					t.Errorf("fields %q, want deadline", got)
				}
			}},
		{name: "plan of a consumer that is no charger", method: "PUT", path: "/gateway/v1/consumers/hp/plan", token: tokInstaller, ctype: js, body: `{"energy":10000,"deadline":"2030-01-01T07:00:00Z"}`, want: 422,
			check: func(t *testing.T, b []byte) {
				if got := problemFields(t, b); !slices.Equal(got, []string{"deviceId"}) {
					t.Errorf("fields %q, want deviceId", got)
				}
			}},
		{name: "plan of an unknown device", method: "PUT", path: "/gateway/v1/consumers/nope/plan", token: tokInstaller, ctype: js, body: `{"energy":10000,"deadline":"2030-01-01T07:00:00Z"}`, want: 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vv := v
			if tt.want == http.StatusRequestEntityTooLarge {
				vv = nil // the validator would read a 1 MiB body the schema refuses anyway
			}
			got, b := e.send(vv, tt.method, tt.path, tt.token, tt.ctype, tt.body)
			if got != tt.want {
				t.Fatalf("%s %s: %d, want %d: %.400s", tt.method, tt.path, got, tt.want, b)
			}
			if tt.check != nil {
				tt.check(t, b)
			}
		})
	}
	want := []string{"hp On inst", "boiler Auto grid", "hp plan 10000 by inst"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Errorf("SetMode calls %q, want %q (the caller's credential name as by)", got, want)
	}
}

// TestConsumerModeAnyCase: the mode words are accepted in any letter
// case (plant.ParseConsumerMode) and answered in the API's case.
func TestConsumerModeAnyCase(t *testing.T) {
	e, f := consumerEnv(t, true)
	for _, tt := range []struct{ in, want string }{{"off", "Off"}, {"AUTO", "Auto"}, {"oN", "On"}} {
		got, b := e.send(nil, "PUT", "/gateway/v1/consumers/boiler/mode", tokInstaller, "application/json", `{"mode":"`+tt.in+`"}`)
		var c plant.ConsumerStatus
		_ = json.Unmarshal(b, &c)
		if got != http.StatusOK || string(c.Mode) != tt.want {
			t.Errorf("mode %q: %d %s, want 200 mode %s", tt.in, got, b, tt.want)
		}
	}
	if n := len(f.calls()); n != 3 {
		t.Errorf("%d SetMode calls, want 3", n)
	}
}

// TestConsumerModeErrors: the manager's errors: a consumer gone between
// the lookup and the change is 404, another failure a 500 with the
// request id (the error is logged, not answered).
func TestConsumerModeErrors(t *testing.T) {
	e, f := consumerEnv(t, true)
	f.mu.Lock()
	f.vanish = "hp"
	f.mu.Unlock()
	got, b := e.send(nil, "PUT", "/gateway/v1/consumers/hp/mode", tokInstaller, "application/json", `{"mode":"On"}`)
	if got != http.StatusNotFound || !strings.Contains(string(b), "unknown device") {
		t.Errorf("consumer gone: %d %s, want 404 naming the unknown device", got, b)
	}
	f.mu.Lock()
	f.fail = errors.New("relay module: connection refused")
	f.mu.Unlock()
	got, b = e.send(nil, "PUT", "/gateway/v1/consumers/boiler/mode", tokInstaller, "application/json", `{"mode":"On"}`)
	if got != http.StatusInternalServerError || !strings.Contains(string(b), "request id") || strings.Contains(string(b), "refused") {
		t.Errorf("manager failure: %d %s, want 500 with the request id and without the error's text", got, b)
	}
}

// TestConsumersWithoutManager: a server without Deps.Consumers lists no
// consumers and answers by-id and PUT with 404.
func TestConsumersWithoutManager(t *testing.T) {
	e, _ := consumerEnv(t, false)
	v := newValidator(t, e)
	for _, tt := range []struct {
		method, path, token, body string
		want                      int
		wantBody                  string
	}{
		{"GET", "/gateway/v1/consumers", tokStandard, "", 200, `{"consumers":[]}`},
		{"GET", "/gateway/v1/consumers?plantId=demo", tokStandard, "", 200, `{"consumers":[]}`},
		{"GET", "/gateway/v1/consumers/hp", tokStandard, "", 404, ""},
		{"PUT", "/gateway/v1/consumers/hp/mode", tokInstaller, `{"mode":"On"}`, 404, ""},
		{"PUT", "/gateway/v1/consumers/hp/mode", tokStandard, `{"mode":"On"}`, 403, ""},
	} {
		ct := ""
		if tt.body != "" {
			ct = "application/json"
		}
		got, b := e.send(v, tt.method, tt.path, tt.token, ct, tt.body)
		if got != tt.want || (tt.wantBody != "" && string(b) != tt.wantBody) {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, got, b, tt.want, tt.wantBody)
		}
	}
}

// TestConsumersInDeviceLists: consumer devices are type "Consumer" in the
// monitoring lists, and the live lists (v1, v2) carry their switching
// state and consumption, nothing for other devices, nothing while a
// consumer is offline.
func TestConsumersInDeviceLists(t *testing.T) {
	e, _ := consumerEnv(t, true)
	v := newValidator(t, e)
	type item struct {
		DeviceID       string
		Type           string
		SwitchingState *string
		Consumption    *float64
	}
	list := func(path string) map[string]item {
		t.Helper()
		got, b := e.send(v, "GET", path, tokStandard, "", "")
		if got != http.StatusOK {
			t.Fatalf("%s: %d %s", path, got, b)
		}
		var l struct{ Devices []item }
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		m := map[string]item{}
		for _, d := range l.Devices {
			m[d.DeviceID] = d
		}
		return m
	}
	str := func(p *string) string {
		if p == nil {
			return "absent"
		}
		return *p
	}
	num := func(p *float64) string {
		if p == nil {
			return "absent"
		}
		return fmt.Sprint(*p)
	}
	for _, path := range []string{"/monitoring/v1/plants/demo/devices", "/monitoring/v1/plants/demo/devices/lean", "/monitoring/v1/plants/cabin/devices"} {
		for id, d := range list(path) {
			if isConsumer := id == "hp" || id == "boiler" || id == "plug"; isConsumer != (d.Type == "Consumer") {
				t.Errorf("%s: %s has type %q", path, id, d.Type)
			}
		}
	}
	var det struct{ Details struct{ Type string } }
	e.getJSON("/monitoring/v1/devices/hp", &det)
	if det.Details.Type != "Consumer" {
		t.Errorf("GET /monitoring/v1/devices/hp: type %q, want Consumer", det.Details.Type)
	}

	for _, tt := range []struct {
		path, id, state, consumption string
	}{
		{"/live/v1/plants/demo/devices", "hp", "On", "2000"},
		{"/live/v2/plants/demo/devices", "hp", "On", "2000"},
		{"/live/v2/plants/demo/devices", "boiler", "Off", "0"},
		{"/live/v1/plants/cabin/devices", "plug", "On", "absent"}, // no meter, no estimate
		{"/live/v2/plants/demo/devices", "inv1", "absent", "absent"},
		{"/live/v2/plants/demo/devices", "meter", "absent", "absent"},
	} {
		d, ok := list(tt.path)[tt.id]
		if !ok {
			t.Errorf("%s: no %s", tt.path, tt.id)
			continue
		}
		if str(d.SwitchingState) != tt.state || num(d.Consumption) != tt.consumption {
			t.Errorf("%s %s: switchingState %s, consumption %s; want %s, %s", tt.path, tt.id, str(d.SwitchingState), num(d.Consumption), tt.state, tt.consumption)
		}
	}

	// The boiler stops answering: its last reading is no longer its state.
	for range 3 {
		e.clock.Add(time.Minute)
		e.live.Apply(plant.Sample{Device: "boiler", Time: e.clock.Now(), Err: errors.New("connection refused"), State: plant.StateOffline})
	}
	d := list("/live/v2/plants/demo/devices")["boiler"]
	if d.SwitchingState != nil || d.Consumption != nil {
		t.Errorf("offline boiler: switchingState %s, consumption %s; want both absent", str(d.SwitchingState), num(d.Consumption))
	}
}
