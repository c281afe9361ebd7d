package plant

import (
	"plantd/sunspec"
)

// Nameplate is what SunSpec discovery learned of a device, in the words
// the API shows: the HTTP API and the uplink read it instead of the
// SunSpec layer's sunspec.Device (grid control, which writes SunSpec
// models, reads [DeviceLive.Discovered]). Live builds it once per
// discovery; it is shared between readers and never modified.
type Nameplate struct {
	Manufacturer, Model, Serial, Version string
	// Platform is the SunSpec generation of the device's models: "classic"
	// (1xx/12x models) or "der" (7xx).
	Platform string
	// Models are the ids of the device's models in chain order.
	Models []uint16
	// RatedPowerW is the nameplate active power (120 WRtg, 702 WMaxRtg,
	// 802 WChaRteMax or 124 WChaMax), 0 when the device reports none.
	RatedPowerW float64
	// Controllable: the device offers a power limit or storage control.
	Controllable bool
	// Template is the device template (plantd/devices/template) of a
	// device that speaks no SunSpec ("sdm630"); Models is then empty.
	Template string
}

// DER reports whether the device is of the DER platform (7xx models).
func (n *Nameplate) DER() bool { return n.Platform == string(sunspec.PlatformDER) }

// nameplateOf is the nameplate of a discovered device (nil: nil).
func nameplateOf(d *sunspec.Device) *Nameplate {
	if d == nil {
		return nil
	}
	n := &Nameplate{Manufacturer: d.Manufacturer, Model: d.Model, Serial: d.Serial, Version: d.Version,
		Platform: string(d.Platform), Models: d.ModelIDs(), RatedPowerW: d.RatedPowerW, Template: d.Template}
	for _, c := range d.Capabilities {
		if c == sunspec.CapPowerLimit || c == sunspec.CapStorageControl {
			n.Controllable = true
		}
	}
	return n
}
