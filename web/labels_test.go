package web

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"plantd/gridcontrol"
	"plantd/plan"
	"plantd/plant"
)

// pageLabels runs labels.js in node and returns its FIELDS (name → label
// and unit), SETS, COMMANDS and BATTERY_ACTIONS.
func pageLabels(t *testing.T) (fields map[string][2]string, sets, commands, batteryActions map[string]string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node not installed; CI=true needs the labels test")
		}
		t.Skip("node not installed")
	}
	src, err := os.ReadFile("static/js/labels.js")
	if err != nil {
		t.Fatal(err)
	}
	// As .mjs: node runs it as the module it is, whatever its version.
	mod := filepath.Join(t.TempDir(), "labels.mjs")
	if err := os.WriteFile(mod, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, "--input-type=module", "-e",
		`const m = await import(process.argv[1]); console.log(JSON.stringify({ fields: m.FIELDS, sets: m.SETS, commands: m.COMMANDS, batteryActions: m.BATTERY_ACTIONS }))`, mod).Output()
	if err != nil {
		t.Fatalf("node labels.js: %v", err)
	}
	var l struct {
		Fields                         map[string][2]string
		Sets, Commands, BatteryActions map[string]string
	}
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return l.Fields, l.Sets, l.Commands, l.BatteryActions
}

// setTypes are the SetType constants package plant declares (read from
// its source, so a new one is found without a list to keep).
func setTypes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../plant", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "SetType" {
						continue
					}
					for _, v := range vs.Values {
						if lit, ok := v.(*ast.BasicLit); ok {
							out = append(out, strings.Trim(lit.Value, `"`))
						}
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d SetType constants in package plant (%q), want 10 or more", len(out), out)
	}
	return out
}

// TestLabelsCoverPlant checks the page's one table of words (labels.js)
// against package plant: every channel name the live API gives and every
// field a set carries (channels, the energy balance and mix) has a label
// in words with the channel's unit (an energy field: "energy", W or Wh by
// period), and every measurement set type and grid-control command has
// words, and so has every battery action of the day-ahead plan. A new
// channel, set, command or action without its words fails here.
func TestLabelsCoverPlant(t *testing.T) {
	fields, sets, commands, actions := pageLabels(t)
	camel := regexp.MustCompile(`[a-z][A-Z]`)
	check := func(name, unit, what string) {
		t.Helper()
		l, ok := fields[name]
		switch {
		case !ok:
			t.Errorf("labels.js FIELDS has no %s %q", what, name)
		case l[0] == "" || camel.MatchString(l[0]):
			t.Errorf("labels.js FIELDS %q: label %q, want words", name, l[0])
		case unit != "*" && l[1] != unit:
			t.Errorf("labels.js FIELDS %q: unit %q, want %q", name, l[1], unit)
		}
	}
	for _, c := range plant.Channels() {
		unit := string(c.Unit())
		if c.EnergyField() {
			unit = "energy"
		}
		check(c.Name(), unit, "channel")
		if c.Field() != c.Name() {
			check(c.Field(), "energy", "set field")
		}
	}
	for _, v := range []any{plant.Balance{}, plant.EnergyMix{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			unit := "energy"
			switch {
			case strings.HasSuffix(name, "Rate"):
				unit = "rate"
			case name == "batteryStateOfCharge":
				unit = "%"
			}
			check(name, unit, rt.Name()+" field")
		}
	}
	for _, st := range setTypes(t) {
		if w := sets[st]; w == "" || camel.MatchString(w) {
			t.Errorf("labels.js SETS %q: %q, want words", st, w)
		}
	}
	for _, c := range gridcontrol.Commands {
		if w := commands[c.Name]; w == "" || camel.MatchString(w) {
			t.Errorf("labels.js COMMANDS %q: %q, want words", c.Name, w)
		}
	}
	for _, a := range plan.BatteryActions() {
		if w := actions[string(a)]; w == "" || camel.MatchString(w) {
			t.Errorf("labels.js BATTERY_ACTIONS %q: %q, want words", a, w)
		}
	}
}
