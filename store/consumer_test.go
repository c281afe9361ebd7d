package store

import (
	"math"
	"slices"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestConsumerSet: a consumer's readings (consumption, consumptionTotal)
// make its EnergyAndPowerConsumption set: listed for the device, a Day of
// 288 five-minute rows whose energy sums to its counter's day.
func TestConsumerSet(t *testing.T) {
	t.Parallel()
	loc := mustZone(t, "Europe/Berlin")
	s := openTest(t, Config{})
	stop := runStore(t, s)
	day := time.Date(2026, 6, 2, 0, 0, 0, 0, loc)
	var wh float64
	const step = 30 * time.Second
	first := wh
	for x := day; !x.After(day.Add(24 * time.Hour)); x = x.Add(step) {
		// A 3 kW heater on for the first 20 minutes of every hour.
		w := 0.0
		if x.Minute() < 20 {
			w = 3000
		}
		record(t, s, Measurement{PlantID: "p1", DeviceID: "heater", Kind: kind.Consumer, Time: x,
			Readings: []plant.Reading{{Channel: plant.Consumption, Value: w}, {Channel: plant.ConsumptionTotal, Value: math.Round(wh)}}})
		wh += w * step.Hours()
	}
	stop()
	sets, err := s.DeviceSets(t.Context(), "heater")
	if err != nil || !slices.Equal(sets, []plant.SetType{plant.SetEnergyAndPowerConsumption}) {
		t.Fatalf("sets = %v, %v; want [EnergyAndPowerConsumption]", sets, err)
	}
	res, err := s.QuerySet(t.Context(), plant.SetQuery{DeviceID: "heater", SetType: plant.SetEnergyAndPowerConsumption,
		Period: plant.PeriodDay, Date: day, ReturnEnergyValues: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 288 {
		t.Fatalf("%d rows, want 288", len(res.Rows))
	}
	var sum float64
	for _, r := range res.Rows {
		v, ok := r.Values["consumption"]
		if !ok {
			t.Fatalf("row %v has no consumption: %v", r.Start, r.Values)
		}
		sum += v
	}
	dayWh := wh - first - 3000*step.Hours() // the last sample is the next day's
	if math.Abs(sum-dayWh) > 0.01*dayWh {
		t.Errorf("Day sums to %.0f Wh, the counter says %.0f Wh", sum, dayWh)
	}
}
