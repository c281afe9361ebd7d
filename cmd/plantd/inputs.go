package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"plantd/config"
	"plantd/devices/sim"
	"plantd/gridcontrol"
	"plantd/gridinput"
	"plantd/plant"
)

// gridInputs runs the loops of the config's inputs (the grid operator's
// contacts on I/O modules); nil without inputs.
type gridInputs struct{ loops []*gridinput.Input }

// newInputs makes the loop of every input, reading through the Modbus
// pool (shared with the devices at the same address) and submitting to
// grid control. The §14a dimming signal goes to dim (nil: logged only).
func (d *daemon) newInputs(cfg *config.Config, dim gridinput.Dimmer) (*gridInputs, error) {
	if len(cfg.Inputs) == 0 {
		return nil, nil
	}
	out := &gridInputs{}
	for _, ic := range cfg.Inputs {
		spec := inputSpec(ic)
		ep := d.pool.Endpoint(endpointOf(ic.Device()))
		spec.Reader = gridinput.Bits{Client: ep.Unit(byte(ic.Unit), ic.Timeout), Addr: uint16(ic.Address),
			Count: inputCount(ic), Registers: ic.Source == config.InputSourceRegisters}
		in, err := gridinput.New(spec, gridinput.Deps{
			Submitter: gridSubmitter{d.grid},
			Dimmer:    dim,
			Log:       func(e plant.LogEntry) { e.Time = d.now().UTC(); d.logEntry(e) },
			Now:       d.now,
		}, d.log.With("component", "gridinput"))
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", ic.ID, err)
		}
		out.loops = append(out.loops, in)
	}
	return out, nil
}

// inputSpec maps an input's config onto its loop's spec (without the
// reader).
func inputSpec(ic config.Input) gridinput.Spec {
	act := func(a config.InputAction) gridinput.Action {
		return gridinput.Action{Contacts: a.Contacts, Command: a.Command, Value: a.Value, Unit: a.Unit}
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
	if ic.Source == config.InputSourceRegisters {
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

func (s gridSubmitter) Submit(ctx context.Context, plantID string, a gridinput.Action, length time.Duration, by gridinput.Origin) (string, time.Time, error) {
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
		in.Actions = append(in.Actions, config.InputAction{Contacts: []string{fmt.Sprintf("K%d", i+1)},
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
