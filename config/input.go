package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Input is an input device (inputs[]): a Modbus I/O module whose
// digital inputs carry the grid operator's own channels, the relay
// contacts of a ripple-control receiver (§9 EEG) or of a control box
// (§14a EnWG). Each pattern of closed contacts becomes a grid-control
// window of the grid operator's role (package gridinput).
type Input struct {
	// ID names the input in the plant log and in the windows it creates
	// ("input:<id>/K3"); required, unique among inputs and devices.
	ID string `yaml:"id"`
	// Plant is the plant whose inverters the signal limits (required with
	// more than one plant).
	Plant string `yaml:"plant"`
	// Name is a label (default: the id).
	Name string `yaml:"name"`
	// Host, Port (default 502) and Unit (default 1) address the I/O
	// module over Modbus TCP, with the same rules as a device's; it shares
	// the connection with the devices behind the same address. Framing
	// rtu reads it through an RTU-over-TCP converter, and Serial instead
	// of Host puts it on an RS485 line, as for a device (devices[].framing
	// and .serial); the module then shares the line's one master with the
	// devices on it, whose settings it must match.
	Host    string  `yaml:"host"`
	Port    int     `yaml:"port"`
	Unit    int     `yaml:"unit"`
	Framing string  `yaml:"framing"`
	Serial  *Serial `yaml:"serial,omitempty"`
	// Timeout of one request (100ms..1m, default 1s).
	Timeout time.Duration `yaml:"timeout"`
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
	Actions []InputAction `yaml:"actions"`
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
	Failsafe *InputAction `yaml:"failsafe"`
	// Dimming are contacts of a §14a control box: any of them closed asks
	// to dim the plant's controllable consumers. They are in no action.
	Dimming []string `yaml:"dimming"`
}

// InputAction is one row of an input's pattern table, or its failsafe.
type InputAction struct {
	// Contacts closed together and alone (not in a failsafe).
	Contacts []string `yaml:"contacts"`
	// Command is FeedInLimit or opModMaxLimW.
	Command string `yaml:"command"`
	// Value in Unit: "%" of rated power (0..100, the default unit) or
	// "W" (0..100000000).
	Value float64 `yaml:"value"`
	Unit  string  `yaml:"unit"`
}

// Input sources and defaults.
const (
	InputSourceDiscrete  = "discreteInputs"
	InputSourceRegisters = "inputRegisters"

	defaultInputPoll      = time.Second
	defaultInputTimeout   = time.Second
	defaultInputLossGrace = 60 * time.Second
	maxInputIndex         = 255
)

func (in *Input) setDefaults() {
	in.Port, in.Unit, in.Timeout = defaultPort, defaultUnit, defaultInputTimeout
	in.Source, in.PollInterval, in.LossGrace = InputSourceDiscrete, defaultInputPoll, defaultInputLossGrace
}

func (a *InputAction) setDefaults() { a.Unit = "%" }

// NewInput returns an input with its defaults set, for configs built in
// code (the demo).
func NewInput() Input {
	var in Input
	in.setDefaults()
	return in
}

// Device is the I/O module as a device's address: the fields the Modbus
// endpoint is made from (host, port, framing or serial line, unit,
// timeout), with a device's rules.
func (in Input) Device() Device {
	return Device{ID: in.ID, Host: in.Host, Port: in.Port, Unit: in.Unit, Framing: in.Framing, Serial: in.Serial,
		Timeout: in.Timeout, Enabled: true}
}

// FailsafeAction is the failsafe in effect: the configured one, else the
// most restrictive (lowest) action; nil without actions.
func (in Input) FailsafeAction() *InputAction {
	if in.Failsafe != nil {
		return in.Failsafe
	}
	var best *InputAction
	for i := range in.Actions {
		if best == nil || in.Actions[i].Value < best.Value {
			best = &in.Actions[i]
		}
	}
	return best
}

