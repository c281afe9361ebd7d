package inputconfig

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"plantd/internal/confcheck"
)

// Settings are an input's settings in plantd's config file (inputs[])
// beyond the I/O module's address: where the contacts are read, their
// names, the pattern table and the failsafe. config.Input embeds them
// inline, next to the address (host, port, unit, framing or serial line,
// timeout), which config checks with a device's rules; cmd/plantd makes
// a Spec of them.
type Settings struct {
	// Source is where the contacts are read: discreteInputs (function 2,
	// the default) or inputRegisters (function 4; input 16·r+b is bit b of
	// register r, least significant first). Address is the first discrete
	// input or register read (0..65535, default 0).
	Source  string `yaml:"source"`
	Address int    `yaml:"address"`
	// PollInterval is how often the inputs are read (100ms..10s, default
	// 1s).
	PollInterval time.Duration `yaml:"pollInterval"`
	// Contacts names the inputs: contact name (K1..) to input index,
	// counted from Address (0..255); required, each index once.
	Contacts map[string]int `yaml:"contacts"`
	// Actions is the pattern table: the limit each set of contacts,
	// closed together and alone, means; at least one. No contact closed
	// means no limit (the input's window ends), and so does an action of
	// 100 %. A set of closed contacts the table does not list is an
	// invalid pattern: logged, and the most restrictive action naming one
	// of them applies. Every action has the same command and unit. A
	// control box that only dims (Dimming) needs none.
	Actions []Action `yaml:"actions"`
	// LossGrace is how long the last valid state holds when the module
	// does not answer (1s..1h, default 60s); then Failsafe applies.
	LossGrace time.Duration `yaml:"lossGrace"`
	// Debounce is how long a pattern of contacts (the dimming contacts
	// included) must be read unchanged before it acts (0..lossGrace,
	// default 0: at the first read). A contact that chatters for less
	// than it makes no window; every change waits it out, on top of the
	// poll.
	Debounce time.Duration `yaml:"debounce"`
	// Failsafe is the limit after LossGrace without an answer (command,
	// value, unit; below 100 %): by default the most restrictive action.
	// Never no limit.
	Failsafe *Action `yaml:"failsafe"`
	// Dimming are contacts of a §14a control box: any of them closed asks
	// to dim the plant's controllable consumers. They are in no action.
	Dimming []string `yaml:"dimming"`
}

// Defaults of an input's settings; gridinput.New applies the same to a
// Spec that leaves them zero.
const (
	DefaultPollInterval = time.Second
	DefaultLossGrace    = 60 * time.Second
)

// Where the contacts are read (Settings.Source).
const (
	SourceDiscrete  = "discreteInputs"
	SourceRegisters = "inputRegisters"
)

// maxIndex is the highest input index a contact may name.
const maxIndex = 255

// SetDefaults sets the defaults of an input's settings.
func (s *Settings) SetDefaults() {
	s.Source, s.PollInterval, s.LossGrace = SourceDiscrete, DefaultPollInterval, DefaultLossGrace
}

// SetDefaults sets the default of an action read from the config: unit %.
func (a *Action) SetDefaults() { a.Unit = "%" }

// FailsafeAction is the failsafe in effect: the configured one, else the
// most restrictive (lowest) action; nil without actions.
func (s Settings) FailsafeAction() *Action {
	if s.Failsafe != nil {
		return s.Failsafe
	}
	var best *Action
	for i := range s.Actions {
		if best == nil || s.Actions[i].Value < best.Value {
			best = &s.Actions[i]
		}
	}
	return best
}

// Validate checks the settings; c is at inputs[i].
func (s Settings) Validate(c confcheck.Checker) {
	c.Duration("pollInterval", s.PollInterval, 100*time.Millisecond, 10*time.Second)
	c.Duration("lossGrace", s.LossGrace, time.Second, time.Hour)
	switch {
	case s.Debounce < 0:
		c.Add("debounce", "%s is negative (0 takes a pattern at its first read)", confcheck.FmtDuration(s.Debounce))
	case s.Debounce > s.LossGrace:
		c.Add("debounce", "%s is longer than lossGrace (%s): a signal would wait out its debounce longer than a lost module holds its state", confcheck.FmtDuration(s.Debounce), confcheck.FmtDuration(s.LossGrace))
	}
	switch s.Source {
	case SourceDiscrete, SourceRegisters:
	default:
		c.Add("source", "%q is not a source (discreteInputs or inputRegisters)", s.Source)
	}
	if s.Address < 0 || s.Address > 0xFFFF {
		c.Add("address", "%d is not a Modbus address (0..65535)", s.Address)
	}
	s.checkContacts(c)
	s.checkActions(c)
}

