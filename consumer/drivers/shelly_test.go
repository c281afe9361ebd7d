package drivers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/consumer/drivers"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

var noon = time.Date(2025, 6, 21, 11, 15, 0, 0, time.UTC)

// simPlug starts a plant with a meter and a 1200 W plug on a manual clock.
func simPlug(t *testing.T) (*sim.Plant, *sim.Shelly, *simtest.Clock) {
	t.Helper()
	clk := simtest.NewClock(noon)
	p := simtest.Start(t, sim.Config{
		Now:      clk.Now,
		ClearSky: true,
		Devices:  []sim.DeviceConfig{{ID: "meter", Kind: kind.Meter}},
		Shellies: []sim.ShellyConfig{{ID: "plug", RatedW: 1200}},
	})
	return p, p.Shelly("plug"), clk
}

func newShelly(t *testing.T, url string, watchdog time.Duration) *drivers.Shelly {
	t.Helper()
	d, err := drivers.NewShelly(url, 0, nil, watchdog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestShellySim switches the simulated plug and reads it back as the clock
// advances: output, power, energy, and the plant's load.
func TestShellySim(t *testing.T) {
	p, plug, clk := simPlug(t)
	d := newShelly(t, plug.URL(), 0)
	ctx := context.Background()
	base := p.Balance().LoadW

	steps := []struct {
		name     string
		set      *bool
		advance  time.Duration
		on       bool
		powerW   float64
		energyWh float64
	}{
		{"initially off", nil, 0, false, 0, 0},
		{"switched on", ptr(true), 0, true, 1200, 0},
		{"on for 30 min", nil, 30 * time.Minute, true, 1200, 600},
		{"switched off", ptr(false), 0, false, 0, 600},
		{"off for an hour", nil, time.Hour, false, 0, 600},
		{"on again for 6 min", ptr(true), 6 * time.Minute, true, 1200, 720},
	}
	for _, st := range steps {
		if st.set != nil {
			if err := d.Set(ctx, consumer.Output{On: *st.set}); err != nil {
				t.Fatalf("%s: Set: %v", st.name, err)
			}
			if got := p.Balance().LoadW - base; st.on && math.Abs(got-1200) > 1e-6 {
				t.Errorf("%s: the plant's load grew by %v W, want 1200", st.name, got)
			}
		}
		clk.Add(st.advance)
		base = p.Balance().LoadW - st.powerW // the household profile moves with the clock
		r, err := d.Read(ctx)
		if err != nil {
			t.Fatalf("%s: Read: %v", st.name, err)
		}
		if r.Output.On != st.on || !r.HasPower || r.PowerW != st.powerW ||
			!r.HasEnergy || math.Abs(r.EnergyWh-st.energyWh) > 0.001 {
			t.Errorf("%s: %+v, want on %v, %v W, %v Wh", st.name, r, st.on, st.powerW, st.energyWh)
		}
	}
	if err := d.Set(ctx, consumer.Output{SGReady: consumer.SGForced}); err == nil {
		t.Error("Set with an SG-Ready state: no error")
	}
}

// TestShellyWatchdog arms toggle_after with every Set on: renewed, the
// plug stays on; not renewed, it switches itself off on the wall clock.
func TestShellyWatchdog(t *testing.T) {
	_, plug, clk := simPlug(t)
	d := newShelly(t, plug.URL(), 3*time.Second)
	ctx := context.Background()
	if d.Watchdog() != 3*time.Second {
		t.Fatalf("Watchdog %v", d.Watchdog())
	}
	read := func(want bool, when string) {
		t.Helper()
		r, err := d.Read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if r.Output.On != want {
			t.Fatalf("%s: on %v, want %v", when, r.Output.On, want)
		}
	}
	if err := d.Set(ctx, consumer.Output{On: true}); err != nil {
		t.Fatal(err)
	}
	if end := plug.State().TimerEnd; end != noon.Add(3*time.Second) {
		t.Fatalf("timer ends %v, want 3 s after the Set", end)
	}
	clk.Add(2 * time.Second)
	read(true, "2 s after Set")
	if err := d.Set(ctx, consumer.Output{On: true}); err != nil { // the renewal
		t.Fatal(err)
	}
	clk.Add(2 * time.Second)
	read(true, "2 s after the renewal")
	clk.Add(1500 * time.Millisecond)
	read(false, "3.5 s after the renewal")
	r, _ := d.Read(ctx)
	if want := 1200 * 5.0 / 3600; r.PowerW != 0 || math.Abs(r.EnergyWh-want) > 0.001 {
		t.Errorf("after the auto-off: %+v, want 0 W and %v Wh (5 s on)", r, want)
	}
	// Off carries no timer: the plug stays off.
	if err := d.Set(ctx, consumer.Output{On: false}); err != nil {
		t.Fatal(err)
	}
	if end := plug.State().TimerEnd; !end.IsZero() {
		t.Errorf("Set off armed a timer ending %v", end)
	}
}

// TestShellySimFaults reads the plug with each of the simulator's faults.
func TestShellySimFaults(t *testing.T) {
	_, plug, _ := simPlug(t)
	d := newShelly(t, plug.URL(), 0)
	cases := []struct {
		fault   sim.ShellyFaultKind
		bad     bool     // wraps ErrBadAnswer
		timeout bool     // wraps context.DeadlineExceeded
		want    []string // in the message
	}{
		{sim.ShellyFault500, true, false, []string{plug.URL(), "Switch.GetStatus", "HTTP 500", `"Internal Server Error\n"`}},
		{sim.ShellyFaultGarbage, true, false, []string{plug.URL(), "not a JSON frame", `"\x00\x1b[2J<html>`}},
		{sim.ShellyFaultHang, false, true, []string{plug.URL(), "Switch.GetStatus"}},
	}
	for _, tc := range cases {
		t.Run(tc.fault.String(), func(t *testing.T) {
			plug.SetFault(sim.ShellyFault{Kind: tc.fault})
			defer plug.SetFault(sim.ShellyFault{})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := d.Read(ctx)
			if err == nil {
				t.Fatal("Read: no error")
			}
			if errors.Is(err, consumer.ErrBadAnswer) != tc.bad || errors.Is(err, context.DeadlineExceeded) != tc.timeout {
				t.Errorf("Read: %v: ErrBadAnswer %v, deadline %v", err, errors.Is(err, consumer.ErrBadAnswer), errors.Is(err, context.DeadlineExceeded))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Read: %q lacks %q", err, w)
				}
			}
			if err := d.Set(ctx, consumer.Output{On: true}); err == nil {
				t.Error("Set: no error")
			}
			if plug.State().On {
				t.Error("a failed Set switched the plug on")
			}
		})
	}
}

// fakeShelly answers every request with status and body, after checking
// the request frame; it records the frames' params.
func fakeShelly(t *testing.T, status int, body string) (*httptest.Server, chan map[string]any) {
	t.Helper()
	params := make(chan map[string]any, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var f struct {
			ID     uint64         `json:"id"`
			Src    string         `json:"src"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/rpc" || json.Unmarshal(b, &f) != nil ||
			f.ID == 0 || f.Src == "" || f.Method == "" {
			t.Errorf("request %s %s %q", r.Method, r.URL, b)
		}
		params <- f.Params
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, params
}

// TestShellyAnswers feeds the driver's Read answers a device might give.
func TestShellyAnswers(t *testing.T) {
	long := `{"id":1,"result":{"output":true,"x":"` + strings.Repeat("a", 300) + `"}}`
	cases := []struct {
		name   string
		status int
		body   string
		want   consumer.Reading
		err    string // "" for success; else in the message, wrapping ErrBadAnswer
	}{
		{"plug", 200, `{"id":1,"src":"shellyplusplugs-x","result":{"id":0,"output":true,"apower":512.5,"aenergy":{"total":1234.567}}}`,
			consumer.Reading{Output: consumer.Output{On: true}, PowerW: 512.5, HasPower: true, EnergyWh: 1234.567, HasEnergy: true}, ""},
		{"unmetered relay", 200, `{"id":1,"result":{"id":0,"source":"init","output":false}}`,
			consumer.Reading{}, ""},
		{"null power", 200, `{"id":1,"result":{"output":true,"apower":null,"aenergy":{}}}`,
			consumer.Reading{Output: consumer.Output{On: true}}, ""},
		{"rpc error", 200, `{"id":1,"src":"x","error":{"code":-105,"message":"Bad id=0"}}`, consumer.Reading{}, `rpc error -105 "Bad id=0"`},
		{"no output", 200, `{"id":1,"result":{"id":0,"apower":3}}`, consumer.Reading{}, "status has no output"},
		{"other switch", 200, `{"id":1,"result":{"id":2,"output":true}}`, consumer.Reading{}, "status of switch 2, asked for 0"},
		{"wrong frame id", 200, `{"id":7,"result":{"output":true}}`, consumer.Reading{}, `answer to request id "7", sent 1`},
		{"no result", 200, `{"id":1}`, consumer.Reading{}, "neither result nor error"},
		{"result not an object", 200, `{"id":1,"result":[1]}`, consumer.Reading{}, "result does not decode"},
		{"not JSON", 200, "\x00\x01ok\n", consumer.Reading{}, `not a JSON frame (invalid character `},
		{"long answer cut", 200, long + "x", consumer.Reading{}, fmt.Sprintf(`aaaa"… (%d bytes)`, len(long)+1)},
		{"unauthorized", 401, `{"code":401,"message":"unauthorized"}`, consumer.Reading{}, "HTTP 401 Unauthorized (the device has authentication enabled"},
		{"huge answer", 200, `{"id":1,"result":{"output":true,"x":"` + strings.Repeat("b", 70000) + `"}}`, consumer.Reading{}, "answer longer than 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, params := fakeShelly(t, tc.status, tc.body)
			d := newShelly(t, srv.URL, 0)
			r, err := d.Read(context.Background())
			if p := <-params; p["id"] != 0.0 {
				t.Errorf("params %v, want id 0", p)
			}
			if tc.err == "" {
				if err != nil || r != tc.want {
					t.Errorf("Read: %+v, %v; want %+v", r, err, tc.want)
				}
				return
			}
			if !errors.Is(err, consumer.ErrBadAnswer) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("Read: %v; want ErrBadAnswer naming %s with %q", err, srv.URL, tc.err)
			}
		})
	}
	t.Run("rpc error is typed", func(t *testing.T) {
		srv, _ := fakeShelly(t, 200, `{"id":1,"error":{"code":-103,"message":"Missing required 'id'"}}`)
		_, err := newShelly(t, srv.URL, 0).Read(context.Background())
		var re *drivers.ShellyRPCError
		if !errors.As(err, &re) || re.Code != -103 {
			t.Errorf("Read: %v, want a ShellyRPCError -103", err)
		}
	})
}

// TestShellySetParams checks the params of Switch.Set: toggle_after only
// when switching on with a watchdog.
func TestShellySetParams(t *testing.T) {
	cases := []struct {
		name     string
		watchdog time.Duration
		on       bool
		want     string
	}{
		{"on with watchdog", 60 * time.Second, true, `{"id":0,"on":true,"toggle_after":60}`},
		{"off with watchdog", 60 * time.Second, false, `{"id":0,"on":false}`},
		{"on without watchdog", 0, true, `{"id":0,"on":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, params := fakeShelly(t, 200, `{"id":1,"result":{"was_on":false}}`)
			d := newShelly(t, srv.URL, tc.watchdog)
			if err := d.Set(context.Background(), consumer.Output{On: tc.on}); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(<-params)
			if string(got) != tc.want {
				t.Errorf("params %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewShellyRefuses(t *testing.T) {
	cases := []struct {
		url      string
		id       int
		watchdog time.Duration
		want     string
	}{
		{"192.0.2.1", 0, 0, "want http:// or https://"},
		{"ftp://192.0.2.1", 0, 0, "want http:// or https://"},
		{"http://", 0, 0, "no host"},
		{"http://admin:secret@192.0.2.1", 0, 0, "digest authentication is not supported yet"},
		{"http://192.0.2.1/?x=1", 0, 0, "no query"},
		{"http://192.0.2.1", -1, 0, "switch id -1"},
		{"http://192.0.2.1", 0, 1500 * time.Millisecond, "whole seconds"},
		{"http://192.0.2.1", 0, -time.Second, "whole seconds"},
	}
	for _, tc := range cases {
		_, err := drivers.NewShelly(tc.url, tc.id, nil, tc.watchdog)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewShelly(%q, %d, %v): %v, want %q", tc.url, tc.id, tc.watchdog, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("NewShelly: %v shows the password", err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
