package gridinput

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"plantd/gridinput/inputconfig"
	"plantd/plant"
)

// DefaultWindow is the default length of an input's windows (the poll
// interval's and the loss grace's defaults are inputconfig's).
const DefaultWindow = 24 * time.Hour

// RoleGridOperator is the role of the schedules an input submits.
const RoleGridOperator = "gridoperator"

// Origin names who sends a schedule: Name "input:<id>/<contacts>" (or
// "/failsafe"), its role, and Input, the input's id: its windows are a
// precedence channel of their own, which only the input ends.
type Origin struct{ Name, Role, Input string }

// Submitter stores the input's windows: grid control behind an adapter in
// cmd/plantd. Submit stores a window of the action from now for length,
// without the eligibility check, and returns its id and its end; End
// ends a schedule's open windows now; Open lists the schedules with a
// window not yet ended whose creator's name starts with prefix (an
// earlier run's windows of this input).
type Submitter interface {
	Submit(ctx context.Context, plantID string, a inputconfig.Action, length time.Duration, by Origin) (id string, end time.Time, err error)
	End(ctx context.Context, plantID, scheduleID string, by Origin) error
	Open(ctx context.Context, plantID, prefix string) ([]string, error)
}

// Dimmer takes the §14a dimming signal of a plant's control box.
type Dimmer interface {
	Dim(plantID string, on bool)
}

// Reader reads an input device's inputs: index i of the answer is input i
// of the contacts' numbering.
type Reader interface {
	ReadInputs(ctx context.Context) ([]bool, error)
}

// Spec is one input device.
type Spec struct {
	ID, PlantID string
	Reader      Reader
	// Contacts maps a contact name (K1..) to its input index.
	Contacts map[string]int
	// Actions is the pattern table; Failsafe applies after LossGrace
	// without an answer (nil: the most restrictive action).
	Actions  []inputconfig.Action
	Failsafe *inputconfig.Action
	// Dimming are the contacts that carry the §14a dimming signal.
	Dimming []string
	// PollInterval, LossGrace and Window (the length of a submitted
	// window) default to inputconfig.DefaultPollInterval,
	// inputconfig.DefaultLossGrace and DefaultWindow.
	PollInterval, LossGrace, Window time.Duration
	// Debounce is how long a pattern (dimming contacts included) must be
	// read unchanged before it acts; 0: at its first read.
	Debounce time.Duration
}

// Deps are an input's collaborators. Now is the controller's clock (the
// windows' renewal); polling and the loss grace run on the wall clock.
type Deps struct {
	Submitter Submitter
	Dimmer    Dimmer // nil: dimming contacts are read and logged only
	Log       func(plant.LogEntry)
	Now       func() time.Time
}

// Input is the loop of one input device.
type Input struct {
	spec Spec
	deps Deps
	log  *slog.Logger

	// held is what the loop holds in grid control: the action (nil: no
	// limit), its schedule and window end.
	held    *inputconfig.Action
	heldID  string
	heldEnd time.Time
	heldBy  Origin
	// stale are the windows an earlier run of this input left open: ended
	// once the contacts (or the failsafe) decide.
	stale []string
	// want is the decision of the last good poll.
	want      Decision
	haveWant  bool
	lastGood  time.Time // wall
	lost      bool      // polls fail (logged)
	failsafe  bool      // the grace ran out (logged)
	dim, dimK bool      // dimming state passed on, and whether it was
	// deb holds a new pattern until it stands for Debounce.
	deb debounce
}

