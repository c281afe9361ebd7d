package hass

import (
	"fmt"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
)

// BenchmarkRound is the work of one round without the broker: the
// entities of a plant of 100 inverters with every plain channel of the
// demo's classic inverter and two DC inputs (power, voltage, current), and
// their configs encoded (what round compares with the last published).
func BenchmarkRound(b *testing.B) {
	const n = 100
	var readings []plant.Reading
	for _, c := range plant.Channels() {
		if !c.Indexed() && (c.Set() == plant.SetPowerAc || c == plant.PVGeneration || c == plant.PVGenerationTotal) {
			readings = append(readings, plant.Reading{Channel: c, Value: float64(1000 + len(readings))})
		}
	}
	for _, c := range []plant.Channel{plant.DCPowerInput, plant.DCVoltageInput, plant.DCCurrentInput} {
		for i := 1; i <= 2; i++ {
			readings = append(readings, plant.Reading{Channel: c, Index: i, Value: float64(100 * i)})
		}
	}
	var keys []sensorKey
	for _, r := range readings {
		keys = append(keys, keyOf(r))
	}
	p := plant.Plant{ID: "p1", Name: "Bench"}
	s := &snapshot{plants: []plant.Plant{p}, devices: map[string][]plant.DeviceLive{}, balances: map[string]plant.Balance{},
		energies: map[string]map[string]float64{"p1": {"pvGeneration": 1e6}}, limits: map[string]string{"p1": "100"},
		consumers: map[string]plant.ConsumerStatus{}, channels: map[string][]sensorKey{}}
	for i := range n {
		d := plant.DeviceLive{Info: plant.DeviceInfo{ID: fmt.Sprintf("inv%d", i), PlantID: "p1", Kind: kind.Inverter},
			Nameplate: &plant.Nameplate{Manufacturer: "M", Model: "X", Serial: fmt.Sprint(i)}, Health: plant.HealthOk,
			Readings: readings}
		s.devices["p1"] = append(s.devices["p1"], d)
		s.channels[d.Info.ID] = keys
	}
	l := &Link{cfg: Config{GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant", Version: "v"},
		configDevice: map[string]string{}, names: channelNames{}}
	// The connection's first round encodes every config; later ones only
	// those whose device changed.
	first, _ := l.changedConfigs(l.entities(s), true)
	b.ReportAllocs()
	entities, changed := 0, 0
	for b.Loop() {
		ents := l.entities(s)
		c, _ := l.changedConfigs(ents, false)
		entities, changed = len(ents), len(c)
	}
	b.ReportMetric(float64(entities), "entities")
	b.ReportMetric(float64(len(first)), "configs/first")
	b.ReportMetric(float64(changed), "configs/round")
}
