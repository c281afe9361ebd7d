package plant

import (
	"testing"
	"time"

	"plantd/plant/kind"
)

// A device configured without a kind takes the kind discovery found.
func TestKindFromDiscovery(t *testing.T) {
	l := NewLive([]Plant{{ID: "p", Name: "P"}}, []DeviceInfo{{ID: "m", PlantID: "p", Name: "M"}}, nil)
	if d, _ := l.Device("m"); d.Info.Kind != "" {
		t.Fatalf("kind before discovery %q", d.Info.Kind)
	}
	l.Apply(Sample{Device: "m", Time: time.Now(), Nameplate: &Nameplate{Kind: kind.Meter}, State: StateOnline})
	if d, _ := l.Device("m"); d.Info.Kind != kind.Meter || d.Info.Type() != "Energy Meter" {
		t.Fatalf("kind after discovery %q (%s), want meter", d.Info.Kind, d.Info.Type())
	}
}

// A device configured without a kind that never answered may be the
// meter or an inverter: the live balance names it until discovery tells.
func TestBalanceNamesUndiscoveredDevice(t *testing.T) {
	l := NewLive([]Plant{{ID: "p", Name: "P"}}, []DeviceInfo{{ID: "m", PlantID: "p", Name: "M"}}, nil)
	b, err := l.EnergyBalance("p")
	if err != nil {
		t.Fatal(err)
	}
	if b.Error == nil || len(b.Error.Devices) != 1 || b.Error.Devices[0].DeviceID != "m" {
		t.Fatalf("balance error %+v, want device m named", b.Error)
	}
	l.Apply(Sample{Device: "m", Time: time.Now(), Nameplate: &Nameplate{Kind: kind.Sensor}, State: StateOnline})
	if b, _ := l.EnergyBalance("p"); b.Error != nil {
		t.Errorf("a sensor once discovered is no part of the balance; error %+v", b.Error)
	}
}

// DeviceStatuses gives what Devices gives, without the readings.
func TestDeviceStatusesWithoutReadings(t *testing.T) {
	l := NewLive([]Plant{{ID: "p", Name: "P"}}, []DeviceInfo{{ID: "m", PlantID: "p", Name: "M", Kind: kind.Meter}}, nil)
	l.Apply(Sample{Device: "m", Time: time.Now(), Nameplate: &Nameplate{Kind: kind.Meter},
		Readings: []Reading{{Channel: ActivePower, Value: 1500}}, State: StateOnline})
	full, _ := l.Devices("p")
	brief, err := l.DeviceStatuses("p")
	if err != nil || len(brief) != 1 || len(full) != 1 {
		t.Fatalf("%v %d %d", err, len(brief), len(full))
	}
	if len(full[0].Readings) == 0 || len(brief[0].Readings) != 0 {
		t.Errorf("readings: full %d, statuses %d; want some and none", len(full[0].Readings), len(brief[0].Readings))
	}
	if brief[0].Health != full[0].Health || brief[0].Comm.Status != full[0].Comm.Status || !brief[0].LastUpdate.Equal(full[0].LastUpdate) {
		t.Errorf("statuses %+v differ from devices %+v", brief[0], full[0])
	}
	if _, err := l.DeviceStatuses("nope"); err == nil {
		t.Error("unknown plant: no error")
	}
}
