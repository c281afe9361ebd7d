package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/gridinput"
	"plantd/gridinput/inputconfig"
	"plantd/httpapi"
	"plantd/plant"
	"plantd/sim"
)

// gridInputs runs the loops of the config's inputs (the grid operator's
// contacts on I/O modules); nil without inputs. views are what the loops
// read and signal, for GET /gateway/v1/inputs (InputStates).
type gridInputs struct {
	loops []*gridinput.Input
	views []*inputView
	grid  *gridcontrol.Controller
	// consumers reports whether a plant has consumers (§14a dimming acts
	// on them); nil: none has.
	consumers func(plantID string) bool
}

// newInputs makes the loop of every input, reading through the Modbus
// pool (shared with the devices at the same address) and submitting to
// grid control. The §14a dimming signal goes to dim (nil: logged only).
func (d *daemon) newInputs(cfg *config.Config, dim gridinput.Dimmer) (*gridInputs, error) {
	if len(cfg.Inputs) == 0 {
		return nil, nil
	}
	out := &gridInputs{grid: d.grid}
	if d.homes != nil {
		out.consumers = func(plantID string) bool {
			for _, c := range d.homes.Consumers() {
				if c.PlantID == plantID {
					return true
				}
			}
			return false
		}
	}
	for _, ic := range cfg.Inputs {
		spec := inputSpec(ic)
		// The operator's contacts are read as control requests: ahead of
		// the polls queued on a shared bus (modbus.Endpoint.ControlUnit).
		ep := d.pool.Endpoint(endpointOf(ic.Device()))
		v := &inputView{cfg: ic, spec: spec, now: d.now, dimmer: dim, reader: gridinput.Bits{Client: ep.ControlUnit(byte(ic.Unit), ic.Timeout),
			Addr: uint16(ic.Address), Count: inputCount(ic), Registers: ic.Source == inputconfig.SourceRegisters}}
		if v.spec.Failsafe == nil {
			v.spec.Failsafe = gridinput.MostRestrictive(spec.Actions)
		}
		spec.Reader = v
		in, err := gridinput.New(spec, gridinput.Deps{
			Submitter: gridSubmitter{d.grid},
			Dimmer:    v,
			Log:       func(e plant.LogEntry) { e.Time = d.now().UTC(); d.logEntry(e) },
			Now:       d.now,
		}, d.log.With("component", "gridinput"))
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", ic.ID, err)
		}
		out.loops = append(out.loops, in)
		out.views = append(out.views, v)
	}
	return out, nil
}

// inputView stands between an input's loop and its reader and dimmer: it
// keeps the last read (contacts, error, since when they read so) and the
// dimming signal the loop passed on, on the daemon's clock.
type inputView struct {
	cfg    config.Input
	spec   gridinput.Spec // Failsafe resolved
	now    func() time.Time
	reader gridinput.Reader
	dimmer gridinput.Dimmer // nil: the signal is logged only

	mu                sync.Mutex
	bits              []bool
	readAt, lostSince time.Time
	err               string
	pattern           string // the closed contacts as last read
	since             time.Time
	dimmed            bool
	dimSince          time.Time
}

func (v *inputView) ReadInputs(ctx context.Context) ([]bool, error) {
	bits, err := v.reader.ReadInputs(ctx)
	if ctx.Err() != nil {
		return bits, err
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		if v.lostSince.IsZero() {
			v.lostSince = now
		}
		v.err = err.Error()
		return bits, err
	}
	v.bits, v.readAt, v.lostSince, v.err = slices.Clone(bits), now, time.Time{}, ""
	var closed []string
	for _, c := range v.contacts() {
		if c.Closed {
			closed = append(closed, c.Name)
		}
	}
	if p := strings.Join(closed, "+"); p != v.pattern || v.since.IsZero() {
		v.pattern, v.since = p, now
	}
	return bits, nil
}

func (v *inputView) Dim(plantID string, on bool) {
	v.mu.Lock()
	if on != v.dimmed || v.dimSince.IsZero() {
		v.dimmed, v.dimSince = on, v.now()
	}
	v.mu.Unlock()
	if v.dimmer != nil {
		v.dimmer.Dim(plantID, on)
	}
}