// New checks a spec and makes its loop.
func New(spec Spec, deps Deps, log *slog.Logger) (*Input, error) {
	switch {
	case spec.ID == "" || spec.PlantID == "":
		return nil, errors.New("gridinput: id and plant are required")
	case spec.Reader == nil || deps.Submitter == nil:
		return nil, fmt.Errorf("gridinput %s: a reader and a submitter are required", spec.ID)
	case len(spec.Actions) == 0 && len(spec.Dimming) == 0:
		return nil, fmt.Errorf("gridinput %s: no actions and no dimming contact", spec.ID)
	case spec.Debounce < 0:
		return nil, fmt.Errorf("gridinput %s: negative debounce %s", spec.ID, spec.Debounce)
	}
	for _, a := range spec.Actions {
		for _, c := range a.Contacts {
			if _, ok := spec.Contacts[c]; !ok {
				return nil, fmt.Errorf("gridinput %s: action names unknown contact %q", spec.ID, c)
			}
		}
	}
	if spec.PollInterval <= 0 {
		spec.PollInterval = inputconfig.DefaultPollInterval
	}
	if spec.LossGrace <= 0 {
		spec.LossGrace = inputconfig.DefaultLossGrace
	}
	if spec.Window <= 0 {
		spec.Window = DefaultWindow
	}
	if spec.Failsafe == nil {
		spec.Failsafe = MostRestrictive(spec.Actions)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Log == nil {
		deps.Log = func(plant.LogEntry) {}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Input{spec: spec, deps: deps, log: log.With("input", spec.ID), deb: debounce{d: spec.Debounce}}, nil
}

// Run polls until ctx ends; it returns nil then. The window it holds stays
// in grid control (it ends on its own, at most Window later): a restart
// within it finds the contacts as they are and takes over.
func (in *Input) Run(ctx context.Context) error {
	in.lastGood = time.Now()
	stale, err := in.deps.Submitter.Open(ctx, in.spec.PlantID, "input:"+in.spec.ID+"/")
	if err != nil {
		in.log.Warn("list the input's windows of an earlier run", "err", err)
	}
	in.stale = stale
	t := time.NewTicker(in.spec.PollInterval)
	defer t.Stop()
	// settle wakes the loop when a pattern waiting out its debounce
	// stands, between two polls.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		if at, ok := in.step(ctx); ok {
			settle.Reset(time.Until(at))
		} else {
			settle.Stop()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-settle.C:
		}
	}
}

// step is one poll: read, decide, and bring grid control to the decision.
// While a new pattern waits out its debounce, what was decided before
// holds, and step returns when the pattern stands (ok).
func (in *Input) step(ctx context.Context) (settle time.Time, ok bool) {
	bits, err := in.spec.Reader.ReadInputs(ctx)
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	now := time.Now()
	if err != nil {
		in.deb.reset() // after the loss, a pattern waits out the debounce again
		in.lose(ctx, now, err)
		return time.Time{}, false
	}
	if in.lost {
		in.entry(plant.LevelInfo, "InputRecovered", fmt.Sprintf("input %s answers again: its contacts decide again", in.spec.ID))
		in.log.Info("input device answers again")
	}
	in.lost, in.lastGood = false, now
	closed, dim := in.contacts(bits)
	if at, stands := in.deb.see(fmt.Sprintf("%s dim=%t", strings.Join(closed, "+"), dim), now); !stands {
		if in.heldID != "" { // what is held stays, renewed
			in.hold(ctx, in.held, in.heldBy.Name)
		}
		return at, true
	}
	in.failsafe = false
	d := Resolve(in.spec.Actions, closed)
	if d.Invalid && (!in.haveWant || !in.want.Invalid || !slices.Equal(in.want.Closed, d.Closed)) {
		what := "no limit"
		if d.Action != nil {
			what = describe(d.Action)
		}
		in.entry(plant.LevelError, "InputInvalidPattern", fmt.Sprintf("input %s: contacts %s closed together is no pattern of the table: applying the most restrictive of their actions, %s", in.spec.ID, d.Source(), what))
		in.log.Error("invalid input pattern", "closed", d.Source(), "applied", what)
	}
	in.want, in.haveWant = d, true
	in.dimTo(dim)
	in.hold(ctx, d.Action, "input:"+in.spec.ID+"/"+d.Source())
	return time.Time{}, false
}

// lose handles a failed poll: hold the last valid state for the grace,
// then the failsafe.
func (in *Input) lose(ctx context.Context, now time.Time, err error) {
	if !in.lost {
		in.lost = true
		in.entry(plant.LevelWarning, "InputLost", fmt.Sprintf("input %s does not answer (%v): holding its last state for %s", in.spec.ID, err, in.spec.LossGrace))
		in.log.Warn("input device lost", "err", err, "grace", in.spec.LossGrace)
	}
	if now.Sub(in.lastGood) < in.spec.LossGrace {
		if in.haveWant { // renewals go on
			in.hold(ctx, in.want.Action, in.heldBy.Name)
		}
		return
	}
	if !in.failsafe {
		in.failsafe = true
		in.entry(plant.LevelError, "InputFailsafe", fmt.Sprintf("input %s lost for %s: applying its failsafe, %s", in.spec.ID, in.spec.LossGrace, describe(in.spec.Failsafe)))
		in.log.Error("input device lost beyond its grace: failsafe", "failsafe", describe(in.spec.Failsafe))
	}
	if len(in.spec.Dimming) > 0 {
		in.dimTo(true)
	}
	in.hold(ctx, in.spec.Failsafe, "input:"+in.spec.ID+"/failsafe")
}

