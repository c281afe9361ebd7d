package template

import (
	"math"
	"testing"
)

// TestDecode decodes hand-written register dumps, the bytes as the
// vendors' documents lay them out, independently of Encode.
func TestDecode(t *testing.T) {
	const head = "name: x\nvendor: T\nkind: inverter\nsource: {document: d}\nblocks:\n  - {function: 3, address: 100, count: 12}\npoints:\n"
	tests := []struct {
		name  string
		point string // the point's YAML, at address 100
		regs  []uint16
		want  float64
		ok    bool
	}{
		{"f32 high word first (Eastron)", "{name: p, address: 100, type: f32, unit: V}", []uint16{0x4366, 0x0000}, 230, true},
		{"f32 kWh to Wh", "{name: p, address: 100, type: f32, unit: kWh}", []uint16{0x3FC0, 0x0000}, 1500, true},
		{"f32 NaN is no value", "{name: p, address: 100, type: f32, unit: W}", []uint16{0x7FC0, 0x0000}, 0, false},
		{"u32 low word first (Sungrow)", "{name: p, address: 100, type: u32, order: low-first, unit: W}", []uint16{0xE240, 0x0001}, 123456, true},
		{"s32 high word first, gain 1000 (Huawei kW)", "{name: p, address: 100, type: s32, scale: 0.001, unit: kW}", []uint16{0xFFFF, 0xEC78}, -5000, true},
		{"s32 low word first, negated (E3/DC)", "{name: p, address: 100, type: s32, order: low-first, unit: W, negate: true}", []uint16{0xFC18, 0xFFFF}, 1000, true},
		{"s16 negative", "{name: p, address: 100, type: s16, scale: 0.1, unit: °C}", []uint16{0xFFFB}, -0.5, true},
		{"u16 MΩ to Ω", "{name: p, address: 100, type: u16, scale: 0.001, unit: MΩ}", []uint16{2500}, 2.5e6, true},
		{"scale register 10^-2", "{name: p, address: 100, type: u16, scaleRegister: 101, unit: Hz}\n  - {name: sf, address: 101, type: s16}", []uint16{5002, 0xFFFE}, 50.02, true},
		{"scale register not implemented", "{name: p, address: 100, type: u16, scaleRegister: 101, unit: Hz}\n  - {name: sf, address: 101, type: s16}", []uint16{5002, 0x8000}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := Parse("x.yaml", []byte(head+"  - "+tt.point+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			regs := &Registers{Blocks: [][]uint16{make([]uint16, 12)}}
			copy(regs.Blocks[0], tt.regs)
			got, ok := tp.Value(tp.Point("p"), regs)
			if ok != tt.ok || ok && math.Abs(got-tt.want) > 1e-9*math.Max(1, math.Abs(tt.want)) {
				t.Errorf("Value = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
			if !tt.ok || tp.Point("p").HasScaleRegister {
				return
			}
			// Encode writes the same registers back.
			w := make([]uint16, len(tt.regs))
			if back := tp.Point("p").Encode(got, w); back != got {
				t.Errorf("Encode read back %v, want %v", back, got)
			}
			for i := range w {
				if w[i] != tt.regs[i] {
					t.Errorf("Encode = %04x, want %04x", w, tt.regs)
					break
				}
			}
		})
	}
}

func TestText(t *testing.T) {
	tp, err := Parse("x.yaml", []byte("name: x\nvendor: T\nkind: meter\nsource: {document: d}\nblocks:\n  - {function: 3, address: 0, count: 4}\npoints:\n  - {name: s, address: 0, type: str, length: 4, nameplate: serial}\n"))
	if err != nil {
		t.Fatal(err)
	}
	regs := &Registers{Blocks: [][]uint16{{'S'<<8 | 'N', '1'<<8 | '2', '3'<<8 | ' ', 0}}}
	if got, _ := tp.Text(tp.Point("s"), regs); got != "SN123" {
		t.Errorf("Text = %q, want SN123", got)
	}
	if pl := tp.Plate(regs); pl.Serial != "SN123" || pl.Manufacturer != "T" {
		t.Errorf("Plate = %+v", pl)
	}
}
