package drivers

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"plantd/consumer"
)

// Settings are a consumer's driver settings (config devices[].consumer,
// which embeds them): the driver's name and the keys of every driver;
// each driver reads its own, and its Kind's Check refuses the others'.
type Settings struct {
	// Driver names the hardware: relay, sgready, shelly or ocpp
	// (Names()); required.
	Driver string `yaml:"driver"`
	// Coil is the relay output (0-based coil address, 0..65535; SG-Ready:
	// contact A). CoilB is SG-Ready's contact B (default Coil+1).
	Coil  int  `yaml:"coil"`
	CoilB *int `yaml:"coilB"`
	// SwitchID is a Shelly's switch component id (default 0).
	SwitchID int `yaml:"switchId"`
	// Watchdog is the device's fail-safe time: its output falls to off
	// (SG-Ready: normal; a charger: fallbackCurrent) when plantd stops
	// renewing it (default 60s, config's). Relay, SG-Ready and Shelly:
	// 5s..1h; a charger: the validity of each charging profile, 15s..1h.
	Watchdog time.Duration `yaml:"watchdog"`
	// ChargePointID is an OCPP charger's identity, the last element of
	// the WebSocket path it connects to (ws://gateway:8887/ocpp/<id>);
	// default the device id.
	ChargePointID string `yaml:"chargePointId"`
	// Password is an OCPP charger's HTTP basic-auth password (user: its
	// charge point id); "" accepts it without (OCPP 1.6 security
	// profile 0: keep such a charger on a trusted LAN).
	Password string `yaml:"password"`
	// Phases a charger charges on (1 or 3; 0 or absent: 3). A charger's
	// ratedPower defaults to maxCurrent × phases × 230 V.
	Phases int `yaml:"phases"`
	// MinCurrent and MaxCurrent bound a charger's current per phase (A;
	// 0 or absent: 6 and 16; IEC 61851-1: a car does not charge below
	// 6 A).
	MinCurrent float64 `yaml:"minCurrent"`
	MaxCurrent float64 `yaml:"maxCurrent"`
	// FallbackCurrent is what a charger charges with when plantd goes
	// quiet (A; 0, or minCurrent..maxCurrent; default minCurrent): the
	// default profile plantd installs when it connects.
	FallbackCurrent *float64 `yaml:"fallbackCurrent"`
	// EnableDelay and DisableDelay: a charger in PV mode starts after
	// the surplus carried minCurrent this long, and stops after it did
	// not this long (default 1m and 3m, evcc's; 0..1h).
	EnableDelay  *time.Duration `yaml:"enableDelay"`
	DisableDelay *time.Duration `yaml:"disableDelay"`
}

// Device is where a consumer's device is (config devices[]).
type Device struct {
	ID      string
	Host    string
	Port    int
	Timeout time.Duration
}

// Env is the daemon's side of the drivers: the connections they share.
type Env interface {
	// Modbus is a client of the device's Modbus unit, through the
	// daemon's pool (shared with the devices behind the same address).
	Modbus(deviceID string) (ModbusClient, error)
	// ChargePoints is the OCPP central system; an error when none runs.
	ChargePoints() (ChargePoints, error)
}

// Kind is one consumer driver: its setpoint, how its settings are
// checked and defaulted, and how it is made. The table (kinds) is the
// one list of drivers: config validation, the defaults and the daemon's
// wiring all read it.
type Kind struct {
	Name string
	// Setpoint is the output the decision gives it.
	Setpoint consumer.Setpoint
	// Controllable is the §14a EnWG default (config consumer.controllable):
	// heat pumps and wallboxes are controllable consumption devices.
	Controllable bool
	// Connects says how plantd reaches the device: "modbus" (host, port,
	// unit), "http" (host, port; default port 80) or "inbound" (the
	// device connects to plantd; host and port are not used).
	Connects string
	// Doc is one line for the config's error messages and the README.
	Doc string
	// check reports what is wrong with s, field by field (the config
	// keys).
	check func(s *Settings, add AddFunc)
	// defaults fills s's unset values.
	defaults func(s *Settings)
	// make builds the driver.
	make func(d Device, s Settings, env Env) (consumer.Driver, error)
}