// contacts returns the closed pattern contacts and whether a dimming one
// is closed.
func (in *Input) contacts(bits []bool) (closed []string, dim bool) {
	for name, i := range in.spec.Contacts {
		if i < 0 || i >= len(bits) || !bits[i] {
			continue
		}
		if slices.Contains(in.spec.Dimming, name) {
			dim = true
			continue
		}
		closed = append(closed, name)
	}
	sort.Strings(closed)
	return closed, dim
}

func (in *Input) dimTo(on bool) {
	if in.dimK && in.dim == on {
		return
	}
	if len(in.spec.Dimming) == 0 {
		return
	}
	in.dim, in.dimK = on, true
	in.log.Info("dimming signal", "on", on)
	if in.deps.Dimmer != nil {
		in.deps.Dimmer.Dim(in.spec.PlantID, on)
	}
}

// hold brings grid control to the action a (nil: none): a new window when
// it differs from what is held or the held one is past half its length,
// then the old one ended; or the held one ended for no limit. Failures
// are logged and retried at the next poll.
func (in *Input) hold(ctx context.Context, a *inputconfig.Action, name string) {
	by := Origin{Name: name, Role: RoleGridOperator, Input: in.spec.ID}
	if a == nil {
		if in.heldID == "" {
			in.held = nil
			in.endStale(ctx, by)
			return
		}
		by.Name = in.heldBy.Name
		if err := in.deps.Submitter.End(ctx, in.spec.PlantID, in.heldID, by); err != nil {
			in.log.Warn("end the input's window", "schedule", in.heldID, "err", err)
			return
		}
		in.entry(plant.LevelInfo, "InputReleased", fmt.Sprintf("input %s: no limit signalled: schedule %s ended", in.spec.ID, in.heldID))
		in.log.Info("input released", "schedule", in.heldID)
		in.held, in.heldID, in.heldEnd = nil, "", time.Time{}
		return
	}
	renew := in.heldID != "" && !in.deps.Now().Before(in.heldEnd.Add(-in.spec.Window/2))
	if same(a, in.held) && in.heldID != "" && !renew {
		return
	}
	id, end, err := in.deps.Submitter.Submit(ctx, in.spec.PlantID, *a, in.spec.Window, by)
	if err != nil {
		in.log.Warn("submit the input's window", "err", err)
		return
	}
	old := in.heldID
	if !same(a, in.held) || old == "" {
		in.entry(plant.LevelInfo, "InputApplied", fmt.Sprintf("input %s: %s by %s (schedule %s)", in.spec.ID, describe(a), by.Name, id))
		in.log.Info("input applied", "action", describe(a), "by", by.Name, "schedule", id)
	}
	in.held, in.heldID, in.heldEnd, in.heldBy = a, id, end, by
	if old != "" {
		if err := in.deps.Submitter.End(ctx, in.spec.PlantID, old, by); err != nil {
			in.log.Warn("end the input's previous window", "schedule", old, "err", err)
		}
	}
	in.endStale(ctx, by)
}

// endStale ends the windows an earlier run left open, now that this run
// holds what the contacts say (a failure is tried again at the next poll).
func (in *Input) endStale(ctx context.Context, by Origin) {
	keep := in.stale[:0]
	for _, id := range in.stale {
		if err := in.deps.Submitter.End(ctx, in.spec.PlantID, id, by); err != nil {
			in.log.Warn("end a window of the input's earlier run", "schedule", id, "err", err)
			keep = append(keep, id)
			continue
		}
		in.log.Info("window of an earlier run ended", "schedule", id)
	}
	in.stale = keep
}

func (in *Input) entry(level, code, msg string) {
	in.deps.Log(plant.LogEntry{Level: level, Code: code, Message: msg, PlantID: in.spec.PlantID, DeviceID: in.spec.ID})
}

// describe says an action: "opModMaxLimW 30 %".
func describe(a *inputconfig.Action) string {
	if a == nil {
		return "no limit"
	}
	return fmt.Sprintf("%s %g %s", a.Command, a.Value, a.Unit)
}
