package config

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"plantd/plant/kind"
)

// examplePath is the documented example, kept in packaging/ (where the
// package build takes it from) and read from disk: tests run in the package
// directory, and go:embed cannot reach outside it.
const examplePath = "../packaging/plantd.yaml.example"

// commentedKey matches the example's optional keys, written "#key: value"
// with no space after the #, at the indentation of the key.
var commentedKey = regexp.MustCompile(`(?m)^(\s*)#([A-Za-z][A-Za-z0-9]*:.*)$`)

// liveBroker is the example's mqtt.broker, which mqtt.brokers replaces
// when the optional keys are uncommented (give one or the other).
var liveBroker = regexp.MustCompile(`(?m)^  broker: .*\n`)

// uncomment turns the example's optional keys into keys.
func uncomment(data []byte) []byte {
	return commentedKey.ReplaceAll(data, []byte("$1$2"))
}

func readExample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestExample: the example validates with no problem, as shipped and with
// every optional key uncommented, describes the plant the comments promise,
// and reads back as itself.
func TestExample(t *testing.T) {
	data := readExample(t)
	if len(commentedKey.FindAll(data, -1)) == 0 {
		t.Fatal("the example has no optional keys written #key: value")
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"as shipped", data},
		{"optional keys uncommented", liveBroker.ReplaceAll(uncomment(data), nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("plantd.yaml.example", tt.data)
			if err != nil {
				t.Fatalf("the example has problems:\n%v", err)
			}
			checkRealistic(t, c)
			got := marshal(t, c)
			again, err := Parse("again", got)
			if err != nil {
				t.Fatalf("effective config does not parse: %v", err)
			}
			if back := marshal(t, again); !bytes.Equal(back, got) {
				t.Errorf("effective config does not read back as itself:\n%s\n%s", got, back)
			}
		})
	}
}

// checkRealistic checks the plant the example promises: two inverters and a
// meter behind one gateway address, a battery and a sensor, MQTT on.
func checkRealistic(t *testing.T, c *Config) {
	t.Helper()
	if len(c.Plants) != 1 {
		t.Errorf("%d plants, want 1", len(c.Plants))
	}
	units := map[string][]int{} // address -> units
	kinds := map[kind.Kind]bool{}
	for _, d := range c.Devices {
		units[d.Address()] = append(units[d.Address()], d.Unit)
		kinds[d.Kind] = true
	}
	gateway := false
	for addr, u := range units {
		gateway = gateway || len(u) >= 3 && addr == c.Devices[0].Address()
	}
	if !gateway || !kinds[kind.Meter] || !kinds[kind.Battery] || !kinds[kind.Sensor] || !kinds[kind.Consumer] || len(c.Devices) != 11 {
		t.Errorf("devices by address %v, kinds %v: want 2 inverters and a meter behind one address, a battery, a sensor, three consumers and a charger, a consumer's meter and an RS485 meter", units, kinds)
	}
	if len(c.MQTT.BrokerURLs()) == 0 || len(c.Tokens) == 0 || len(c.OAuthClients) == 0 || len(c.Migrated.Plants) == 0 || len(c.Migrated.Devices) == 0 {
		t.Errorf("the example should show MQTT, tokens, OAuth clients and migrations")
	}
}

// TestExampleDocumentsEveryField walks the Config type tree by yaml tags
// and checks that every key appears in the example (live or as an optional
// "#key: value") with a comment, so the example cannot fall behind the
// schema. The reverse (no key in the example that the schema lacks) holds
// because the example parses strictly.
func TestExampleDocumentsEveryField(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal(uncomment(readExample(t)), &root); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{} // key path -> has a comment somewhere
	exampleKeys("", root.Content[0], reflect.TypeFor[Config](), documented)

	schema := map[string]bool{}
	schemaKeys("", reflect.TypeFor[Config](), schema)
	if len(schema) < 80 {
		t.Fatalf("only %d schema keys found; is schemaKeys broken?", len(schema))
	}
	var missing, bare []string
	for key := range schema {
		doc, ok := documented[key]
		switch {
		case !ok:
			missing = append(missing, key)
		case !doc:
			bare = append(bare, key)
		}
	}
	slices.Sort(missing)
	slices.Sort(bare)
	for _, k := range missing {
		t.Errorf("%s is not in %s", k, examplePath)
	}
	for _, k := range bare {
		t.Errorf("%s has no comment in %s", k, examplePath)
	}
}

// schemaKeys collects the key paths of t's yaml-tagged fields, with "[]" for
// list elements: "devices[].port". Maps hold data (ids), not keys.
func schemaKeys(prefix string, t reflect.Type, out map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer:
		schemaKeys(prefix, t.Elem(), out)
	case reflect.Slice:
		schemaKeys(prefix+"[]", t.Elem(), out)
	case reflect.Struct:
		if t == dateType {
			return
		}
		f := fieldsOf(t)
		for _, name := range f.names {
			key := join(prefix, name)
			out[key] = true
			schemaKeys(key, t.FieldByIndex(f.index[name]).Type, out)
		}
	}
}

// exampleKeys collects the key paths of node n, decoded as type t, and
// whether at least one occurrence of each has a comment on or above it. The
// comment above a list item's first key is the item's.
func exampleKeys(prefix string, n *yaml.Node, t reflect.Type, out map[string]bool) {
	n = resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, item := range n.Content {
			exampleKeys(prefix+"[]", item, t.Elem(), out)
		}
	case t.Kind() == reflect.Struct && t != dateType && n.Kind == yaml.MappingNode:
		f := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			path := join(prefix, key.Value)
			doc := key.HeadComment != "" || key.LineComment != "" || (i == 0 && n.HeadComment != "")
			out[path] = out[path] || doc
			if idx, ok := f.index[key.Value]; ok {
				exampleKeys(path, n.Content[i+1], t.FieldByIndex(idx).Type, out)
			}
		}
	}
}
