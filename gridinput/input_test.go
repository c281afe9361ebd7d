package gridinput

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/gridinput/inputconfig"
	"plantd/modbus"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// call is one call of the fake submitter.
type call struct {
	op, id, by string
	value      float64
	unit, end  string
}

// fakeGrid records the input's submits and ends; each new schedule gets
// the id s1, s2, ...
type fakeGrid struct {
	mu    sync.Mutex
	n     int
	calls chan call
	open  []string // an earlier run's windows
}

func (f *fakeGrid) Submit(_ context.Context, plantID string, a inputconfig.Action, length time.Duration, by Origin) (string, time.Time, error) {
	if by.Role != RoleGridOperator || plantID != "p1" || by.Input == "" || !strings.HasPrefix(by.Name, "input:"+by.Input+"/") {
		return "", time.Time{}, fmt.Errorf("bad submit %+v %v", a, by)
	}
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("s%d", f.n)
	f.mu.Unlock()
	f.calls <- call{op: "submit", id: id, by: by.Name, value: a.Value, unit: a.Unit, end: "+" + length.String()}
	return id, time.Now().Add(length), nil
}

func (f *fakeGrid) Open(context.Context, string, string) ([]string, error) { return f.open, nil }

func (f *fakeGrid) End(_ context.Context, _ string, id string, by Origin) error {
	f.calls <- call{op: "end", id: id, by: by.Name}
	return nil
}

// logs collects the plant log entries by code.
type logs struct{ ch chan plant.LogEntry }

func (l logs) add(e plant.LogEntry) { l.ch <- e }

// await returns the next call or fails after a deadline.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5 s", what)
	}
	var zero T
	return zero
}

// awaitLog waits for a log entry with the code, skipping others.
func awaitLog(t *testing.T, ch <-chan plant.LogEntry, code string) plant.LogEntry {
	t.Helper()
	for {
		e := await(t, ch, "log "+code)
		if e.Code == code {
			return e
		}
	}
}

// simModule starts a simulator of one I/O module, rcr (input N follows
// coil N), and returns it with two Modbus clients of the module: the
// loop's and an external one that writes its coils.
func simModule(t *testing.T) (p *sim.Plant, loop, ext *modbus.Client) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Devices = []sim.DeviceConfig{{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1}}
	p = simtest.Start(t, cfg)
	rcr := p.Device("rcr")
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = pool.Close() })
	loop = pool.Endpoint(modbus.EndpointConfig{Address: rcr.Addr(), Timeout: time.Second}).Unit(1, 300*time.Millisecond)
	ext = pool.Endpoint(modbus.EndpointConfig{Address: rcr.Addr(), Timeout: time.Second}).Unit(1, time.Second)
	return p, loop, ext
}

// runInput runs an input's loop until the test ends.
func runInput(t *testing.T, spec Spec, deps Deps) {
	t.Helper()
	in, err := New(spec, deps, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestInputOnSimulator drives the loop with the simulator's I/O module
// over Modbus TCP: the coils written by a plain Modbus client set the
// contacts. Steps share the loop and run in order.
func TestInputOnSimulator(t *testing.T) {
	p, cl, ext := simModule(t)
	rcr := p.Device("rcr")
	grid := &fakeGrid{calls: make(chan call, 16)}
	lg := logs{ch: make(chan plant.LogEntry, 64)}
	dims := make(chan bool, 8)
	spec := Spec{ID: "rcr", PlantID: "p1", Reader: Bits{Client: cl, Count: 8},
		Contacts: map[string]int{"K1": 0, "K2": 1, "K3": 2, "K4": 3, "K5": 4},
		Actions:  receiver(), Dimming: []string{"K5"},
		PollInterval: 50 * time.Millisecond, LossGrace: 400 * time.Millisecond}
	runInput(t, spec, Deps{Submitter: grid, Dimmer: dimFunc(func(_ string, on bool) { dims <- on }), Log: lg.add})
	set := func(t *testing.T, coils ...bool) {
		t.Helper()
		vals := make([]bool, 5)
		copy(vals, coils)
		if err := ext.WriteCoils(t.Context(), 0, vals); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(t *testing.T, c call, op, by string, value float64) {
		t.Helper()
		if c.op != op || c.by != by || (op == "submit" && (c.value != value || c.unit != "%" || c.end != "+24h0m0s")) {
			t.Fatalf("got %+v, want %s by %s value %v", c, op, by, value)
		}
	}

	if await(t, dims, "first dimming state") {
		t.Fatal("dimming on at start, with K5 open")
	}
	t.Run("K3 closed: a 30 % window", func(t *testing.T) {
		set(t, false, false, true)
		expect(t, await(t, grid.calls, "submit"), "submit", "input:rcr/K3", 30)
		awaitLog(t, lg.ch, "InputApplied")
	})
	t.Run("K3 open: the window ends", func(t *testing.T) {
		set(t)
		c := await(t, grid.calls, "end")
		expect(t, c, "end", "input:rcr/K3", 0)
		if c.id != "s1" {
			t.Errorf("ended %s, want s1", c.id)
		}
		awaitLog(t, lg.ch, "InputReleased")
	})
	t.Run("K1 and K4: invalid, the most restrictive", func(t *testing.T) {
		set(t, true, false, false, true)
		expect(t, await(t, grid.calls, "submit"), "submit", "input:rcr/K1+K4", 0)
		e := awaitLog(t, lg.ch, "InputInvalidPattern")
		if e.Level != plant.LevelError {
			t.Errorf("invalid pattern logged at %s", e.Level)
		}
	})
	t.Run("K2 replaces it: new window first, then the old one ends", func(t *testing.T) {
		set(t, false, true)
		expect(t, await(t, grid.calls, "submit"), "submit", "input:rcr/K2", 60)
		c := await(t, grid.calls, "end")
		if c.id != "s2" {
			t.Errorf("ended %s, want s2", c.id)
		}
	})
	t.Run("K5: dimming passed on", func(t *testing.T) {
		set(t, false, true, false, false, true)
		if !await(t, dims, "dim") {
			t.Error("dim off, want on")
		}
		set(t, false, true)
		if await(t, dims, "dim") {
			t.Error("dim on, want off")
		}
	})
	t.Run("device lost: held for the grace, then the failsafe", func(t *testing.T) {
		rcr.SetFault(sim.Fault{Kind: sim.FaultOffline})
		awaitLog(t, lg.ch, "InputLost")
		select {
		case c := <-grid.calls:
			t.Fatalf("within the grace: %+v", c)
		default:
		}
		awaitLog(t, lg.ch, "InputFailsafe")
		expect(t, await(t, grid.calls, "submit"), "submit", "input:rcr/failsafe", 0)
		if c := await(t, grid.calls, "end"); c.op != "end" || c.id != "s3" {
			t.Errorf("got %+v, want the K2 window s3 ended", c)
		}
		if !await(t, dims, "dim") {
			t.Error("dim off after the grace, want on (restrictive)")
		}
	})
	t.Run("device back: its contacts decide again", func(t *testing.T) {
		rcr.SetFault(sim.Fault{})
		awaitLog(t, lg.ch, "InputRecovered")
		expect(t, await(t, grid.calls, "submit"), "submit", "input:rcr/K2", 60)
		if c := await(t, grid.calls, "end"); c.op != "end" || c.id != "s4" {
			t.Errorf("got %+v, want the failsafe window s4 ended", c)
		}
	})
}

type dimFunc func(string, bool)

func (f dimFunc) Dim(p string, on bool) { f(p, on) }
