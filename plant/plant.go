package plant

import (
	"errors"
	"time"

	"plantd/plant/kind"
)

// Sentinel errors of the read side; test with errors.Is.
var (
	// ErrUnknownPlant is returned for a plant id the Live cache was not
	// built with.
	ErrUnknownPlant = errors.New("unknown plant")
	// ErrUnknownDevice is returned for a device id the Live cache was not
	// built with.
	ErrUnknownDevice = errors.New("unknown device")
	// ErrModeNotForConsumer: a mode the consumer does not have (MinPV
	// for a switch).
	ErrModeNotForConsumer = errors.New("mode not for this consumer")
	// ErrBadPlan is a charger's Plan target the manager cannot take (no
	// target, a deadline past, a SoC target without the car's capacity).
	ErrBadPlan = errors.New("bad charge plan")
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

// DeviceInfo is one configured device of a plant.
type DeviceInfo struct {
	// ID is the device id of the API and of Sample.Device.
	ID      string
	PlantID string
	Name    string
	Kind    kind.Kind
	// DeactivatedAt is when the device was taken out of service (the API's
	// isActive false and deactivatedAt); zero means active. A deactivated
	// device stays in device lists but counts in no balance.
	DeactivatedAt time.Time
	// Measures is, for a meter that measures one consumer alone, that
	// consumer's id: such a meter counts in no grid balance and no
	// FeedInLimit. "" for the grid meter and every other device.
	Measures string
}

// GridMeter reports whether the device is a meter at the grid connection
// (a meter that measures no consumer).
func (d DeviceInfo) GridMeter() bool { return d.Kind == kind.Meter && d.Measures == "" }

// Active reports whether the device is in service.
func (d DeviceInfo) Active() bool { return d.DeactivatedAt.IsZero() }

// Type returns the API's type word of the device.
func (d DeviceInfo) Type() string { return d.Kind.Type() }
