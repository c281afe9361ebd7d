package plant

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the read side; test with errors.Is.
var (
	// ErrUnknownPlant is returned for a plant id the Live cache was not
	// built with.
	ErrUnknownPlant = errors.New("unknown plant")
	// ErrUnknownDevice is returned for a device id the Live cache was not
	// built with.
	ErrUnknownDevice = errors.New("unknown device")
)

// Plant is one PV plant as the API shows it. cmd/plantd maps the config
// onto it; nothing here knows the YAML.
type Plant struct {
	// ID is the plant id of the API ("7190000"); ids are strings.
	ID   string
	Name string
	// Description is optional ("" = absent).
	Description string
	// Location is the plant's IANA time zone; it decides period boundaries
	// and the local times of measurement sets. nil means UTC.
	Location *time.Location
}

// Timezone returns the IANA name of the plant's time zone ("UTC" when
// Location is nil).
func (p Plant) Timezone() string {
	if p.Location == nil {
		return "UTC"
	}
	return p.Location.String()
}

// Kind is what a configured device is in the plant. It decides the
// device's role in the energy balance and its API type word.
type Kind string

// The device kinds. KindGateway is plantd itself (the API's "Monitoring and
// control" device); it is never polled.
const (
	KindInverter Kind = "inverter"
	KindMeter    Kind = "meter"
	KindBattery  Kind = "battery"
	KindSensor   Kind = "sensor"
	KindGateway  Kind = "gateway"
)

// The device type words of the real API (DESIGN §4).
const (
	TypeSolarInverters       = "Solar Inverters"
	TypeBatteryInverter      = "Battery Inverter"
	TypeEnergyMeter          = "Energy Meter"
	TypeSensorTechnology     = "Sensor technology"
	TypeMonitoringAndControl = "Monitoring and control"
)

// kinds is the table of device kinds and their API type words.
var kinds = []struct {
	Kind Kind
	Type string
}{
	{KindInverter, TypeSolarInverters},
	{KindMeter, TypeEnergyMeter},
	{KindBattery, TypeBatteryInverter},
	{KindSensor, TypeSensorTechnology},
	{KindGateway, TypeMonitoringAndControl},
}

// ParseKind maps a config word ("inverter", "meter", "battery", "sensor",
// "gateway") to its Kind.
func ParseKind(s string) (Kind, error) {
	for _, k := range kinds {
		if string(k.Kind) == s {
			return k.Kind, nil
		}
	}
	return "", fmt.Errorf("plant: unknown device kind %q (want inverter, meter, battery, sensor or gateway)", s)
}

// Type returns the API's type word of the kind ("Solar Inverters", ...),
// "" for an unknown kind.
func (k Kind) Type() string {
	for _, e := range kinds {
		if e.Kind == k {
			return e.Type
		}
	}
	return ""
}

// DeviceInfo is one configured device of a plant.
type DeviceInfo struct {
	// ID is the device id of the API and of Sample.Device.
	ID      string
	PlantID string
	Name    string
	Kind    Kind
	// DeactivatedAt is when the device was taken out of service (the API's
	// isActive false and deactivatedAt); zero means active. A deactivated
	// device stays in device lists but counts in no balance.
	DeactivatedAt time.Time
}

// Active reports whether the device is in service.
func (d DeviceInfo) Active() bool { return d.DeactivatedAt.IsZero() }

// Type returns the API's type word of the device.
func (d DeviceInfo) Type() string { return d.Kind.Type() }
