package mqtt

import (
	"encoding/json"
	"testing"
	"time"

	"plantd/plant"
)

// TestDeviceItemConsumer: a consumer's live item carries its switching
// state (and SG-Ready state, estimated flag) beside its channels; other
// devices carry none of them.
func TestDeviceItemConsumer(t *testing.T) {
	at := time.Date(2026, 11, 26, 11, 2, 4, 0, time.UTC)
	for _, tt := range []struct {
		name string
		dev  plant.DeviceLive
		want string
	}{
		{"heater", plant.DeviceLive{LastUpdate: at,
			Readings: []plant.Reading{{Channel: plant.Consumption, Value: 3000}, {Channel: plant.ConsumptionTotal, Value: 41250}},
			Consumer: &plant.ConsumerReading{Switch: plant.SwitchedOn}},
			`{"consumption":3000,"consumptionTotal":41250,"switchingState":"On","time":"2026-11-26T11:02:04Z"}`},
		{"heat pump, estimated", plant.DeviceLive{LastUpdate: at,
			Readings: []plant.Reading{{Channel: plant.Consumption, Value: 1600}},
			Consumer: &plant.ConsumerReading{Switch: plant.SwitchedOn, SGReady: 3, Estimated: true}},
			`{"consumption":1600,"consumptionEstimated":true,"sgReadyState":3,"switchingState":"On","time":"2026-11-26T11:02:04Z"}`},
		{"meter", plant.DeviceLive{LastUpdate: at, Readings: []plant.Reading{{Channel: plant.ActivePower, Value: -200}}},
			`{"activePower":-200,"time":"2026-11-26T11:02:04Z"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(deviceItem(tt.dev))
			if err != nil || string(b) != tt.want {
				t.Errorf("item %s (%v), want %s", b, err, tt.want)
			}
		})
	}
}