// inputs checks the inputs section.
func (v *validator) inputs() {
	plants, devs := v.c.ids()
	ids := map[string]string{}
	for i, in := range v.c.Inputs {
		path := fmt.Sprintf("inputs[%d]", i)
		if v.id(path+".id", in.ID) {
			v.unique(ids, in.ID, path+".id", path, "input id")
			if devs[in.ID] {
				v.add(path+".id", "%q is a device's id too", in.ID)
			}
		}
		switch {
		case in.Plant == "" && len(v.c.Plants) > 1:
			v.add(path+".plant", "required when more than one plant is configured")
		case in.Plant == "" || plants[in.Plant]:
		default:
			v.add(path+".plant", "unknown plant %q", in.Plant)
		}
		v.inputAddress(path, in)
		v.duration(path+".timeout", in.Timeout, 100*time.Millisecond, time.Minute)
		v.duration(path+".pollInterval", in.PollInterval, 100*time.Millisecond, 10*time.Second)
		v.duration(path+".lossGrace", in.LossGrace, time.Second, time.Hour)
		switch {
		case in.Debounce < 0:
			v.add(path+".debounce", "%s is negative (0 takes a pattern at its first read)", fmtDuration(in.Debounce))
		case in.Debounce > in.LossGrace:
			v.add(path+".debounce", "%s is longer than lossGrace (%s): a signal would wait out its debounce longer than a lost module holds its state", fmtDuration(in.Debounce), fmtDuration(in.LossGrace))
		}
		switch in.Source {
		case InputSourceDiscrete, InputSourceRegisters:
		default:
			v.add(path+".source", "%q is not a source (discreteInputs or inputRegisters)", in.Source)
		}
		if in.Address < 0 || in.Address > 0xFFFF {
			v.add(path+".address", "%d is not a Modbus address (0..65535)", in.Address)
		}
		v.inputContacts(path, in)
		v.inputActions(path, in)
	}
}

// inputAddress checks how the I/O module is reached, with a device's
// rules, and that it agrees with the devices it shares a connection or a
// serial line with (framing, line settings).
func (v *validator) inputAddress(path string, in Input) {
	d := in.Device()
	var ok bool
	if d.Serial != nil {
		ok = v.serial(path, d)
	} else {
		ok = v.host(path+".host", d.Host, "a host name or IP address, or give serial")
		if d.Port < 1 || d.Port > 65535 {
			v.add(path+".port", "%d is not a TCP port", d.Port)
			ok = false
		}
		if !ValidUnit(d.Unit) {
			v.add(path+".unit", "%d is not a Modbus unit id (%s)", d.Unit, UnitRule)
		}
	}
	if !v.framing(path, d) || !ok {
		return
	}
	// The devices, then the inputs before this one.
	type peer struct {
		path string
		d    Device
	}
	var peers []peer
	for i, o := range v.c.Devices {
		if o.Enabled {
			peers = append(peers, peer{fmt.Sprintf("devices[%d]", i), o})
		}
	}
	for i, o := range v.c.Inputs {
		if p := fmt.Sprintf("inputs[%d]", i); p != path {
			peers = append(peers, peer{p, o.Device()})
			continue
		}
		break
	}
	for _, pr := range peers {
		o, other := pr.d, pr.path
		switch {
		case d.Serial != nil && o.Serial != nil && o.Serial.Port == d.Serial.Port && *o.Serial != *d.Serial:
			v.add(path+".serial", "%s differs from the serial settings of %s, on the same line %s",
				describeSerial(d.Serial), v.where(other), d.Serial.Port)
			return
		case d.Serial == nil && o.Serial == nil && sameEndpoint(o, d) && framingOf(o) != framingOf(d):
			v.add(path+".framing", "%s differs from the framing %s of %s, which shares the connection to %s",
				framingOf(d), framingOf(o), v.where(other), d.Address())
			return
		}
	}
}

