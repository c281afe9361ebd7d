package charger

import (
	"testing"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

func TestReadMeterValues(t *testing.T) {
	v := func(m types.Measurand, phase types.Phase, unit types.UnitOfMeasure, value string) types.SampledValue {
		return types.SampledValue{Measurand: m, Phase: phase, Unit: unit, Value: value}
	}
	const (
		P   = types.MeasurandPowerActiveImport
		E   = types.MeasurandEnergyActiveImportRegister
		I   = types.MeasurandCurrentImport
		U   = types.MeasurandVoltage
		Off = types.MeasurandCurrentOffered
	)
	tests := []struct {
		name   string
		values [][]types.SampledValue // meter values, in order
		want   reading
	}{
		{"total power in kW, energy in kWh", [][]types.SampledValue{{v(P, "", "kW", "7.4"), v(E, "", "kWh", "12.5")}},
			reading{powerW: 7400, hasPower: true, energyWh: 12500, hasEnergy: true}},
		{"no measurand is the energy register in Wh", [][]types.SampledValue{{v("", "", "", "321")}},
			reading{energyWh: 321, hasEnergy: true}},
		{"phase powers summed", [][]types.SampledValue{{v(P, "L1", "W", "1000"), v(P, "L2", "W", "1100"), v(P, "L3", "W", "1200")}},
			reading{powerW: 3300, hasPower: true}},
		{"total wins over phases", [][]types.SampledValue{{v(P, "L1", "W", "1000"), v(P, "", "W", "2900")}},
			reading{powerW: 2900, hasPower: true}},
		{"currents times phase voltages", [][]types.SampledValue{{
			v(I, "L1", "A", "10"), v(I, "L2", "A", "10"), v(I, "L3", "A", "0"),
			v(U, "L1-N", "V", "230"), v(U, "L2-N", "V", "240"), v(U, "L3-N", "V", "230")}},
			reading{powerW: 4700, hasPower: true}},
		{"currents times one voltage", [][]types.SampledValue{{v(I, "L1", "A", "16"), v(U, "", "V", "230")}},
			reading{powerW: 3680, hasPower: true}},
		{"currents without voltage: no power", [][]types.SampledValue{{v(I, "L1", "A", "16")}}, reading{}},
		{"offered: largest phase", [][]types.SampledValue{{v(Off, "L1", "A", "10"), v(Off, "L2", "A", "16")}},
			reading{offeredA: 16, hasOffer: true}},
		{"SoC from the EV", [][]types.SampledValue{{{Measurand: types.MeasurandSoC, Location: types.LocationEV, Unit: "Percent", Value: "80"}}},
			reading{soc: 80, hasSoC: true}},
		{"later meter value wins", [][]types.SampledValue{{v(P, "", "W", "100")}, {v(P, "", "W", "200")}},
			reading{powerW: 200, hasPower: true}},
		{"skipped: signed, inlet, unknown unit, no number", [][]types.SampledValue{{
			{Measurand: P, Format: types.ValueFormatSignedData, Value: "abc"},
			{Measurand: P, Location: types.LocationInlet, Value: "5000"},
			v(E, "", "varh", "5"), v(P, "", "W", "n/a")}},
			reading{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mvs []types.MeterValue
			for _, svs := range tt.values {
				mvs = append(mvs, types.MeterValue{Timestamp: types.NewDateTime(time.Unix(0, 0)), SampledValue: svs})
			}
			if got := readMeterValues(mvs); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLimitProfileTimes(t *testing.T) {
	tests := []struct {
		name      string
		now       time.Time
		validity  time.Duration
		durationS int
		validTo   time.Time
	}{
		{"on the second", time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), time.Minute, 60, time.Date(2026, 6, 1, 12, 1, 0, 0, time.UTC)},
		{"within a second: rounded up", time.Date(2026, 6, 1, 12, 0, 0, 700e6, time.UTC), time.Minute, 61, time.Date(2026, 6, 1, 12, 1, 1, 0, time.UTC)},
		{"fraction in validity", time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 1500 * time.Millisecond, 2, time.Date(2026, 6, 1, 12, 0, 2, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := limitProfile(tt.now, tt.validity, 16, 3)
			s := p.ChargingSchedule
			if *s.Duration != tt.durationS || !p.ValidTo.Equal(tt.validTo) || !s.StartSchedule.Equal(tt.now.Truncate(time.Second)) ||
				!p.ValidFrom.Equal(s.StartSchedule.Time) {
				t.Fatalf("duration %d s, from %s, start %s, to %s", *s.Duration, p.ValidFrom.Time, s.StartSchedule.Time, p.ValidTo.Time)
			}
		})
	}
}

// TestStatusPlugged: the connector statuses with a car (OCPP 1.6 §4.9).
func TestStatusPlugged(t *testing.T) {
	for state, want := range map[string]bool{
		"": false, "Available": false, "Reserved": false, "Unavailable": false, "Faulted": false,
		"Preparing": true, "Charging": true, "SuspendedEV": true, "SuspendedEVSE": true, "Finishing": true,
	} {
		if got := (Status{State: state}).Plugged(); got != want {
			t.Errorf("%q: plugged %v, want %v", state, got, want)
		}
	}
}
