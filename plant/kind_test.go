package plant

import (
	"testing"
	"time"

	"plantd/devices"
	"plantd/devices/poller"
)

// A device configured without a kind takes the kind discovery found.
func TestKindFromDiscovery(t *testing.T) {
	l := NewLive([]Plant{{ID: "p", Name: "P"}}, []DeviceInfo{{ID: "m", PlantID: "p", Name: "M"}}, nil)
	if d, _ := l.Device("m"); d.Info.Kind != "" {
		t.Fatalf("kind before discovery %q", d.Info.Kind)
	}
	l.Apply(poller.Sample{Device: "m", Time: time.Now(), Info: &devices.Device{Kind: devices.KindMeter}, State: poller.StateOnline})
	if d, _ := l.Device("m"); d.Info.Kind != KindMeter || d.Info.Type() != "Energy Meter" {
		t.Fatalf("kind after discovery %q (%s), want meter", d.Info.Kind, d.Info.Type())
	}
}
