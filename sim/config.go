package sim

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"plantd/devices/template"
	"plantd/plant/kind"
)

// DeviceConfig is one simulated device.
type DeviceConfig struct {
	// ID names the device in the plant ("inv1"); it also makes its serial
	// number. Required, unique, at most 28 characters.
	ID string
	// Kind is what the device is; with DER it decides its SunSpec models:
	//
	//	inverter         1 103 120 121 122 123 126 127 129 130 132 134 135 136 (classic, three-phase)
	//	inverter, DER    1 701 702 704 705 706 707 708 709 710 711 (IEEE 1547)
	//	meter            1 203 (three-phase wye grid meter, or a load's sub-meter: Measures)
	//	battery          1 124 713 802
	//	battery, DER     1 713 802 (DER storage: no 124, so no power setpoint)
	//	sensor           1 308 (weather sensor)
	//
	// A relay board (Relay) has no kind.
	Kind kind.Kind
	// Template makes the device a template device instead of a SunSpec
	// one: it serves the register image of the named device template of
	// plantd/devices/template ("sdm630", "sun2000", ...) on holding and
	// input registers, with a plausible value for every point (template.go).
	// Kind is the template's (it may be given, and must then agree); RatedW
	// and CapacityWh apply to inverters and batteries as for SunSpec
	// devices; the other options do not apply.
	Template string
	// Relay makes the device a relay board instead of a SunSpec device: 8
	// coils, 8 discrete inputs and the watchdog registers of an EK9000 bus
	// coupler (relay.go), switching the loads of Config.Loads. Kind, DER,
	// RatedW and the inverter modes stay unset.
	Relay bool
	// InputsFollowCoils makes a relay board an input module for tests
	// and tools: a write of coil N over Modbus sets discrete input N to
	// the value written, as if the coil's relay were wired to the input
	// (a ripple-control receiver's contact that a test flips from
	// outside). Device.SetInput still sets an input alone.
	InputsFollowCoils bool
	// Measures makes a meter the sub-meter of the load with this id
	// (Config.Loads) instead of the grid meter: its W is the load's draw
	// (import positive) and TotWhImp integrates it.
	Measures string
	// DER makes an inverter a newer-platform (IEEE 1547) one with the 7xx
	// models instead of the classic 1xx/12x ones, and a battery one with
	// 713 and 802 only (no 124).
	DER bool
	// Unit is the Modbus unit id the device answers to (0 means 1).
	Unit byte
	// Endpoint names the TCP endpoint: devices with the same Endpoint share
	// one port and are told apart by Unit, as behind a gateway. Empty: the
	// device has a port of its own.
	Endpoint string
	// Port is the TCP port of the device's endpoint; 0 picks a free one
	// at Start. Devices sharing an endpoint must not configure different
	// ports.
	Port int
	// RTUOverTCP makes the device's endpoint speak RTU frames (unit, PDU,
	// CRC) instead of Modbus TCP, as a serial to Ethernet converter in
	// transparent mode (rtutcp.go). Devices sharing an endpoint agree.
	RTUOverTCP bool
	// Baud, with RTUOverTCP, is the rate of the converter's serial line:
	// answers are paced at it as on a serial line (SerialConfig). 0: not
	// paced, frames end at a silence of 1.75 ms.
	Baud int
	// RatedW is the AC rating of an inverter (default 10000 for a classic
	// inverter, 8000 for a DER one) or the charge and discharge
	// rating of a battery (default 5000).
	RatedW float64
	// CapacityWh is a battery's energy rating (default 10000).
	CapacityWh float64
	// SoCPct is a battery's state of charge at start, % (0: 50; 5..100:
	// a full battery takes no charge).
	SoCPct float64
	// IgnoreRevert makes an inverter accept and read back every reversion
	// time (123 *_RvrtTms, 704 *RvrtTms, curve RvrtTms) but never revert:
	// the 704 and 7xx RvrtRem points show the reversion time and do not
	// count down, so a client can tell by reading RvrtRem twice.
	IgnoreRevert bool
	// NeedsEnableToggle makes an inverter take a new power limit setpoint
	// (123 WMaxLimPct, 704 WMaxLimPct) only when its enable point
	// (WMaxLim_Ena, WMaxLimPctEna) goes from 0 to 1 after the value was
	// written: writing the value alone while enabled changes the register,
	// not the limit in effect.
	NeedsEnableToggle bool
	// IgnoresLimit makes an inverter accept and read back every power
	// limit write (123 or 704) but never limit its output: a device that
	// does not follow its limit, toggled or not.
	IgnoresLimit bool
	// AdoptClearsRequest makes a DER inverter set a 7xx adopt request
	// (AdptCrvReq, 711 AdptCtlReq) back to 0 once it acted on it, as many
	// real devices do; without it the request reads as written.
	AdoptClearsRequest bool
	// EnergyStepWh is the resolution of an inverter's lifetime energy
	// counter (103 WH, 122 ActWh, 701 TotWhInj): the counter shows the
	// energy rounded down to a multiple of it, as a meter counting in kWh
	// does (default 1 Wh).
	EnergyStepWh float64
}