// inputContacts checks an input's contact names and indices, and its
// dimming contacts.
func (v *validator) inputContacts(path string, in Input) {
	if len(in.Contacts) == 0 {
		v.add(path+".contacts", "required: name the inputs, e.g. {K1: 0, K2: 1}")
	}
	names := make([]string, 0, len(in.Contacts))
	for name := range in.Contacts {
		names = append(names, name)
	}
	slices.Sort(names)
	byIndex := map[int]string{}
	for _, name := range names {
		idx := in.Contacts[name]
		f := path + ".contacts." + name
		switch {
		case name == "" || strings.ContainsAny(name, "+/ "):
			v.add(f, "%q is not a contact name (no +, / or space)", name)
		case idx < 0 || idx > maxInputIndex:
			v.add(f, "input %d is out of range (0..%d)", idx, maxInputIndex)
		case byIndex[idx] != "":
			v.add(f, "input %d is contact %s already", idx, byIndex[idx])
		default:
			byIndex[idx] = name
		}
	}
	seen := map[string]bool{}
	for j, c := range in.Dimming {
		f := fmt.Sprintf("%s.dimming[%d]", path, j)
		switch _, ok := in.Contacts[c]; {
		case !ok:
			v.add(f, "unknown contact %q (contacts: %s)", c, strings.Join(names, ", "))
		case seen[c]:
			v.add(f, "contact %s is listed twice", c)
		}
		seen[c] = true
	}
}

// inputActions checks an input's pattern table and failsafe.
func (v *validator) inputActions(path string, in Input) {
	if len(in.Actions) == 0 && len(in.Dimming) == 0 {
		v.add(path+".actions", "at least one action is required (contacts, command, value, unit), or a dimming contact")
	}
	sets := map[string]string{}
	for j, a := range in.Actions {
		f := fmt.Sprintf("%s.actions[%d]", path, j)
		if len(a.Contacts) == 0 {
			v.add(f+".contacts", "required: the contacts closed for this action (no contact closed is no limit)")
		}
		for k, c := range a.Contacts {
			switch _, ok := in.Contacts[c]; {
			case !ok:
				v.add(fmt.Sprintf("%s.contacts[%d]", f, k), "unknown contact %q", c)
			case slices.Contains(in.Dimming, c):
				v.add(fmt.Sprintf("%s.contacts[%d]", f, k), "contact %s is a dimming contact", c)
			}
		}
		set := slices.Clone(a.Contacts)
		slices.Sort(set)
		key := strings.Join(slices.Compact(set), "+")
		if prev, ok := sets[key]; ok && key != "" {
			v.add(f+".contacts", "the pattern %s is %s already", key, v.where(prev))
		} else {
			sets[key] = f
		}
		v.inputAction(f, a)
		if j > 0 && (a.Command != in.Actions[0].Command || a.Unit != in.Actions[0].Unit) {
			v.add(f+".command", "every action of an input has one command and unit (%s in %s, as actions[0])", in.Actions[0].Command, in.Actions[0].Unit)
		}
	}
	if fs := in.Failsafe; fs != nil {
		f := path + ".failsafe"
		if len(fs.Contacts) > 0 {
			v.add(f+".contacts", "a failsafe has no contacts")
		}
		v.inputAction(f, *fs)
		if len(in.Actions) > 0 && (fs.Command != in.Actions[0].Command || fs.Unit != in.Actions[0].Unit) {
			v.add(f+".command", "the failsafe has the actions' command and unit (%s in %s)", in.Actions[0].Command, in.Actions[0].Unit)
		}
		if fs.Unit == "%" && fs.Value >= 100 {
			v.add(f+".value", "a failsafe of %v %% is no limit: give one below 100 %%", fs.Value)
		}
	} else if fs := in.FailsafeAction(); fs != nil && fs.Unit == "%" && fs.Value >= 100 {
		v.add(path+".failsafe", "required: every action is 100 %%, and the default failsafe (the most restrictive action) would be no limit")
	}
}

// inputAction checks one action's command, unit and value.
func (v *validator) inputAction(f string, a InputAction) {
	switch a.Command {
	case "FeedInLimit", "opModMaxLimW":
	case "":
		v.add(f+".command", "required (FeedInLimit or opModMaxLimW)")
	default:
		v.add(f+".command", "%q is not an input command (FeedInLimit or opModMaxLimW)", a.Command)
	}
	switch a.Unit {
	case "%":
		if a.Value < 0 || a.Value > 100 {
			v.add(f+".value", "%v %% is out of range (0..100)", a.Value)
		}
	case "W":
		if a.Value < 0 || a.Value > 1e8 {
			v.add(f+".value", "%v W is out of range (0..100000000)", a.Value)
		}
	default:
		v.add(f+".unit", "%q is not a unit (%% or W)", a.Unit)
	}
}