// contacts are the input's contacts by input index, as last read (v.mu
// held).
func (v *inputView) contacts() []httpapi.InputContact {
	out := make([]httpapi.InputContact, 0, len(v.spec.Contacts))
	for name, i := range v.spec.Contacts {
		closed := i >= 0 && i < len(v.bits) && v.bits[i] // a register's bits come expanded (gridinput.Bits)
		out = append(out, httpapi.InputContact{Name: name, Input: i, Closed: closed, Dimming: slices.Contains(v.spec.Dimming, name)})
	}
	// sort.Slice: no sort instantiated for this struct (binary size).
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return cmp.Or(cmp.Compare(a.Input, b.Input), cmp.Compare(a.Name, b.Name)) < 0
	})
	return out
}

func inputAction(a *inputconfig.Action) *httpapi.InputAction {
	if a == nil {
		return nil
	}
	return &httpapi.InputAction{Contacts: a.Contacts, Command: a.Command, Value: a.Value, Unit: a.Unit}
}

// InputStates is every input as last read, with its window in grid
// control (the API's Inputs).
func (g *gridInputs) InputStates() []httpapi.InputState {
	out := make([]httpapi.InputState, 0, len(g.views))
	for _, v := range g.views {
		v.mu.Lock()
		st := httpapi.InputState{ID: v.cfg.ID, Name: v.cfg.Name, PlantID: v.cfg.Plant, Contacts: v.contacts(), ReadAt: v.readAt,
			LostSince: v.lostSince, ReadErr: v.err, Since: v.since, Failsafe: inputAction(v.spec.Failsafe), Dimming: v.spec.Dimming,
			Dimmed: v.dimmed, DimmedSince: v.dimSince}
		v.mu.Unlock()
		for _, c := range st.Contacts {
			if c.Closed && !c.Dimming {
				st.Closed = append(st.Closed, c.Name)
			}
		}
		if !st.ReadAt.IsZero() {
			d := gridinput.Resolve(v.spec.Actions, st.Closed)
			st.Action, st.Invalid = inputAction(d.Action), d.Invalid
		}
		for i := range v.spec.Actions {
			st.Actions = append(st.Actions, *inputAction(&v.spec.Actions[i]))
		}
		st.Window = g.window(v.cfg.Plant, "input:"+v.cfg.ID+"/")
		st.Consumers = g.consumers != nil && g.consumers(v.cfg.Plant)
		out = append(out, st)
	}
	return out
}

// window is the newest window not yet ended of the schedules created by
// a name starting with prefix (an input's), an active one first.
func (g *gridInputs) window(plantID, prefix string) *httpapi.InputWindow {
	if g.grid == nil {
		return nil
	}
	scheds, err := g.grid.Schedules(plantID)
	if err != nil {
		return nil
	}
	var best *httpapi.InputWindow
	for _, sc := range scheds {
		if !strings.HasPrefix(sc.CreatedBy, prefix) {
			continue
		}
		for _, cm := range sc.Commands {
			switch cm.Status {
			case gridcontrol.StatusDone, gridcontrol.StatusSuperseded:
				continue
			}
			if cm.Cancelled {
				continue
			}
			w := &httpapi.InputWindow{ScheduleID: sc.ScheduleID, Command: cm.Command, Status: string(cm.Status), Value: cm.Value, Unit: cm.Unit,
				Start: cm.Start, End: cm.End}
			if best == nil || (w.Status == "active") != (best.Status == "active") && w.Status == "active" ||
				(w.Status == "active") == (best.Status == "active") && w.Start.After(best.Start) {
				best = w
			}
		}
	}
	return best
}

// inputSpec maps an input's config onto its loop's spec (without the
// reader).
func inputSpec(ic config.Input) gridinput.Spec {
	act := func(a inputconfig.Action) inputconfig.Action {
		return inputconfig.Action{Contacts: a.Contacts, Command: a.Command, Value: a.Value, Unit: a.Unit}
	}
	s := gridinput.Spec{ID: ic.ID, PlantID: ic.Plant, Contacts: ic.Contacts, Dimming: ic.Dimming,
		PollInterval: ic.PollInterval, LossGrace: ic.LossGrace, Debounce: ic.Debounce}
	for _, a := range ic.Actions {
		s.Actions = append(s.Actions, act(a))
	}
	if fs := ic.FailsafeAction(); fs != nil {
		f := act(*fs)
		f.Contacts = nil
		s.Failsafe = &f
	}
	return s
}

// inputCount is how many discrete inputs (or registers) cover the
// contacts.
func inputCount(ic config.Input) uint16 {
	hi := 0
	for _, i := range ic.Contacts {
		hi = max(hi, i)
	}
	if ic.Source == inputconfig.SourceRegisters {
		return uint16(hi/16 + 1)
	}
	return uint16(hi + 1)
}

