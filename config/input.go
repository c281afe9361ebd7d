package config

import (
	"fmt"
	"time"

	"plantd/gridinput/inputconfig"
)

// Input is an input device (inputs[]): a Modbus I/O module whose
// digital inputs carry the grid operator's own channels, the relay
// contacts of a ripple-control receiver (§9 EEG) or of a control box
// (§14a EnWG). Each pattern of closed contacts becomes a grid-control
// window of the grid operator's role (package gridinput; its config
// section, inputconfig.Settings, holds the contacts, the pattern table
// and the failsafe, and checks them).
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
	// Settings are the rest: source, address, pollInterval, contacts,
	// actions, lossGrace, debounce, failsafe and dimming
	// (inputconfig.Settings).
	inputconfig.Settings `yaml:",inline"`
}

const defaultInputTimeout = time.Second

func (in *Input) setDefaults() {
	in.Port, in.Unit, in.Timeout = defaultPort, defaultUnit, defaultInputTimeout
	in.Settings.SetDefaults()
}

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

// inputs checks the inputs section: the id, the plant and the module's
// address here (rules shared with the devices), the rest by
// inputconfig.Settings.
func (v *validator) inputs() {
	plants, devs := v.c.ids()
	ids := map[string]string{}
	for i, in := range v.c.Inputs {
		path := fmt.Sprintf("inputs[%d]", i)
		if v.id(path+".id", in.ID) {
			v.ck.Unique(ids, in.ID, path+".id", path, "input id")
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
		v.ck.Duration(path+".timeout", in.Timeout, 100*time.Millisecond, time.Minute)
		in.Settings.Validate(v.ck.In(path))
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
