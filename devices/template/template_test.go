package template

import (
	"errors"
	"strings"
	"testing"

	"plantd/plant/kind"
)

func TestEmbedded(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]kind.Kind{"sdm630": kind.Meter, "sdm72": kind.Meter, "sdm120": kind.Meter,
		"sun2000": kind.Inverter, "sungrow_sh": kind.Inverter, "e3dc": kind.Battery}
	if len(all) != len(want) {
		t.Errorf("%d templates %v, want %d", len(all), Names(), len(want))
	}
	for _, tp := range all {
		if k, ok := want[tp.Name]; !ok || k != tp.Kind {
			t.Errorf("template %s: kind %s, want %s", tp.Name, tp.Kind, k)
		}
		if tp.Source.Document == "" || tp.Source.URL == "" {
			t.Errorf("template %s: no source cited", tp.Name)
		}
		if len(tp.Identify) == 0 {
			t.Errorf("template %s: no identification", tp.Name)
		}
		if n := tp.PollRequests(); n > 4 {
			t.Errorf("template %s: %d reads per poll", tp.Name, n)
		}
	}
}

func TestParseErrors(t *testing.T) {
	head := "name: x\nvendor: T\nkind: meter\nsource: {document: d}\nblocks:\n  - {function: 4, address: 0, count: 10}\n"
	tests := []struct {
		name, file, yaml string
		want             string // in the error
	}{
		{"overlapping points", "testdata/overlap.yaml", "", "testdata/overlap.yaml:10: points[1] b: registers 1+2 overlap point a (line 9)"},
		{"unknown type", "testdata/badtype.yaml", "", `testdata/badtype.yaml:9: points[1] b: type "f64"`},
		{"unknown key", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16, colour: red}\n", "field colour not found"},
		{"point outside blocks", "x.yaml", head + "points:\n  - {name: a, address: 9, type: u32}\n", "x.yaml:8: points[0] a: registers 9+2 are in no block"},
		{"str without length", "x.yaml", head + "points:\n  - {name: a, address: 0, type: str}\n", "x.yaml:8: points[0] a: length 0"},
		{"low-first on 16 bits", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16, order: low-first}\n", "only for 32-bit types"},
		{"unknown unit", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16, unit: PS}\n", `unit "PS"`},
		{"zero scale", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16, scale: 0}\n", "scale 0"},
		{"duplicate name", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16}\n  - {name: a, address: 1, type: u16}\n", `x.yaml:9: points[1]: name "a" used twice`},
		{"identify unknown point", "x.yaml", head + "identify:\n  - {point: nope, equals: 1}\npoints:\n  - {name: a, address: 0, type: u16}\n", `x.yaml:8: identify[0]: unknown point "nope"`},
		{"identify two conditions", "x.yaml", head + "identify:\n  - {point: a, equals: 1, range: [0, 2]}\npoints:\n  - {name: a, address: 0, type: u16}\n", "exactly one"},
		{"bad function", "x.yaml", "name: x\nvendor: T\nkind: meter\nsource: {document: d}\nblocks:\n  - {function: 2, address: 0, count: 10}\npoints:\n  - {name: a, address: 0, type: u16}\n", "x.yaml:6: blocks[0].function 2"},
		{"block too long", "x.yaml", "name: x\nvendor: T\nkind: meter\nsource: {document: d}\nblocks:\n  - {function: 3, address: 0, count: 126}\npoints:\n  - {name: a, address: 0, type: u16}\n", "count 126"},
		{"bad kind", "x.yaml", "name: x\nvendor: T\nkind: sensor\nsource: {document: d}\nblocks:\n  - {function: 3, address: 0, count: 1}\npoints:\n  - {name: a, address: 0, type: u16}\n", `kind "sensor"`},
		{"no source", "x.yaml", "name: x\nvendor: T\nkind: meter\nblocks:\n  - {function: 3, address: 0, count: 1}\npoints:\n  - {name: a, address: 0, type: u16}\n", "source.document: required"},
		{"nameplate with a channel", "x.yaml", head + "points:\n  - {name: a, address: 0, type: u16, unit: W, nameplate: ratedPowerW, channel: activePower}\n", "feeds no channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.yaml)
			if tt.yaml == "" {
				var err error
				if data, err = testdata.ReadFile(tt.file); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Parse(tt.file, data)
			if err == nil || !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an ErrTemplate containing %q", err, tt.want)
			}
		})
	}
}
