package channels

import (
	"errors"
	"os"
	. "plantd/plant"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/devices/template"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// TestTemplatesCompile compiles every embedded template against the
// channel table: its channel names and units are right.
func TestTemplatesCompile(t *testing.T) {
	all, err := template.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range all {
		m, err := CompileTemplate(tp)
		if err != nil {
			t.Errorf("template %s: %v", tp.Name, err)
			continue
		}
		if len(m.Channels()) == 0 {
			t.Errorf("template %s feeds no channel", tp.Name)
		}
	}
}

func TestCompileTemplateErrors(t *testing.T) {
	head := "name: x\nvendor: T\nkind: meter\nsource: {document: d}\nblocks:\n  - {function: 4, address: 0, count: 10}\npoints:\n"
	fixture, err := os.ReadFile("../template/testdata/unknownchannel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, yaml, want string
	}{
		{"unknown channel (fixture)", "testdata/unknownchannel.yaml", string(fixture), `testdata/unknownchannel.yaml:9: point b: unknown channel "voltageL1"`},
		{"unit of another channel", "x.yaml", head + "  - {name: a, address: 0, type: f32, unit: V, channel: activePower}\n", `x.yaml:8: point a: channel activePower is in "W", the point in "V"`},
		{"indexed without index", "x.yaml", head + "  - {name: a, address: 0, type: f32, unit: V, channel: dcVoltageInput}\n", "give index"},
		{"plain with index", "x.yaml", head + "  - {name: a, address: 0, type: f32, unit: V, channel: voltagePhaseA, index: 2}\n", "no index"},
		{"fed twice", "x.yaml", head + "  - {name: a, address: 0, type: f32, unit: W, channel: activePower}\n  - {name: b, address: 2, type: f32, unit: kW, channel: activePower}\n", "x.yaml:9: point b: channel activePower is fed by point a already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := template.Parse(tt.file, []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = CompileTemplate(tp)
			if err == nil || !errors.Is(err, template.ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CompileTemplate = %v, want an ErrTemplate containing %q", err, tt.want)
			}
		})
	}
}

// TestApplyTemplate feeds a template meter's readings through Apply: the
// channels, the split of the signed power, the bounds and the sets.
func TestApplyTemplate(t *testing.T) {
	tp, ok := template.Lookup("sdm630")
	if !ok {
		t.Fatal("no sdm630 template")
	}
	m, err := CompileTemplate(tp)
	if err != nil {
		t.Fatal(err)
	}
	regs := &template.Registers{Blocks: make([][]uint16, len(tp.Blocks))}
	for i, b := range tp.Blocks {
		regs.Blocks[i] = make([]uint16, b.Count)
	}
	put := func(name string, v float64) {
		p := tp.Point(name)
		bi := tp.BlockOf(slices.IndexFunc(tp.Points, func(q template.Point) bool { return q.Name == name }))
		off := int(p.Address - tp.Blocks[bi].Address)
		p.Encode(v, regs.Blocks[bi][off:off+p.Size()])
	}
	put("totalPower", -1500)
	put("frequency", 50)
	put("voltageL1", 1e6)        // implausible: dropped
	put("exportEnergy", 1234500) // Wh: the meter counts 1234.5 kWh
	info := &sunspec.Device{Manufacturer: tp.Vendor, Model: tp.Model, Kind: kind.Meter, Template: tp.Name}
	l := NewLive([]Plant{{ID: "p"}}, []DeviceInfo{{ID: "m", PlantID: "p"}}, nil)
	l.Apply(Sample{Device: "m", Time: time.Unix(1e9, 0), Nameplate: NameplateOf(info), Discovered: info, Readings: m.Readings(regs, nil)})
	d, _ := l.Device("m")
	for _, tt := range []struct {
		c    Channel
		want float64
		ok   bool
	}{
		{ActivePower, -1500, true},
		{GridFeedIn, 1500, true},
		{GridConsumption, 0, true},
		{GridFrequency, 50, true},
		{GridFeedInTotal, 1234500, true},
		{VoltagePhaseA, 0, false},
		{VoltagePhaseB, 0, true},
	} {
		got, ok := d.Value(tt.c)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s = %v, %v; want %v, %v", tt.c, got, ok, tt.want, tt.ok)
		}
	}
	if d.Info.Kind != kind.Meter || d.Nameplate == nil || d.Nameplate.Template != "sdm630" || d.Nameplate.Manufacturer != "Eastron" {
		t.Errorf("kind %q, nameplate %+v", d.Info.Kind, d.Nameplate)
	}
	if got := l.Implausible(); len(got) != 1 || got[0].Channel != VoltagePhaseA {
		t.Errorf("implausible = %v, want voltagePhaseA", got)
	}
	if got, want := SetsFor(kind.Meter, d.Nameplate), []SetType{SetEnergyAndPowerInOut, SetPowerAc}; !slices.Equal(got, want) {
		t.Errorf("SetsFor = %v, want %v", got, want)
	}
}

func TestSetsForTemplates(t *testing.T) {
	tests := []struct {
		name string
		k    kind.Kind
		want []SetType
	}{
		{"sdm72", kind.Meter, []SetType{SetEnergyAndPowerInOut, SetPowerAc}},
		{"sun2000", kind.Inverter, []SetType{SetEnergyAndPowerPv, SetEnergyAndPowerBattery, SetPowerAc, SetPowerDc}},
		{"e3dc", kind.Battery, []SetType{SetEnergyAndPowerBattery, SetPowerAc}},
	}
	for _, tt := range tests {
		if got := SetsFor(tt.k, NameplateOf(&sunspec.Device{Template: tt.name})); !slices.Equal(got, tt.want) {
			t.Errorf("SetsFor(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBalanceHybridInverter: a hybrid inverter's battery counts in the
// balance as a battery's, so the identity holds.
func TestBalanceHybridInverter(t *testing.T) {
	l := NewLive([]Plant{{ID: "p"}}, []DeviceInfo{{ID: "hyb", PlantID: "p"}, {ID: "m", PlantID: "p"}}, nil)
	now := time.Unix(1e9, 0)
	l.Apply(Sample{Device: "hyb", Time: now, Nameplate: NameplateOf(&sunspec.Device{Kind: kind.Inverter, Template: "sun2000"}), Discovered: &sunspec.Device{Kind: kind.Inverter, Template: "sun2000"}, Readings: []Reading{
		{Channel: ActivePower, Value: 3000}, {Channel: PVGeneration, Value: 5000},
		{Channel: BatteryCharging, Value: 2000}, {Channel: BatteryDischarging, Value: 0}, {Channel: BatteryStateOfCharge, Value: 40},
	}})
	l.Apply(Sample{Device: "m", Time: now, Nameplate: NameplateOf(&sunspec.Device{Kind: kind.Meter, Template: "sdm630"}), Discovered: &sunspec.Device{Kind: kind.Meter, Template: "sdm630"}, Readings: []Reading{
		{Channel: ActivePower, Value: -1000}, {Channel: GridConsumption, Value: 0}, {Channel: GridFeedIn, Value: 1000},
	}})
	b, err := l.EnergyBalance("p")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"pvGeneration", b.PVGenerationW, 5000},
		{"batteryCharging", b.BatteryChargingW, 2000},
		{"gridFeedIn", b.GridFeedInW, 1000},
		{"totalConsumption", b.TotalConsumptionW, 2000},
		{"batteryStateOfCharge", b.BatteryStateOfChargePct, 40},
	} {
		if f.got == nil || *f.got != f.want {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}
