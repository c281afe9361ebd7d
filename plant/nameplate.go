package plant

import "plantd/plant/kind"

// Nameplate is what discovery learned of a device, in the words the API
// shows: the HTTP API and the uplink read it, and Live bounds the device's
// values by its ratings. The device layer (plantd/devices/channels) makes
// it once per discovery and hands it over in [Sample.Nameplate]; it is
// shared between readers and never modified. Grid control, which writes
// SunSpec models, reads the device layer's own description instead
// ([DeviceLive.Discovered]).
type Nameplate struct {
	Manufacturer, Model, Serial, Version string
	// Kind is the kind discovery found (or the configured one, which the
	// poller gives it); "" when unknown.
	Kind kind.Kind
	// Platform is the SunSpec generation of the device's models: "classic"
	// (1xx/12x models) or "der" (7xx).
	Platform string
	// Models are the ids of the device's models in chain order.
	Models []uint16
	// RatedPowerW is the nameplate active power (120 WRtg, 702 WMaxRtg,
	// 802 WChaRteMax or 124 WChaMax), 0 when the device reports none.
	RatedPowerW float64
	// RatedApparentVA, RatedReactiveVAr and RatedCurrentA are the
	// nameplate apparent power, reactive power (the larger of injection
	// and absorption) and AC current, 0 when the device reports none.
	RatedApparentVA, RatedReactiveVAr, RatedCurrentA float64
	// RatedEnergyWh is a battery's usable capacity (802/713 WHRtg), 0
	// when the device reports none.
	RatedEnergyWh float64
	// Controllable: the device offers a power limit or storage control.
	Controllable bool
	// Template is the device template (plantd/devices/template) of a
	// device that speaks no SunSpec ("sdm630"); Models is then empty.
	Template string
	// Feeds are the channels the device can give (the rows of the device
	// layer's channel table its models have, or its template's points),
	// for [SetsFor].
	Feeds []Feed
}

// Feed is a channel a device can give, to a device of kind Kind ("": of
// any kind).
type Feed struct {
	Kind    kind.Kind
	Channel Channel
}

// PlatformDER is Nameplate.Platform of a device of the DER models (7xx).
const PlatformDER = "der"

// DER reports whether the device is of the DER platform (7xx models).
func (n *Nameplate) DER() bool { return n.Platform == PlatformDER }
