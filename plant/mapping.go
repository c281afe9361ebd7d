package plant

import (
	"math"

	"plantd/plant/kind"
)

// This file holds a device's channel values as Live keeps them. The
// device layer maps its points to channels (plantd/devices/channels: the
// SunSpec table, templates) and hands over [Reading]s; a consumer's
// reading comes from plantd/consumer.

// Reading is one channel value of a device.
type Reading struct {
	Channel Channel
	// Index is 0 for a plain channel and the input number (1, 2, ...) for
	// an indexed one; IndexLabel gives the API's label.
	Index int
	Value float64
}

// values holds a device's channel values. extract refills it without
// allocating once its inputs slice has grown to the device's size.
type values struct {
	scalar [numChannels]float64
	// setBy is the id of the rule that set a channel (0 = absent).
	setBy  [numChannels]uint16
	inputs []Reading // indexed channels, in rule order
	// dropped is the last value of a channel the plausibility check
	// dropped, for the log (nil until one was: 368 bytes per device).
	dropped *[numChannels]float64
}

func (v *values) reset() {
	v.setBy = [numChannels]uint16{}
	v.inputs = v.inputs[:0]
}

// get returns a plain channel's value.
func (v *values) get(c Channel) (float64, bool) {
	if !c.Valid() || v.setBy[c] == 0 || c.Indexed() {
		return 0, false
	}
	return v.scalar[c], true
}

// has reports whether the channel has a value (any input for an indexed
// channel).
func (v *values) has(c Channel) bool { return c.Valid() && v.setBy[c] != 0 }

// readingRule marks the channels a poll's readings set.
const readingRule = math.MaxUint16 - 1

// consumerRule marks the channels a consumer's reading sets (no SunSpec
// rule has this id).
const consumerRule = math.MaxUint16

// putConsumer sets the channels of a consumer's reading.
func (v *values) putConsumer(r *ConsumerReading) {
	v.reset()
	if r.HasPower && !math.IsNaN(r.PowerW) && !math.IsInf(r.PowerW, 0) {
		v.scalar[Consumption], v.setBy[Consumption] = r.PowerW, consumerRule
	}
	if r.HasEnergy && !math.IsNaN(r.EnergyWh) && !math.IsInf(r.EnergyWh, 0) {
		v.scalar[ConsumptionTotal], v.setBy[ConsumptionTotal] = r.EnergyWh, consumerRule
	}
}

// putReadings sets the channels of one poll's readings (the device
// layer's, already mapped to channels).
func (v *values) putReadings(rs []Reading) {
	v.reset()
	for _, r := range rs {
		if !r.Channel.Valid() || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			continue
		}
		v.setBy[r.Channel] = readingRule
		if r.Channel.Indexed() {
			v.inputs = append(v.inputs, Reading{Channel: r.Channel, Index: max(1, r.Index), Value: r.Value})
		} else {
			v.scalar[r.Channel] = r.Value
		}
	}
}

// SetsFor returns the measurement sets a device of kind k with nameplate n
// (nil: none known) can fill, in API order: the sets of every channel the
// device layer said the device feeds (Nameplate.Feeds, for a device of
// kind k).
func SetsFor(k kind.Kind, n *Nameplate) []SetType {
	if k == kind.Consumer {
		return []SetType{SetEnergyAndPowerConsumption}
	}
	seen := map[SetType]bool{}
	if n != nil {
		for _, f := range n.Feeds {
			if f.Kind == "" || f.Kind == k {
				seen[f.Channel.Set()] = true
			}
		}
	}
	order := []SetType{SetEnergyAndPowerPv, SetEnergyAndPowerInOut, SetEnergyAndPowerConsumption,
		SetEnergyAndPowerBattery, SetPowerAc, SetPowerDc, SetEnergyDc, SetEnergyMix, SetSensor}
	var out []SetType
	for _, s := range order {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out
}