// AddFunc reports one problem of a field (a config key of
// devices[].consumer).
type AddFunc func(field, format string, args ...any)

// The connection kinds of Kind.Connects.
const (
	ConnectsModbus  = "modbus"
	ConnectsHTTP    = "http"
	ConnectsInbound = "inbound"
)

// The driver names.
const (
	NameRelay   = "relay"
	NameSGReady = "sgready"
	NameShelly  = "shelly"
	NameOCPP    = "ocpp"
)

var kinds = []Kind{
	{Name: NameRelay, Setpoint: consumer.SetpointSwitch, Connects: ConnectsModbus,
		Doc:   "one coil of a Modbus TCP relay / I/O module (host, port, unit; coil)",
		check: checkRelay,
		make: func(d Device, s Settings, env Env) (consumer.Driver, error) {
			c, err := env.Modbus(d.ID)
			if err != nil {
				return nil, err
			}
			return NewRelay(c, RelayConfig{Coil: uint16(s.Coil), Watchdog: s.Watchdog})
		}},
	{Name: NameSGReady, Setpoint: consumer.SetpointSGReady, Controllable: true, Connects: ConnectsModbus,
		Doc:   "an SG-Ready heat pump on two coils of a relay module (coil = contact A, coilB = contact B)",
		check: checkRelay,
		make: func(d Device, s Settings, env Env) (consumer.Driver, error) {
			c, err := env.Modbus(d.ID)
			if err != nil {
				return nil, err
			}
			return NewSGReady(c, SGReadyConfig{CoilA: uint16(s.Coil), CoilB: uint16(s.ContactB()), Watchdog: s.Watchdog})
		}},
	{Name: NameShelly, Setpoint: consumer.SetpointSwitch, Connects: ConnectsHTTP,
		Doc:   "a Shelly Gen2/Gen3 plug or relay over its HTTP RPC (host, port 80; switchId)",
		check: checkShelly,
		make: func(d Device, s Settings, _ Env) (consumer.Driver, error) {
			base := "http://" + net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			return NewShelly(base, s.SwitchID, &http.Client{Timeout: d.Timeout}, s.Watchdog)
		}},
	{Name: NameOCPP, Setpoint: consumer.SetpointCurrent, Controllable: true, Connects: ConnectsInbound,
		Doc:   "an EV charger over OCPP 1.6J, connecting to plantd's central system (chargePointId, password, phases, currents)",
		check: checkCharger, defaults: defaultCharger,
		make: func(d Device, s Settings, env Env) (consumer.Driver, error) {
			cps, err := env.ChargePoints()
			if err != nil {
				return nil, err
			}
			return NewCharger(cps, ChargerConfig{ID: s.ChargePointID, Phases: s.Phases, Fallback: s.Fallback(), Validity: s.Watchdog})
		}},
}

// Lookup returns the driver of the given name.
func Lookup(name string) (Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names lists the drivers for messages: "relay, sgready, shelly or ocpp".
func Names() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Inbound reports whether the named driver's device connects to plantd
// (a charger), so that it needs no address.
func Inbound(name string) bool {
	k, ok := Lookup(name)
	return ok && k.Connects == ConnectsInbound
}

// Check reports what is wrong with s: the driver's name, then its own
// keys, and any key of another driver that is set.
func Check(s *Settings, add AddFunc) {
	if s.Driver == "" {
		add("driver", "required (%s)", Names())
		return
	}
	k, ok := Lookup(s.Driver)
	if !ok {
		add("driver", "%q is not a consumer driver (%s)", s.Driver, Names())
		return
	}
	k.check(s, add)
}

// Defaults fills the unset settings of s's driver (none for an unknown
// driver, which Check refuses).
func Defaults(s *Settings) {
	if k, ok := Lookup(s.Driver); ok && k.defaults != nil {
		k.defaults(s)
	}
}

// New makes the driver of a consumer; its settings passed Check and have
// their Defaults.
func New(d Device, s Settings, env Env) (consumer.Driver, error) {
	k, ok := Lookup(s.Driver)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a consumer driver (%s)", ErrConfig, s.Driver, Names())
	}
	return k.make(d, s, env)
}