// checkContacts checks the contact names and indices, and the dimming
// contacts.
func (s Settings) checkContacts(c confcheck.Checker) {
	if len(s.Contacts) == 0 {
		c.Add("contacts", "required: name the inputs, e.g. {K1: 0, K2: 1}")
	}
	names := make([]string, 0, len(s.Contacts))
	for name := range s.Contacts {
		names = append(names, name)
	}
	slices.Sort(names)
	byIndex := map[int]string{}
	for _, name := range names {
		idx := s.Contacts[name]
		f := "contacts." + name
		switch {
		case name == "" || strings.ContainsAny(name, "+/ "):
			c.Add(f, "%q is not a contact name (no +, / or space)", name)
		case idx < 0 || idx > maxIndex:
			c.Add(f, "input %d is out of range (0..%d)", idx, maxIndex)
		case byIndex[idx] != "":
			c.Add(f, "input %d is contact %s already", idx, byIndex[idx])
		default:
			byIndex[idx] = name
		}
	}
	seen := map[string]bool{}
	for j, k := range s.Dimming {
		f := fmt.Sprintf("dimming[%d]", j)
		switch _, ok := s.Contacts[k]; {
		case !ok:
			c.Add(f, "unknown contact %q (contacts: %s)", k, strings.Join(names, ", "))
		case seen[k]:
			c.Add(f, "contact %s is listed twice", k)
		}
		seen[k] = true
	}
}

// checkActions checks the pattern table and the failsafe.
func (s Settings) checkActions(c confcheck.Checker) {
	if len(s.Actions) == 0 && len(s.Dimming) == 0 {
		c.Add("actions", "at least one action is required (contacts, command, value, unit), or a dimming contact")
	}
	sets := map[string]string{}
	for j, a := range s.Actions {
		f := fmt.Sprintf("actions[%d]", j)
		if len(a.Contacts) == 0 {
			c.Add(f+".contacts", "required: the contacts closed for this action (no contact closed is no limit)")
		}
		for k, name := range a.Contacts {
			switch _, ok := s.Contacts[name]; {
			case !ok:
				c.Add(fmt.Sprintf("%s.contacts[%d]", f, k), "unknown contact %q", name)
			case slices.Contains(s.Dimming, name):
				c.Add(fmt.Sprintf("%s.contacts[%d]", f, k), "contact %s is a dimming contact", name)
			}
		}
		set := slices.Clone(a.Contacts)
		slices.Sort(set)
		key := strings.Join(slices.Compact(set), "+")
		if prev, ok := sets[key]; ok && key != "" {
			c.Add(f+".contacts", "the pattern %s is %s already", key, c.Where(prev))
		} else {
			sets[key] = f
		}
		a.check(c.In(f))
		if j > 0 && (a.Command != s.Actions[0].Command || a.Unit != s.Actions[0].Unit) {
			c.Add(f+".command", "every action of an input has one command and unit (%s in %s, as actions[0])", s.Actions[0].Command, s.Actions[0].Unit)
		}
	}
	if fs := s.Failsafe; fs != nil {
		fc := c.In("failsafe")
		if len(fs.Contacts) > 0 {
			fc.Add("contacts", "a failsafe has no contacts")
		}
		fs.check(fc)
		if len(s.Actions) > 0 && (fs.Command != s.Actions[0].Command || fs.Unit != s.Actions[0].Unit) {
			fc.Add("command", "the failsafe has the actions' command and unit (%s in %s)", s.Actions[0].Command, s.Actions[0].Unit)
		}
		if fs.Unit == "%" && fs.Value >= 100 {
			fc.Add("value", "a failsafe of %v %% is no limit: give one below 100 %%", fs.Value)
		}
	} else if fs := s.FailsafeAction(); fs != nil && fs.Unit == "%" && fs.Value >= 100 {
		c.Add("failsafe", "required: every action is 100 %%, and the default failsafe (the most restrictive action) would be no limit")
	}
}

// check checks one action's command, unit and value; c is at the action.
func (a Action) check(c confcheck.Checker) {
	switch a.Command {
	case CommandFeedInLimit, CommandOpModMaxLimW:
	case "":
		c.Add("command", "required (FeedInLimit or opModMaxLimW)")
	default:
		c.Add("command", "%q is not an input command (FeedInLimit or opModMaxLimW)", a.Command)
	}
	switch a.Unit {
	case "%":
		if a.Value < 0 || a.Value > 100 {
			c.Add("value", "%v %% is out of range (0..100)", a.Value)
		}
	case "W":
		if a.Value < 0 || a.Value > 1e8 {
			c.Add("value", "%v W is out of range (0..100000000)", a.Value)
		}
	default:
		c.Add("unit", "%q is not a unit (%% or W)", a.Unit)
	}
}
