package kind

import "fmt"

// Kind is what a device is. Discovery decides it from the SunSpec models
// a device exposes (sunspec.Classify); the config may set it (it then
// overrides discovery). It decides the device's role in the energy balance
// and its API type word.
type Kind string

// The device kinds.
const (
	Inverter Kind = "inverter"
	Meter    Kind = "meter"
	Battery  Kind = "battery"
	Sensor   Kind = "sensor"
	// Consumer is a switchable load of the home energy manager (a relay
	// output, an SG-Ready heat pump, a smart plug): polled and switched
	// by plantd/consumer, not by the SunSpec poller.
	Consumer Kind = "consumer"
	// Gateway is plantd itself (the API's "Monitoring and control"
	// device); it is never polled and never configured.
	Gateway Kind = "gateway"
	// Unknown is discovery's answer for a device whose models make it
	// none of the others; it is never configured, and a device keeps no
	// kind ("") rather than Unknown.
	Unknown Kind = "unknown"
)

// The device type words of the real API (DESIGN §4).
const (
	TypeSolarInverters       = "Solar Inverters"
	TypeBatteryInverter      = "Battery Inverter"
	TypeEnergyMeter          = "Energy Meter"
	TypeSensorTechnology     = "Sensor technology"
	TypeConsumer             = "Consumer"
	TypeMonitoringAndControl = "Monitoring and control"
)

// kinds is the table of the kinds a device of a plant has, whether it is
// polled (and so may be configured) and its API type word.
var kinds = []struct {
	Kind   Kind
	Polled bool
	Type   string
}{
	{Inverter, true, TypeSolarInverters},
	{Meter, true, TypeEnergyMeter},
	{Battery, true, TypeBatteryInverter},
	{Sensor, true, TypeSensorTechnology},
	{Consumer, true, TypeConsumer},
	{Gateway, false, TypeMonitoringAndControl},
}

// Parse maps a word ("inverter", "meter", "battery", "sensor",
// "gateway"; exactly so, in lower case) to its Kind. Unknown is no kind a
// device of a plant has: Parse refuses it.
func Parse(s string) (Kind, error) {
	for _, k := range kinds {
		if string(k.Kind) == s {
			return k.Kind, nil
		}
	}
	return "", fmt.Errorf("unknown device kind %q (want inverter, meter, battery, sensor, consumer or gateway)", s)
}

// Polled reports whether devices of the kind are polled over Modbus: the
// kinds a config may give a device (inverter, meter, battery, sensor).
func (k Kind) Polled() bool {
	for _, e := range kinds {
		if e.Kind == k {
			return e.Polled
		}
	}
	return false
}

// Type returns the API's type word of the kind ("Solar Inverters", ...),
// "" for Unknown and for no kind.
func (k Kind) Type() string {
	for _, e := range kinds {
		if e.Kind == k {
			return e.Type
		}
	}
	return ""
}
