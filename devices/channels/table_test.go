package channels

import (
	. "plantd/plant"
	"slices"
	"testing"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// unitOK says which SunSpec units may feed a channel unit (with the row's
// conversion).
var unitOK = map[Unit][]string{
	UnitW:       {"W"},
	UnitWh:      {"Wh", "WH"},
	UnitVA:      {"VA"},
	UnitVar:     {"var", "Var"},
	UnitV:       {"V"},
	UnitA:       {"A"},
	UnitHz:      {"Hz"},
	UnitOhm:     {"ohms"},
	UnitPercent: {"Pct", "%", "%WHRtg", "% AhrRtg"},
	UnitRatio:   {"Pct", "PF", ""},
	UnitCelsius: {"C"},
	UnitWm2:     {"W/m2"},
	UnitMS:      {"m/s", "mps"},
}

// lookupPoint finds a row's point in the generated definitions.
func lookupPoint(t *testing.T, mid uint16, group, point string) *sunspec.Point {
	t.Helper()
	m := sunspec.ModelByID(mid)
	if m == nil {
		t.Errorf("model %d: not in devices' model definitions", mid)
		return nil
	}
	if group == "" {
		p := m.Point(point)
		if p == nil {
			t.Errorf("model %d: no point %q", mid, point)
		}
		return p
	}
	for i := range m.Group.Groups {
		g := &m.Group.Groups[i]
		if g.Name == group {
			if j := g.PointIndex(point); j >= 0 {
				return &g.Points[j]
			}
			t.Errorf("model %d group %s: no point %q", mid, group, point)
			return nil
		}
	}
	t.Errorf("model %d: no group %q", mid, group)
	return nil
}

// TestChannelTable checks every row of the SunSpec-to-API table against
// the model definitions: the model, group and point exist (so a typo
// fails), the point is numeric, and its unit fits the channel's.
func TestChannelTable(t *testing.T) {
	if _, err := compileTable(channelTable); err != nil {
		t.Error(err)
	}
	for _, rs := range channelTable {
		for _, mid := range rs.Models {
			for _, pr := range rs.Points {
				p := lookupPoint(t, mid, rs.Group, pr.Point)
				if p == nil {
					continue
				}
				if !p.Type.Numeric() {
					t.Errorf("model %d %s → %s: type %s is not numeric", mid, pr.Point, pr.Channel, p.Type)
				}
				ok := unitOK[pr.Channel.Unit()]
				if !slices.Contains(ok, p.Units) {
					t.Errorf("model %d %s (units %q) → %s (unit %q): units do not fit", mid, pr.Point, p.Units, pr.Channel, pr.Channel.Unit())
				}
				if (pr.Conv == powerFactor) != (pr.Channel == DisplacementPowerFactor) {
					t.Errorf("model %d %s → %s: power-factor conversion on the wrong channel", mid, pr.Point, pr.Channel)
				}
				if pr.Channel.Counter() && !p.Type.Accumulator() && p.Type != sunspec.TypeUint64 && p.Type != sunspec.TypeFloat32 {
					t.Errorf("model %d %s → counter %s: type %s is not a counter", mid, pr.Point, pr.Channel, p.Type)
				}
			}
		}
	}
}

// TestChannelTableCoverage checks that every poll model devices classifies
// a device by maps its main power and energy points for that kind, and
// that every channel but the documented exceptions has a source.
func TestChannelTableCoverage(t *testing.T) {
	type need struct {
		kind     kind.Kind
		models   []uint16
		channels []Channel
	}
	needs := []need{
		{kind.Inverter, []uint16{101, 102, 103, 111, 112, 113, 701},
			[]Channel{ActivePower, PVGeneration, PVGenerationTotal, ReactivePower, ApparentPower, GridFrequency, DisplacementPowerFactor, VoltagePhaseA, CurrentPhaseA}},
		{kind.Inverter, []uint16{101, 102, 103, 111, 112, 113, 160, 714}, []Channel{DCPowerInput, DCCurrentInput}},
		{kind.Inverter, []uint16{122}, []Channel{IsolationResistance, PVGenerationTotal}},
		{kind.Meter, []uint16{201, 202, 203, 204, 211, 212, 213, 214},
			[]Channel{ActivePower, GridFeedIn, GridConsumption, GridFeedInTotal, GridConsumptionTotal, ActivePowerPhaseA,
				VoltagePhaseA, VoltagePhaseA2B, CurrentPhaseA, GridFrequency, DisplacementPowerFactor, ReactivePower, ApparentPower}},
		{kind.Battery, []uint16{802}, []Channel{ActivePower, BatteryCharging, BatteryDischarging, BatteryStateOfCharge, BatteryStateOfHealth, BatteryVoltage, BatteryCurrent}},
		{kind.Battery, []uint16{713}, []Channel{BatteryStateOfCharge}},
		{kind.Battery, []uint16{124}, []Channel{BatteryStateOfCharge}},
		{kind.Sensor, []uint16{302, 308}, []Channel{ExternalInsolation}},
		{kind.Sensor, []uint16{303, 308}, []Channel{ModuleTemperature}},
		{kind.Sensor, []uint16{307, 308}, []Channel{AmbientTemperature, WindSpeed}},
	}
	maps := func(k kind.Kind, mid uint16, c Channel) bool {
		for _, rs := range channelTable {
			if rs.Kind != "" && rs.Kind != k || !slices.Contains(rs.Models, mid) {
				continue
			}
			for _, pr := range rs.Points {
				if pr.Channel == c {
					return true
				}
			}
		}
		return false
	}
	for _, n := range needs {
		for _, mid := range n.models {
			for _, c := range n.channels {
				if !maps(n.kind, mid, c) {
					t.Errorf("%s model %d: no row gives %s", n.kind, mid, c)
				}
			}
		}
	}

	// Every measurement model devices polls maps at least one channel;
	// controls (123, 704) have no measurements.
	controls := []uint16{123, 704}
	for _, id := range pollModelIDs(t) {
		if slices.Contains(controls, id) {
			continue
		}
		found := false
		for _, rs := range channelTable {
			found = found || slices.Contains(rs.Models, id)
		}
		if !found {
			t.Errorf("poll model %d maps no channel", id)
		}
	}

	// Every channel has a SunSpec source, but batteryTemperature (no known
	// model has one; see doc.go) and the consumers' channels (from
	// Sample.Consumer, not from SunSpec models).
	noSource := []Channel{BatteryTemperature, Consumption, ConsumptionTotal}
	for _, c := range Channels() {
		found := false
		for _, rs := range channelTable {
			for _, pr := range rs.Points {
				found = found || pr.Channel == c
			}
		}
		if found == slices.Contains(noSource, c) {
			t.Errorf("channel %s: has a source = %v, want %v", c, found, !found)
		}
	}
}

// pollModelIDs asks devices which models a measurement poll reads, through
// a device that has every known model.
func pollModelIDs(t *testing.T) []uint16 {
	t.Helper()
	d := &sunspec.Device{}
	for _, m := range sunspec.Models() {
		d.Models = append(d.Models, sunspec.ModelRef{ID: m.ID})
	}
	var ids []uint16
	for _, r := range d.PollModels() {
		ids = append(ids, r.ID)
	}
	if len(ids) == 0 {
		t.Fatal("devices polls no model")
	}
	return ids
}

func TestSetsFor(t *testing.T) {
	tests := []struct {
		kind   kind.Kind
		models []uint16
		want   []SetType
	}{
		{kind.Inverter, []uint16{1, 103, 120, 121, 122, 123}, []SetType{SetEnergyAndPowerPv, SetPowerAc, SetPowerDc}},
		{kind.Inverter, []uint16{1, 701, 702, 704}, []SetType{SetEnergyAndPowerPv, SetPowerAc}},
		{kind.Inverter, []uint16{1, 701, 714}, []SetType{SetEnergyAndPowerPv, SetPowerAc, SetPowerDc, SetEnergyDc}},
		{kind.Meter, []uint16{1, 203}, []SetType{SetEnergyAndPowerInOut, SetPowerAc}},
		{kind.Battery, []uint16{1, 124, 713, 802}, []SetType{SetEnergyAndPowerBattery, SetPowerAc}},
		{kind.Sensor, []uint16{1, 308}, []SetType{SetSensor}},
		{kind.Sensor, []uint16{1}, nil},
	}
	for _, tt := range tests {
		if got := SetsFor(tt.kind, NameplateOf(withModels(tt.models...))); !slices.Equal(got, tt.want) {
			t.Errorf("SetsFor(%s, %v) = %v, want %v", tt.kind, tt.models, got, tt.want)
		}
	}
}

// withModels is a device whose chain holds the given models.
func withModels(ids ...uint16) *sunspec.Device {
	d := &sunspec.Device{}
	for _, id := range ids {
		d.Models = append(d.Models, sunspec.ModelRef{ID: id})
	}
	return d
}