// ContactB returns SG-Ready's contact B coil.
func (s *Settings) ContactB() int {
	if s.CoilB != nil {
		return *s.CoilB
	}
	return s.Coil + 1
}

// Coils lists the relay module coils the consumer switches (none for a
// driver that switches no coil).
func (s *Settings) Coils() []int {
	switch s.Driver {
	case NameRelay:
		return []int{s.Coil}
	case NameSGReady:
		return []int{s.Coil, s.ContactB()}
	}
	return nil
}

// NominalVoltage is the phase voltage (V) a charger's current is turned
// into power with (EN 50160's 230 V).
const NominalVoltage = 230

// Charger defaults (evcc's delays; IEC 61851-1's 6 A minimum).
const (
	defaultPhases       = 3
	defaultMinCurrent   = 6
	defaultMaxCurrent   = 16
	defaultEnableDelay  = time.Minute
	defaultDisableDelay = 3 * time.Minute
)

func defaultCharger(s *Settings) {
	if s.Phases == 0 {
		s.Phases = defaultPhases
	}
	if s.MinCurrent == 0 {
		s.MinCurrent = defaultMinCurrent
	}
	if s.MaxCurrent == 0 {
		s.MaxCurrent = defaultMaxCurrent
	}
	if s.FallbackCurrent == nil {
		fb := s.MinCurrent
		s.FallbackCurrent = &fb
	}
	if s.EnableDelay == nil {
		d := defaultEnableDelay
		s.EnableDelay = &d
	}
	if s.DisableDelay == nil {
		d := defaultDisableDelay
		s.DisableDelay = &d
	}
}

// Fallback is a charger's fallback current (A): FallbackCurrent, else
// its minimum (what Defaults sets; a Settings built in code may lack it).
func (s *Settings) Fallback() float64 {
	if s.FallbackCurrent != nil {
		return *s.FallbackCurrent
	}
	return orDefault(s.MinCurrent, defaultMinCurrent)
}

// Delays are a charger's PV-mode enable and disable delays, evcc's
// defaults where unset.
func (s *Settings) Delays() (enable, disable time.Duration) {
	enable, disable = defaultEnableDelay, defaultDisableDelay
	if s.EnableDelay != nil {
		enable = *s.EnableDelay
	}
	if s.DisableDelay != nil {
		disable = *s.DisableDelay
	}
	return enable, disable
}

// refuseCharger refuses the charger keys on a driver that is none.
func refuseCharger(s *Settings, add AddFunc) {
	set := []struct {
		key string
		on  bool
	}{
		{"chargePointId", s.ChargePointID != ""}, {"password", s.Password != ""}, {"phases", s.Phases != 0},
		{"minCurrent", s.MinCurrent != 0}, {"maxCurrent", s.MaxCurrent != 0}, {"fallbackCurrent", s.FallbackCurrent != nil},
		{"enableDelay", s.EnableDelay != nil}, {"disableDelay", s.DisableDelay != nil},
	}
	for _, k := range set {
		if k.on {
			add(k.key, "only an ocpp consumer (a charger) has %s", k.key)
		}
	}
}

func checkWatchdog(s *Settings, add AddFunc, lo time.Duration) {
	if s.Watchdog < lo || s.Watchdog > time.Hour {
		add("watchdog", "%s is out of range (%s..1h)", s.Watchdog, lo)
	}
}