// Run runs every loop until ctx ends.
func (g *gridInputs) Run(ctx context.Context) error {
	eg, ctx := errgroup.WithContext(ctx)
	for _, in := range g.loops {
		eg.Go(func() error { return in.Run(ctx) })
	}
	return eg.Wait()
}

// gridSubmitter is grid control as the inputs' Submitter: a window stored
// without the eligibility check (the operator's signal holds even while
// an inverter is offline, and reaches it when it is back).
type gridSubmitter struct{ c *gridcontrol.Controller }

func (s gridSubmitter) Submit(ctx context.Context, plantID string, a inputconfig.Action, length time.Duration, by gridinput.Origin) (string, time.Time, error) {
	v := a.Value
	sc, err := s.c.Submit(ctx, plantID, inputOrigin(by), []gridcontrol.Order{{Command: a.Command, For: length, Value: &v, Unit: a.Unit}},
		gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		return "", time.Time{}, err
	}
	var end time.Time
	for _, cm := range sc.Commands {
		end = cm.End
	}
	return sc.ScheduleID, end, nil
}

// inputOrigin is an input's origin in grid control: the input door, its
// contacts, and the input as a channel of its own.
func inputOrigin(by gridinput.Origin) gridcontrol.Origin {
	return gridcontrol.Origin{Door: gridcontrol.DoorInput, Name: strings.TrimPrefix(by.Name, "input:"), Role: by.Role,
		Channel: string(gridcontrol.DoorInput) + ":" + by.Input}
}

// Open lists the schedules created by a name starting with prefix that
// have a window not yet ended.
func (s gridSubmitter) Open(ctx context.Context, plantID, prefix string) ([]string, error) {
	// Grid control loads the stored schedules when it starts, beside the
	// inputs: before that the list would be empty.
	select {
	case <-s.c.Loaded():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	scheds, err := s.c.Schedules(plantID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sc := range scheds {
		if !strings.HasPrefix(sc.CreatedBy, prefix) {
			continue
		}
		// Any but done: a failed window is still retried, and ending one
		// that is over changes nothing.
		for _, cm := range sc.Commands {
			if cm.Status != gridcontrol.StatusDone {
				ids = append(ids, sc.ScheduleID)
				break
			}
		}
	}
	return ids, nil
}

func (s gridSubmitter) End(ctx context.Context, plantID, id string, by gridinput.Origin) error {
	return s.c.Cancel(ctx, plantID, id, inputOrigin(by))
}

// demoInputs is the demo's ripple-control receiver on the I/O module "rcr"
// (sim.DemoConfig): contacts K1..K4 on inputs 0..3 mean 100, 60, 30 and
// 0 % (§9 EEG), as opModMaxLimW in % of rated power. The stages are shares
// of the plant's installed power, which the inverters' limit expresses
// directly; it needs no grid meter (so a meter fault does not touch it),
// and at the same % it is never looser than FeedInLimit, since the output
// is at least the export. Tools flip a contact by writing the module's
// coil N over Modbus. Lost for 60 s, the failsafe is the most restrictive
// action, 0 %.
func demoInputs(p *sim.Plant) []config.Input {
	rcr := p.Device("rcr")
	if rcr == nil {
		return nil
	}
	host, port, _ := splitListen(rcr.Addr())
	in := config.NewInput()
	in.ID, in.Plant, in.Name = "rcr", "demo", "Ripple-control receiver"
	in.Host, in.Port, in.Unit = host, port, int(rcr.Unit())
	in.Contacts = map[string]int{"K1": 0, "K2": 1, "K3": 2, "K4": 3}
	for i, v := range []float64{100, 60, 30, 0} {
		in.Actions = append(in.Actions, inputconfig.Action{Contacts: []string{fmt.Sprintf("K%d", i+1)},
			Command: "opModMaxLimW", Value: v, Unit: "%"})
	}
	return []config.Input{in}
}

// inputsChanged reports whether a reload changes the inputs, which take
// effect at the next start only (a running loop holds its window).
func inputsChanged(a, b *config.Config, log *slog.Logger) bool {
	if reflect.DeepEqual(a.Inputs, b.Inputs) {
		return false
	}
	log.Warn("the inputs changed in the config: the change takes effect at the next start (systemctl restart plantd)")
	return true
}