// Config is a simulated plant.
type Config struct {
	// Latitude and Longitude locate the plant in degrees (north, east).
	// Both 0 means the default, a plant near Munich (48.1, 11.6).
	Latitude, Longitude float64
	// TimeZone is the plant's IANA time zone; it shapes the load profile
	// (default "Europe/Berlin").
	TimeZone string
	// Now is the wall clock (default time.Now).
	Now func() time.Time
	// Start is the simulated time at New (default: Now() at New).
	Start time.Time
	// Speed is how many simulated seconds pass per wall-clock second:
	// sim time = Start + (Now() - Now() at New) × Speed (default 1).
	Speed float64
	// ClearSky turns the deterministic cloud term off: irradiance follows
	// the clear-sky model only.
	ClearSky bool
	// Resolution, when set, makes the plant advance in whole steps of
	// that much simulated time: reads within one step see the same
	// values, and a step costs one pass over every device however many
	// reads it serves (scale tests with thousands of devices use 1 s).
	// Default 0: every read sees its own instant.
	Resolution time.Duration
	// CountReads makes the plant count the reads its devices answer and
	// the polls they come in, for Plant.TakeReadStats.
	CountReads bool
	// Listen is the host the endpoints bind (default 127.0.0.1).
	Listen string
	// Devices are the simulated devices, in the order Devices returns them.
	Devices []DeviceConfig
	// Shellies are simulated Shelly Gen2 plugs, each with an appliance
	// behind it whose draw adds to the plant's consumption (shelly.go).
	Shellies []ShellyConfig
	// TraceFile, when set, is a file every write a device receives is
	// appended to as one JSON object per line (a TraceEntry), written
	// through at once, so another process can follow what the simulated
	// devices saw. It is opened (created if needed) by Start.
	TraceFile string
	// TraceLimit bounds the trace each device keeps in memory (default
	// 10000 entries; older ones are dropped and counted).
	TraceLimit int
	// Loads are the switchable loads on the relay boards (appliance.go):
	// an immersion heater, an SG-Ready heat pump. Their draw adds to the
	// plant's consumption.
	Loads []LoadConfig
	// Serial are serial lines (RS485 buses) on which some devices answer
	// as Modbus RTU slaves instead of on a TCP endpoint (serial.go).
	Serial []SerialConfig
	// ChargePoints are OCPP 1.6J charge points with a car each
	// (chargepoint.go), clients of a central system once their Run is
	// called; the car's draw adds to the plant's consumption.
	ChargePoints []ChargePointConfig
}

// Default plant location and zone.
const (
	DefaultLatitude  = 48.1
	DefaultLongitude = 11.6
	DefaultTimeZone  = "Europe/Berlin"
	DefaultListen    = "127.0.0.1"
)

