package layout

import (
	"slices"
	"strings"
	"testing"
)

// The acceptance arrows of issue 42: the domain and the packages above it
// depend on neither the Modbus transport nor goburrow, directly or not.
var (
	aboveTransport = []string{"plantd/plant", "plantd/store", "plantd/mqtt", "plantd/httpapi", "plantd/gridcontrol", "plantd/consumer"}
	transport      = []string{"plantd/modbus", "github.com/goburrow/"}
)

// TestRepoBoundaries checks the real module: every package has an allow
// list, imports only what it allows, and the acceptance arrows hold.
func TestRepoBoundaries(t *testing.T) {
	pkgs, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 || !slices.ContainsFunc(pkgs, func(p Package) bool { return p.Path == "plantd/plant" }) {
		t.Fatalf("go list found %d packages, plantd/plant not among them", len(pkgs))
	}
	for _, v := range Check(pkgs) {
		t.Error(v)
	}
	for _, v := range CheckDeps(pkgs, aboveTransport, transport) {
		t.Error(v)
	}
}

// TestCheck runs the checker on made-up packages: it must name the
// package and the import that breaks a boundary.
func TestCheck(t *testing.T) {
	base := func() []Package {
		return []Package{
			{Path: "plantd/plant/kind", HasAllow: true},
			{Path: "plantd/plant", Imports: []string{"fmt", "plantd/plant/kind"}, Allow: []string{"plantd/plant/kind"}, HasAllow: true},
			{Path: "plantd/internal/a", HasAllow: true},
			{Path: "plantd/internal/a/b", HasAllow: true},
			{Path: "plantd/store", Imports: []string{"plantd/plant", "plantd/internal/a/b"}, Allow: []string{"plantd/plant", "plantd/internal/..."}, HasAllow: true},
			{Path: "plantd/modbus", Imports: []string{"github.com/goburrow/modbus"}, HasAllow: true},
		}
	}
	tests := []struct {
		name   string
		change func([]Package) []Package
		want   []string // violations, as Violation.String begins
	}{
		{"clean", func(p []Package) []Package { return p }, nil},
		{"forbidden import", func(p []Package) []Package {
			p[1].Imports = append(p[1].Imports, "plantd/modbus")
			return p
		}, []string{"plantd/plant → plantd/modbus: not allowed"}},
		{"no allow list", func(p []Package) []Package {
			p[0].HasAllow = false
			return p
		}, []string{"plantd/plant/kind: no \"// Imports:\" line"}},
		{"stale entry", func(p []Package) []Package {
			p[1].Allow = append(p[1].Allow, "plantd/gone")
			return p
		}, []string{"plantd/plant → plantd/gone: allowed, but no such package"}},
		{"pattern allows below, not beside", func(p []Package) []Package {
			p[4].Imports = append(p[4].Imports, "plantd/internalx")
			return p
		}, []string{"plantd/store → plantd/internalx: not allowed"}},
		{"outside the module is not checked", func(p []Package) []Package {
			p[1].Imports = append(p[1].Imports, "github.com/goburrow/modbus")
			return p
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.change(base()))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d violations %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for i, v := range got {
				if !strings.HasPrefix(v.String(), tt.want[i]) {
					t.Errorf("violation %d = %q, want it to begin %q", i, v, tt.want[i])
				}
			}
		})
	}
}

// TestCheckDeps finds a forbidden dependency through another package and
// names a shortest chain; a dependency cut on every route is none.
func TestCheckDeps(t *testing.T) {
	pkgs := func() []Package {
		return []Package{
			{Path: "plantd/store", Imports: []string{"plantd/plant", "plantd/config"},
				Deps: []string{"plantd/plant", "plantd/config", "plantd/devices", "plantd/modbus", "github.com/goburrow/modbus"}},
			{Path: "plantd/plant", Imports: []string{"plantd/devices"}, Deps: []string{"plantd/devices", "plantd/modbus", "github.com/goburrow/modbus"}},
			{Path: "plantd/devices", Imports: []string{"plantd/modbus"}, Deps: []string{"plantd/modbus", "github.com/goburrow/modbus"}},
			{Path: "plantd/modbus", Imports: []string{"github.com/goburrow/modbus"}, Deps: []string{"github.com/goburrow/modbus"}},
			{Path: "plantd/config", Imports: []string{"plantd/modbus"}, Deps: []string{"plantd/modbus", "github.com/goburrow/modbus"}},
		}
	}
	tests := []struct {
		name string
		pkgs []Package
		want []string
	}{
		{"two routes: the shortest is named", pkgs(), []string{
			"plantd/store → plantd/modbus: forbidden dependency, through plantd/store → plantd/config → plantd/modbus",
			"plantd/store → github.com/goburrow/modbus: forbidden dependency, through plantd/store → plantd/config → plantd/modbus → github.com/goburrow/modbus",
		}},
		{"one route cut, the other not", func() []Package {
			p := pkgs()
			p[4].Imports, p[4].Deps = nil, nil // config imports nothing
			return p
		}(), []string{
			"plantd/store → plantd/modbus: forbidden dependency, through plantd/store → plantd/plant → plantd/devices → plantd/modbus",
			"plantd/store → github.com/goburrow/modbus: forbidden dependency, through plantd/store → plantd/plant → plantd/devices → plantd/modbus → github.com/goburrow/modbus",
		}},
		{"every route cut", func() []Package {
			p := pkgs()
			p[0].Deps = []string{"plantd/plant", "plantd/config"}
			p[1].Imports, p[1].Deps = nil, nil
			p[4].Imports, p[4].Deps = nil, nil
			return p
		}(), nil},
		{"through a package outside the module", func() []Package {
			p := pkgs()
			p[0].Imports = []string{"example.com/wrapper"}
			p[0].Deps = []string{"example.com/wrapper", "github.com/goburrow/modbus"}
			return p
		}(), []string{
			"plantd/store → github.com/goburrow/modbus: forbidden dependency, through a package outside the module",
		}},
	}
	str := func(vs []Violation) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckDeps(tt.pkgs, []string{"plantd/store"}, transport)
			if !slices.Equal(str(got), tt.want) {
				t.Errorf("violations\n%q\nwant\n%q", str(got), tt.want)
			}
		})
	}
}

// TestParseAllow reads the line's forms.
func TestParseAllow(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
		ok        bool
		err       bool
	}{
		{"list", "// Package x does.\n//\n// Imports: plantd/plant, plantd/internal/...\npackage x\n", []string{"plantd/plant", "plantd/internal/..."}, true, false},
		{"two lines add up", "// Imports: plantd/a,\n// Imports: plantd/b\npackage x\n", []string{"plantd/a", "plantd/b"}, true, false},
		{"none", "// Imports: none\npackage x\n", nil, true, false},
		{"missing", "// Package x.\npackage x\n", nil, false, false},
		{"after the clause does not count", "package x\n\n// Imports: plantd/a\n", nil, false, false},
		{"not a plantd path", "// Imports: fmt\npackage x\n", nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := ParseAllow(strings.NewReader(tt.src))
			if (err != nil) != tt.err || ok != tt.ok || !slices.Equal(got, tt.want) {
				t.Errorf("ParseAllow = %q, %v, %v; want %q, %v, error %v", got, ok, err, tt.want, tt.ok, tt.err)
			}
		})
	}
}
