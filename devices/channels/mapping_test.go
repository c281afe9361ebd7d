package channels

import (
	"math"
	. "plantd/plant"
	"slices"
	"testing"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// TestExtract decodes hand-made model images and checks each mapping,
// sign and priority rule.
func TestExtract(t *testing.T) {
	m := testMapping(t)
	inv103 := func(t testing.TB, pts ...pv) *sunspec.Instance { return mk(t, 103, nil, pts...) }
	tests := []struct {
		name   string
		kind   kind.Kind
		models func(t testing.TB) []*sunspec.Instance
		want   map[Channel]float64
		inputs []Reading // indexed channels, in any order
		absent []Channel
	}{
		{
			name: "classic inverter producing",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{inv103(t,
					sf("A_SF", -2), sf("V_SF", -1), sf("Hz_SF", -2), sf("PF_SF", -1), sf("DCA_SF", -2), sf("DCV_SF", -1),
					val("W", 6234), val("VA", 6300), val("VAr", -120), val("PF", 98.5), val("Hz", 50.02),
					val("PhVphA", 230.1), val("PhVphB", 231.4), val("PhVphC", 229.9),
					val("PPVphAB", 399.8), val("AphA", 9.03), val("WH", 12345678),
					val("DCW", 6400), val("DCV", 612.3), val("DCA", 10.45),
					raw("St", 4))}
			},
			want: map[Channel]float64{
				ActivePower: 6234, PVGeneration: 6234, ApparentPower: 6300, ReactivePower: -120,
				DisplacementPowerFactor: 0.985, GridFrequency: 50.02, VoltagePhaseA: 230.1, VoltagePhaseB: 231.4,
				VoltagePhaseC: 229.9, VoltagePhaseA2B: 399.8, CurrentPhaseA: 9.03, PVGenerationTotal: 12345678,
			},
			inputs: []Reading{{Channel: DCPowerInput, Index: 1, Value: 6400}, {Channel: DCVoltageInput, Index: 1, Value: 612.3}, {Channel: DCCurrentInput, Index: 1, Value: 10.45}},
			absent: []Channel{VoltagePhaseB2C, CurrentPhaseB, ActivePowerPhaseA, GridFeedIn, IsolationResistance},
		},
		{
			name: "classic inverter drawing power at night: generation 0, activePower keeps the sign",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{inv103(t, val("W", -12), raw("St", 2))}
			},
			want: map[Channel]float64{ActivePower: -12, PVGeneration: 0},
		},
		{
			name:   "not implemented W: no activePower, no pvGeneration, not 0",
			kind:   kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{inv103(t, raw("St", 2))} },
			absent: []Channel{ActivePower, PVGeneration, PVGenerationTotal, DCPowerInput},
		},
		{
			name: "scale factor not implemented: value absent",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				in := inv103(t, val("W", 5000))
				if err := in.SetRaw("W_SF", 0x8000); err != nil {
					t.Fatal(err)
				}
				return []*sunspec.Instance{in}
			},
			absent: []Channel{ActivePower, PVGeneration},
		},
		{
			name: "float inverter 113, 122 energy as fallback and isolation",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{
					mk(t, 122, nil, sf("Ris_SF", 3), val("Ris", 1200000), val("ActWh", 987654)),
					mk(t, 113, nil, val("W", 2500.5), val("PF", 0.97), val("Hz", 49.98)),
				}
			},
			want: map[Channel]float64{ActivePower: 2500.5, PVGeneration: 2500.5, DisplacementPowerFactor: 0.97,
				GridFrequency: 49.98, IsolationResistance: 1200000, PVGenerationTotal: 987654},
		},
		{
			name: "1xx WH wins over 122 ActWh whatever the chain order",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 122, nil, val("ActWh", 111)), inv103(t, val("WH", 222))}
			},
			want: map[Channel]float64{PVGenerationTotal: 222},
		},
		{
			name: "DER inverter 701: per-phase, energy, ratio power factor",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 701, nil,
					sf("PF_SF", -3), sf("V_SF", -1), sf("A_SF", -2), sf("Hz_SF", -3),
					val("W", 7400), val("WL1", 2470), val("WL2", 2465), val("WL3", 2465),
					val("Var", 300), val("VarL1", 100), val("VA", 7410), val("VAL3", 2470),
					val("PF", -0.998), val("Hz", 50.012), val("VL1", 230.5), val("VL1L2", 400.1), val("VL3L1", 399.7),
					val("AL2", 10.7), val("TotWhInj", 55555555), val("TotWhAbs", 1234),
					raw("InvSt", 3))}
			},
			want: map[Channel]float64{ActivePower: 7400, PVGeneration: 7400, ActivePowerPhaseA: 2470,
				ActivePowerPhaseB: 2465, ActivePowerPhaseC: 2465, ReactivePower: 300, ReactivePowerPhaseA: 100,
				ApparentPower: 7410, ApparentPowerPhaseC: 2470, DisplacementPowerFactor: -0.998, GridFrequency: 50.012,
				VoltagePhaseA: 230.5, VoltagePhaseA2B: 400.1, VoltagePhaseC2A: 399.7, CurrentPhaseB: 10.7,
				PVGenerationTotal: 55555555},
		},
		{
			name:   "DER inverter absorbing: generation 0",
			kind:   kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 701, nil, val("W", -300))} },
			want:   map[Channel]float64{ActivePower: -300, PVGeneration: 0},
		},
		{
			name: "MPPT modules (160) win over the 103 DC total",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				inv := inv103(t, val("DCW", 9000), val("DCV", 600))
				mppt := mk(t, 160, map[string]int{"module": 2}, raw("N", 2), sf("DCA_SF", -2), sf("DCV_SF", -1))
				setGroup(t, mppt, "module", 0, val("DCW", 5000), val("DCV", 610.5), val("DCA", 8.19), val("DCWH", 1000))
				setGroup(t, mppt, "module", 1, val("DCW", 4000), val("DCV", 590.2), val("DCA", 6.78), val("DCWH", 2000))
				return []*sunspec.Instance{inv, mppt}
			},
			inputs: []Reading{
				{Channel: DCPowerInput, Index: 1, Value: 5000}, {Channel: DCPowerInput, Index: 2, Value: 4000},
				{Channel: DCVoltageInput, Index: 1, Value: 610.5}, {Channel: DCVoltageInput, Index: 2, Value: 590.2},
				{Channel: DCCurrentInput, Index: 1, Value: 8.19}, {Channel: DCCurrentInput, Index: 2, Value: 6.78},
				{Channel: DCEnergyInput, Index: 1, Value: 1000}, {Channel: DCEnergyInput, Index: 2, Value: 2000},
			},
		},
		{
			name: "DER DC ports (714), total only when no port gives it",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				dc := mk(t, 714, map[string]int{"NPrt": 2}, sf("DCV_SF", -1), val("DCW", 7700), val("DCA", 13), val("DCWhInj", 5e6))
				setGroup(t, dc, "Prt", 0, val("DCW", 3900), val("DCV", 601.5))
				setGroup(t, dc, "Prt", 1, val("DCW", 3800), val("DCV", 598.5))
				return []*sunspec.Instance{dc}
			},
			inputs: []Reading{
				{Channel: DCPowerInput, Index: 1, Value: 3900}, {Channel: DCPowerInput, Index: 2, Value: 3800},
				{Channel: DCVoltageInput, Index: 1, Value: 601.5}, {Channel: DCVoltageInput, Index: 2, Value: 598.5},
				{Channel: DCCurrentInput, Index: 1, Value: 13}, {Channel: DCEnergyInput, Index: 1, Value: 5e6},
			},
		},
		{
			name: "meter importing: gridConsumption, feed-in 0",
			kind: kind.Meter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 203, nil, sf("V_SF", -1), sf("Hz_SF", -2), sf("PF_SF", -1),
					val("W", 1200), val("WphA", 400), val("WphB", 500), val("WphC", 300), val("PhVphA", 231.2),
					val("PhVphAB", 400.4), val("Hz", 50.01), val("PF", -95.5), val("VAR", -250),
					val("TotWhImp", 4200001), val("TotWhExp", 7900001))}
			},
			want: map[Channel]float64{ActivePower: 1200, GridConsumption: 1200, GridFeedIn: 0,
				ActivePowerPhaseA: 400, ActivePowerPhaseB: 500, ActivePowerPhaseC: 300, VoltagePhaseA: 231.2,
				VoltagePhaseA2B: 400.4, GridFrequency: 50.01, DisplacementPowerFactor: -0.955, ReactivePower: -250,
				GridConsumptionTotal: 4200001, GridFeedInTotal: 7900001},
		},
		{
			name: "meter exporting: gridFeedIn, consumption 0",
			kind: kind.Meter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 203, nil, val("W", -3000))}
			},
			want: map[Channel]float64{ActivePower: -3000, GridConsumption: 0, GridFeedIn: 3000},
		},
		{
			name: "meter 201 names line voltages PPVph",
			kind: kind.Meter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 201, nil, sf("V_SF", -1), val("PPVphAB", 401.1), val("W", 0))}
			},
			want: map[Channel]float64{VoltagePhaseA2B: 401.1, GridConsumption: 0, GridFeedIn: 0},
		},
		{
			name: "float meter 213",
			kind: kind.Meter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 213, nil, val("W", -812.5), val("PPVphBC", 398), val("PF", 0.9), val("TotWhExp", 123.5))}
			},
			want: map[Channel]float64{ActivePower: -812.5, GridFeedIn: 812.5, GridConsumption: 0, VoltagePhaseB2C: 398,
				DisplacementPowerFactor: 0.9, GridFeedInTotal: 123.5},
		},
		{
			name: "meter rows for grid need a meter device",
			kind: kind.Inverter,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 203, nil, val("W", 1000))}
			},
			want:   map[Channel]float64{ActivePower: 1000},
			absent: []Channel{GridConsumption, GridFeedIn},
		},
		{
			name: "battery discharging (802 W > 0), 802 SoC wins over 713 and 124",
			kind: kind.Battery,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{
					mk(t, 124, nil, val("ChaState", 11), val("InBatV", 49)),
					mk(t, 713, nil, val("SoC", 22), val("SoH", 90)),
					mk(t, 802, nil, sf("V_SF", -1), sf("A_SF", -2), val("W", 2000), val("SoC", 63), val("SoH", 97),
						val("V", 51.2), val("A", 39.06)),
				}
			},
			want: map[Channel]float64{ActivePower: 2000, BatteryDischarging: 2000, BatteryCharging: 0,
				BatteryStateOfCharge: 63, BatteryStateOfHealth: 97},
			inputs: []Reading{{Channel: BatteryVoltage, Index: 1, Value: 51.2}, {Channel: BatteryCurrent, Index: 1, Value: 39.06}},
		},
		{
			name: "battery charging (802 W < 0); SoC from 713 when 802 has none",
			kind: kind.Battery,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{
					mk(t, 802, nil, sf("A_SF", -2), val("W", -1500), val("A", -29.3)),
					mk(t, 713, nil, val("SoC", 41)),
					mk(t, 124, nil, val("ChaState", 40)),
				}
			},
			want:   map[Channel]float64{ActivePower: -1500, BatteryCharging: 1500, BatteryDischarging: 0, BatteryStateOfCharge: 41},
			inputs: []Reading{{Channel: BatteryCurrent, Index: 1, Value: -29.3}},
		},
		{
			name: "storage controls only (124): SoC and voltage",
			kind: kind.Battery,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 124, nil, sf("ChaState_SF", -1), sf("InBatV_SF", -1), val("ChaState", 55.5), val("InBatV", 52.3))}
			},
			want:   map[Channel]float64{BatteryStateOfCharge: 55.5},
			inputs: []Reading{{Channel: BatteryVoltage, Index: 1, Value: 52.3}},
			absent: []Channel{BatteryCharging, BatteryDischarging, ActivePower},
		},
		{
			name: "weather station 308",
			kind: kind.Sensor,
			models: func(t testing.TB) []*sunspec.Instance {
				return []*sunspec.Instance{mk(t, 308, nil, val("GHI", 845), val("TmpBOM", 41.3), val("TmpAmb", 22.7), val("WndSpd", 3))}
			},
			want: map[Channel]float64{ExternalInsolation: 845, ModuleTemperature: 41.3, AmbientTemperature: 22.7, WindSpeed: 3},
		},
		{
			name: "302 plane-of-array irradiance wins over GHI of 302 and 308",
			kind: kind.Sensor,
			models: func(t testing.TB) []*sunspec.Instance {
				irr := mk(t, 302, map[string]int{"repeating": 2})
				setGroup(t, irr, "repeating", 0, val("GHI", 700), val("POAI", 910))
				setGroup(t, irr, "repeating", 1, val("POAI", 1))
				return []*sunspec.Instance{mk(t, 308, nil, val("GHI", 650)), irr}
			},
			want: map[Channel]float64{ExternalInsolation: 910},
		},
		{
			name: "302 without POAI: its GHI",
			kind: kind.Sensor,
			models: func(t testing.TB) []*sunspec.Instance {
				irr := mk(t, 302, map[string]int{"repeating": 1})
				setGroup(t, irr, "repeating", 0, val("GHI", 700))
				return []*sunspec.Instance{irr}
			},
			want: map[Channel]float64{ExternalInsolation: 700},
		},
		{
			name: "303 back-of-module temperature and 307 station",
			kind: kind.Sensor,
			models: func(t testing.TB) []*sunspec.Instance {
				bom := mk(t, 303, map[string]int{"temp": 2})
				setGroup(t, bom, "temp", 0, val("TmpBOM", 38.5))
				setGroup(t, bom, "temp", 1, val("TmpBOM", 39.5))
				return []*sunspec.Instance{bom, mk(t, 307, nil, val("TmpAmb", 18.2), val("WndSpd", 5))}
			},
			want: map[Channel]float64{ModuleTemperature: 38.5, AmbientTemperature: 18.2, WindSpeed: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := extractAll(m, tt.kind, tt.models(t))
			for c, want := range tt.want {
				got, ok := v.get(c)
				if !ok {
					t.Errorf("%s: absent, want %v", c, want)
					continue
				}
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", c, got, want)
				}
			}
			for _, c := range tt.absent {
				if v.has(c) {
					t.Errorf("%s present, want absent", c)
				}
			}
			got := slices.Clone(v.inputs)
			sortReadings(got)
			want := slices.Clone(tt.inputs)
			sortReadings(want)
			if len(got) != len(want) {
				t.Fatalf("inputs = %v, want %v", got, want)
			}
			for i := range got {
				if got[i].Channel != want[i].Channel || got[i].Index != want[i].Index ||
					math.Abs(got[i].Value-want[i].Value) > 1e-6*math.Max(1, math.Abs(want[i].Value)) {
					t.Errorf("input %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func sortReadings(rs []Reading) {
	slices.SortFunc(rs, func(a, b Reading) int {
		if a.Channel != b.Channel {
			return int(a.Channel) - int(b.Channel)
		}
		return a.Index - b.Index
	})
}

// TestExtractReplaces checks that a second sample replaces the values: a
// point that became not implemented disappears instead of keeping its old
// value.
func TestExtractReplaces(t *testing.T) {
	m := testMapping(t)
	var e extractor
	v := extractWith(m, &e, kind.Inverter, []*sunspec.Instance{mk(t, 103, nil, val("W", 5000), val("DCW", 5100))})
	if !v.has(ActivePower) || !v.has(DCPowerInput) {
		t.Fatal("first sample: values missing")
	}
	v = extractWith(m, &e, kind.Inverter, []*sunspec.Instance{mk(t, 103, nil, val("W", 5000), notImpl("W"), raw("St", 2))})
	if v.has(ActivePower) || v.has(DCPowerInput) || len(v.inputs) != 0 {
		t.Errorf("second sample kept old values: %v %v", v.scalar, v.inputs)
	}
}

func TestPowerFactorConversion(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{1, 1},
		{-1, -1},
		{0.95, 0.95},
		{95, 0.95},
		{-99.8, -0.998},
		{100, 1},
		{0, 0},
		{100.4, 1}, // rounding above 100 % is clamped
	}
	for _, tt := range tests {
		if got := powerFactor.apply(tt.in); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("power factor %v → %v, want %v", tt.in, got, tt.want)
		}
	}
}

// testStatus are the compiled status tables.
var testStatus = must(compileStatus())

// extracted is one extraction's readings, by channel.
type extracted struct {
	scalar map[Channel]float64
	inputs []Reading // indexed channels, in row order
}

// extractAll maps models of a device of kind k with a fresh extractor.
func extractAll(m *mapping, k kind.Kind, models []*sunspec.Instance) extracted {
	var e extractor
	return extractWith(m, &e, k, models)
}

// extractWith maps models with e, as a device's successive polls do.
func extractWith(m *mapping, e *extractor, k kind.Kind, models []*sunspec.Instance) extracted {
	v := extracted{scalar: map[Channel]float64{}}
	for _, r := range m.extract(e, models, newRoute(m, testStatus, k, models), nil) {
		if r.Channel.Indexed() {
			v.inputs = append(v.inputs, r)
		} else {
			v.scalar[r.Channel] = r.Value
		}
	}
	return v
}

func (v extracted) get(c Channel) (float64, bool) {
	f, ok := v.scalar[c]
	return f, ok
}

func (v extracted) has(c Channel) bool {
	_, ok := v.scalar[c]
	return ok || slices.ContainsFunc(v.inputs, func(r Reading) bool { return r.Channel == c })
}