// Default device ratings.
const (
	defaultInverterW   = 10000
	defaultDERW        = 8000
	defaultBatteryW    = 5000
	defaultBatteryWh   = 10000
	defaultBatterySoC  = 50
	maxDeviceIDLen     = 28
	defaultUnit        = 1
	defaultSpeed       = 1
	maxRatedW          = 30000 // keeps W_SF 0 values inside int16
	maxBatteryCapacity = 60000 // keeps WH_SF 0 values inside uint16
	defaultTraceLimit  = 10000
)

// DefaultConfig is the demo plant: a classic 10 kW inverter "inv1", a DER
// 8 kW inverter "inv2", a grid meter "meter", a 10 kWh / 5 kW battery
// "bat" and a weather sensor "wx", each on its own port as unit 1, in
// Munich's time zone, running in real time.
func DefaultConfig() Config {
	return Config{
		Latitude:  DefaultLatitude,
		Longitude: DefaultLongitude,
		TimeZone:  DefaultTimeZone,
		Speed:     defaultSpeed,
		Listen:    DefaultListen,
		Devices: []DeviceConfig{
			{ID: "inv1", Kind: kind.Inverter, Unit: 1},
			{ID: "inv2", Kind: kind.Inverter, DER: true, Unit: 1},
			{ID: "meter", Kind: kind.Meter, Unit: 1},
			{ID: "bat", Kind: kind.Battery, Unit: 1},
			{ID: "wx", Kind: kind.Sensor, Unit: 1},
		},
	}
}

// DemoConfig is DefaultConfig with the house's switchable consumers of
// the demo (plantd demo and plantd sim): a relay board "io" (an EK9000
// style I/O module) switching an immersion heater "heater" of 3 kW on coil
// 0, measured alone by the sub-meter "heatmeter", and an SG-Ready heat
// pump "heatpump" on coils 2 and 3; and a Shelly plug "plug" with a
// 1200 W appliance. An input module "rcr" stands for the grid operator's
// ripple-control receiver: its inputs 0..3 are the contacts K1..K4, and
// writing its coil N over Modbus sets input N (InputsFollowCoils). Their draw is part of the house's consumption, so the
// grid meter sees them switch.
func DemoConfig() Config {
	c := DefaultConfig()
	c.Devices = append(c.Devices,
		DeviceConfig{ID: "io", Relay: true, Unit: 1},
		DeviceConfig{ID: "heatmeter", Kind: kind.Meter, Unit: 1, Measures: "heater"},
		DeviceConfig{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1},
	)
	c.Loads = []LoadConfig{
		{ID: "heater", Kind: LoadHeater, Board: "io", Coil: 0, RatedW: 3000},
		{ID: "heatpump", Kind: LoadSGReady, Board: "io", Coil: 2},
	}
	c.Shellies = []ShellyConfig{{ID: "plug", RatedW: 1200}}
	return c
}

// ErrConfig is wrapped by the errors of New for an invalid Config.
var ErrConfig = errors.New("sim: invalid config")