func checkRelay(s *Settings, add AddFunc) {
	refuseCharger(s, add)
	checkWatchdog(s, add, 5*time.Second)
	if s.Coil < 0 || s.Coil > 0xFFFF {
		add("coil", "%d is not a coil address (0..65535)", s.Coil)
	}
	if s.SwitchID != 0 {
		add("switchId", "only a shelly consumer has a switch id")
	}
	switch {
	case s.CoilB == nil:
		if s.Driver == NameSGReady && s.Coil == 0xFFFF {
			add("coil", "contact B would be coil %d (give coilB)", s.Coil+1)
		}
	case s.Driver != NameSGReady:
		add("coilB", "only an sgready consumer has a second contact")
	case *s.CoilB < 0 || *s.CoilB > 0xFFFF:
		add("coilB", "%d is not a coil address (0..65535)", *s.CoilB)
	case *s.CoilB == s.Coil:
		add("coilB", "%d is contact A's coil too", *s.CoilB)
	}
}

func checkShelly(s *Settings, add AddFunc) {
	refuseCharger(s, add)
	if s.Watchdog%time.Second != 0 {
		add("watchdog", "%s is not whole seconds (a Shelly's toggle_after)", s.Watchdog)
	}
	checkWatchdog(s, add, 5*time.Second)
	if s.SwitchID < 0 || s.SwitchID > 255 {
		add("switchId", "%d is not a switch id (0..255)", s.SwitchID)
	}
	if s.Coil != 0 || s.CoilB != nil {
		add("coil", "a shelly consumer has no coil (switchId names its switch)")
	}
}

func checkCharger(s *Settings, add AddFunc) {
	checkWatchdog(s, add, 15*time.Second)
	if s.Coil != 0 || s.CoilB != nil || s.SwitchID != 0 {
		add("coil", "an ocpp consumer has no coil or switch id")
	}
	if s.ChargePointID != "" && !validChargePointID(s.ChargePointID) {
		add("chargePointId", "%q is not a charge point id (1..48 printable ASCII characters, no / or space: OCPP 1.6's CiString48)", s.ChargePointID)
	}
	if s.Phases != 0 && s.Phases != 1 && s.Phases != 3 {
		add("phases", "%d: want 1 or 3", s.Phases)
	}
	minA, maxA := orDefault(s.MinCurrent, defaultMinCurrent), orDefault(s.MaxCurrent, defaultMaxCurrent)
	switch {
	case math.IsNaN(minA) || minA < 6 || minA > 32:
		add("minCurrent", "%v A is out of range (6..32 A; a car does not charge below 6 A)", minA)
	case math.IsNaN(maxA) || maxA < minA || maxA > 80:
		add("maxCurrent", "%v A is out of range (minCurrent %v..80 A)", maxA, minA)
	case s.FallbackCurrent != nil && *s.FallbackCurrent != 0 && !(*s.FallbackCurrent >= minA && *s.FallbackCurrent <= maxA):
		add("fallbackCurrent", "%v A is out of range (0, or minCurrent %v..maxCurrent %v A)", *s.FallbackCurrent, minA, maxA)
	}
	for _, d := range []struct {
		key string
		d   *time.Duration
	}{{"enableDelay", s.EnableDelay}, {"disableDelay", s.DisableDelay}} {
		if d.d != nil && (*d.d < 0 || *d.d > time.Hour) {
			add(d.key, "%s is out of range (0..1h)", *d.d)
		}
	}
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// validChargePointID: OCPP 1.6 identities are CiString48; plantd takes
// them from the WebSocket path, so no '/', no space, printable ASCII.
func validChargePointID(id string) bool {
	if len(id) == 0 || len(id) > 48 {
		return false
	}
	for _, r := range id {
		if r <= ' ' || r > '~' || r == '/' {
			return false
		}
	}
	return true
}

// ChargePoints is the OCPP central system as the charger driver uses it
// (cmd/plantd adapts package charger's Central to it).
type ChargePoints interface {
	// Reading is the charger's state: the current its last accepted
	// profile allows (Output), power, energy and session.
	Reading(id string) (consumer.Reading, error)
	// SetCurrent sets the charging current for the profile's validity.
	SetCurrent(ctx context.Context, id string, amps float64, phases int) error
}
