package sunspec

import (
	"slices"

	"plantd/plant/kind"
)

// Platform is the SunSpec generation of a device's models (DESIGN §3).
type Platform string

// The two platform generations: classic (1xx/12x models) and DER (IEEE 1547,
// 7xx models).
const (
	PlatformClassic Platform = "classic"
	PlatformDER     Platform = "der"
)

// Capability is a control or measurement feature a device offers because of
// the models it exposes. Grid control decides eligibility from these.
type Capability string

// The capabilities; the comment names the models that give each.
const (
	CapPowerLimit     Capability = "power-limit"     // 123 WMaxLimPct, 704 WMaxLimPct
	CapConnect        Capability = "connect"         // 123 Conn, 703 ES
	CapPowerFactor    Capability = "power-factor"    // 123 OutPFSet, 704 PFWInj/PFWAbs
	CapReactivePower  Capability = "reactive-power"  // 123 VArPct, 704 VarSet
	CapVoltVar        Capability = "volt-var"        // 126, 705
	CapFreqWatt       Capability = "freq-watt"       // 127, 134, 711
	CapVoltWatt       Capability = "volt-watt"       // 132, 706
	CapLVRT           Capability = "lvrt"            // 129, 707
	CapHVRT           Capability = "hvrt"            // 130, 708
	CapLFRT           Capability = "lfrt"            // 135, 709
	CapHFRT           Capability = "hfrt"            // 136, 710
	CapStorageControl Capability = "storage-control" // 124, 802
	CapMPPT           Capability = "mppt"            // 160, 714
)

// kindRule assigns a kind to a device that exposes any of Models. The
// table is ordered: the first rule that matches wins.
type kindRule struct {
	Kind   kind.Kind
	Models []uint16
}

// kindRules classify devices. 802 (the battery base model) makes a battery
// even beside inverter models, because a device exposing it is a battery
// system; otherwise inverter models win over storage models (a hybrid
// inverter with 124 is an inverter with storage control).
var kindRules = []kindRule{
	{kind.Battery, []uint16{802}},
	{kind.Inverter, []uint16{101, 102, 103, 111, 112, 113, 701}},
	{kind.Meter, []uint16{201, 202, 203, 204, 211, 212, 213, 214}},
	{kind.Battery, []uint16{124, 713}},
	{kind.Sensor, []uint16{302, 303, 307, 308}},
}

// capabilityRules give the capabilities of a device from its models.
var capabilityRules = []struct {
	Cap    Capability
	Models []uint16
}{
	{CapPowerLimit, []uint16{123, 704}},
	{CapConnect, []uint16{123, 703}},
	{CapPowerFactor, []uint16{123, 704}},
	{CapReactivePower, []uint16{123, 704}},
	{CapVoltVar, []uint16{126, 705}},
	{CapFreqWatt, []uint16{127, 134, 711}},
	{CapVoltWatt, []uint16{132, 706}},
	{CapLVRT, []uint16{129, 707}},
	{CapHVRT, []uint16{130, 708}},
	{CapLFRT, []uint16{135, 709}},
	{CapHFRT, []uint16{136, 710}},
	{CapStorageControl, []uint16{124, 802}},
	{CapMPPT, []uint16{160, 714}},
}

// Classify returns the kind (kind.Unknown when no rule matches), platform
// and capabilities of a device that exposes the given model ids.
func Classify(ids []uint16) (kind.Kind, Platform, []Capability) {
	has := func(set []uint16) bool {
		for _, id := range set {
			if slices.Contains(ids, id) {
				return true
			}
		}
		return false
	}
	k := kind.Unknown
	for _, r := range kindRules {
		if has(r.Models) {
			k = r.Kind
			break
		}
	}
	platform := PlatformClassic
	for _, id := range ids {
		if id >= 700 && id < 800 {
			platform = PlatformDER
		}
	}
	var caps []Capability
	for _, r := range capabilityRules {
		if has(r.Models) {
			caps = append(caps, r.Cap)
		}
	}
	return k, platform, caps
}