// checkID returns an error naming field ("devices[0]") when id is empty,
// longer than maxDeviceIDLen or not printable ASCII without spaces: the
// rule for the ids of devices and plugs alike.
func checkID(field, id string) error {
	if id == "" {
		return fmt.Errorf("%w: %s.id: missing", ErrConfig, field)
	}
	if len(id) > maxDeviceIDLen {
		return fmt.Errorf("%w: %s.id %q: longer than %d characters", ErrConfig, field, id, maxDeviceIDLen)
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7E {
			return fmt.Errorf("%w: %s.id %q: only printable ASCII without spaces", ErrConfig, field, id)
		}
	}
	return nil
}

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the field at fault.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, a ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	if c.Latitude == 0 && c.Longitude == 0 {
		c.Latitude, c.Longitude = DefaultLatitude, DefaultLongitude
	}
	if math.IsNaN(c.Latitude) || c.Latitude < -90 || c.Latitude > 90 {
		return bad("latitude %v outside -90..90", c.Latitude)
	}
	if math.IsNaN(c.Longitude) || c.Longitude < -180 || c.Longitude > 180 {
		return bad("longitude %v outside -180..180", c.Longitude)
	}
	if c.TimeZone == "" {
		c.TimeZone = DefaultTimeZone
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Speed == 0 {
		c.Speed = defaultSpeed
	}
	if c.Speed < 0 || math.IsNaN(c.Speed) || math.IsInf(c.Speed, 0) {
		return bad("speed %v: want a positive factor", c.Speed)
	}
	if c.Resolution < 0 {
		return bad("resolution %v: want a positive duration or 0", c.Resolution)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.TraceLimit == 0 {
		c.TraceLimit = defaultTraceLimit
	}
	if c.TraceLimit < 0 {
		return bad("traceLimit %d: want a positive number of entries", c.TraceLimit)
	}
	if len(c.Devices) == 0 {
		return bad("no devices")
	}
	devs := make([]DeviceConfig, len(c.Devices))
	copy(devs, c.Devices)
	ids := map[string]bool{}
	type unitKey struct {
		ep   string
		unit byte
	}
	units := map[unitKey]string{}
	ports := map[string]int{}
	for i := range devs {
		d := &devs[i]
		field := fmt.Sprintf("devices[%d]", i)
		if err := checkID(field, d.ID); err != nil {
			return Config{}, err
		}
		if ids[d.ID] {
			return bad("%s.id %q: used twice", field, d.ID)
		}
		ids[d.ID] = true
		if d.Unit == 0 {
			d.Unit = defaultUnit
		}
		ep := d.endpointName()
		k := unitKey{ep, d.Unit}
		if other, ok := units[k]; ok {
			return bad("%s.unit %d: endpoint %q already has unit %d (%s)", field, d.Unit, ep, d.Unit, other)
		}
		units[k] = d.ID
		if d.Port < 0 || d.Port > 65535 {
			return bad("%s.port %d outside 0..65535", field, d.Port)
		}
		if d.Port != 0 {
			if p, ok := ports[ep]; ok && p != d.Port {
				return bad("%s.port %d: endpoint %q already uses port %d", field, d.Port, ep, p)
			}
			ports[ep] = d.Port
		}
		if err := d.withDefaults(field); err != nil {
			return Config{}, err
		}
	}
	c.Devices = devs
	if err := c.serialWithDefaults(); err != nil {
		return Config{}, err
	}
	if err := c.shelliesWithDefaults(); err != nil {
		return Config{}, err
	}
	if net.ParseIP(c.Listen) == nil && c.Listen != "localhost" {
		return bad("listen %q: want an IP address", c.Listen)
	}
	loads, err := loadsWithDefaults(c.Loads, devs)
	if err != nil {
		return Config{}, err
	}
	c.Loads = loads
	if err := c.chargePointsWithDefaults(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// withDefaults checks one device's own settings and fills their defaults
// (field names it in errors); what concerns several devices (ids, units,
// ports) is checked by Config.withDefaults.
func (d *DeviceConfig) withDefaults(field string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	if d.Relay {
		return d.relayWithDefaults(field)
	}
	if d.InputsFollowCoils {
		return bad("%s.inputsFollowCoils: only a relay board has inputs", field)
	}
	if d.Template != "" {
		t, ok := template.Lookup(d.Template)
		switch {
		case !ok:
			return bad("%s.template %q: unknown (known: %s)", field, d.Template, strings.Join(template.Names(), ", "))
		case d.Kind != "" && d.Kind != t.Kind:
			return bad("%s.kind %q: template %s is a %s", field, d.Kind, d.Template, t.Kind)
		case d.DER || d.Measures != "" || d.IgnoreRevert || d.NeedsEnableToggle || d.IgnoresLimit || d.AdoptClearsRequest || d.EnergyStepWh != 0:
			return bad("%s: der, measures and the inverter modes do not apply to a template device", field)
		}
		d.Kind = t.Kind
	}
	switch d.Kind {
	case kind.Inverter, kind.Meter, kind.Battery, kind.Sensor:
	default:
		return bad("%s.kind %q: want inverter, meter, battery or sensor (or relay: true for a relay board)", field, d.Kind)
	}
	if d.Measures != "" && d.Kind != kind.Meter {
		return bad("%s.measures: only a meter measures a load", field)
	}
	if d.DER && d.Kind != kind.Inverter && d.Kind != kind.Battery {
		return bad("%s.der: only an inverter or a battery has DER models", field)
	}
	switch {
	case d.Kind == kind.Inverter && !d.DER:
		if d.RatedW == 0 {
			d.RatedW = defaultInverterW
		}
	case d.Kind == kind.Inverter:
		if d.RatedW == 0 {
			d.RatedW = defaultDERW
		}
	case d.Kind == kind.Battery:
		if d.RatedW == 0 {
			d.RatedW = defaultBatteryW
		}
		if d.CapacityWh == 0 {
			d.CapacityWh = defaultBatteryWh
		}
		if d.CapacityWh < 100 || d.CapacityWh > maxBatteryCapacity {
			return bad("%s.capacityWh %v outside 100..%d", field, d.CapacityWh, maxBatteryCapacity)
		}
		if d.SoCPct == 0 {
			d.SoCPct = defaultBatterySoC
		}
		if !(d.SoCPct >= 5 && d.SoCPct <= 100) {
			return bad("%s.socPct %v outside 5..100", field, d.SoCPct)
		}
	}
	if (d.IgnoreRevert || d.NeedsEnableToggle || d.IgnoresLimit) && d.Kind != kind.Inverter {
		return bad("%s: ignoreRevert, needsEnableToggle and ignoresLimit apply to inverters only", field)
	}
	if d.AdoptClearsRequest && !d.DER {
		return bad("%s: adoptClearsRequest applies to DER inverters only", field)
	}
	if d.EnergyStepWh < 0 || math.IsNaN(d.EnergyStepWh) || d.EnergyStepWh > 1e6 {
		return bad("%s.energyStepWh %v outside 0..1e6", field, d.EnergyStepWh)
	}
	if d.EnergyStepWh != 0 && d.Kind != kind.Inverter {
		return bad("%s: energyStepWh applies to inverters only", field)
	}
	if d.EnergyStepWh == 0 {
		d.EnergyStepWh = 1
	}
	if d.RatedW < 0 || d.RatedW > maxRatedW || math.IsNaN(d.RatedW) {
		return bad("%s.ratedW %v outside 0..%d", field, d.RatedW, maxRatedW)
	}
	return nil
}

// relayWithDefaults checks a relay board's settings: none of a SunSpec
// device's apply.
func (d *DeviceConfig) relayWithDefaults(field string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case d.Kind != "":
		return bad("%s.kind %q: a relay board has no kind (its loads are the consumers)", field, d.Kind)
	case d.DER || d.RatedW != 0 || d.CapacityWh != 0 || d.EnergyStepWh != 0 || d.Measures != "":
		return bad("%s: der, ratedW, capacityWh, energyStepWh and measures do not apply to a relay board", field)
	case d.IgnoreRevert || d.NeedsEnableToggle || d.IgnoresLimit || d.AdoptClearsRequest:
		return bad("%s: the inverter modes do not apply to a relay board", field)
	}
	return nil
}

// endpointName is the name of the device's endpoint: its own ID when it
// shares none.
func (d *DeviceConfig) endpointName() string {
	if d.Endpoint != "" {
		return "ep:" + d.Endpoint
	}
	return "dev:" + d.ID
}

// model is the word of the device's model set: its kind, "der-inverter"
// for a DER inverter, "relay" for a relay board, "io-module" for one whose
// inputs follow its coils (the Opt point of its common model and its log line
// say it).
func (c DeviceConfig) model() string {
	if c.DER {
		return "der-inverter"
	}
	if c.Relay && c.InputsFollowCoils {
		return "io-module"
	}
	if c.Relay {
		return "relay"
	}
	if c.Template != "" {
		return "template " + c.Template
	}
	return string(c.Kind)
}
