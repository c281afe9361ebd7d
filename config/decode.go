package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxProblem turns a YAML syntax error into a Problem.
//
// yaml.v3 reports a parser error at the start of the enclosing block, often
// lines before the mistake, and some scanner errors without a line. The
// mistake is on the first line at which a prefix of the file fails with
// the same message, so that line is given when there is one.
func syntaxProblem(name string, data []byte, err error) *Problem {
	p := &Problem{File: name, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Message = m[2]
	}
	// yaml.v3's line is at or before the mistake (for parser errors it is
	// the 0-based line of the block's start), so the scan starts there;
	// except at the end of the file, when something (a quote, a bracket)
	// was left open anywhere before.
	lines := bytes.SplitAfter(data, []byte("\n"))
	from := max(p.Line-1, 1)
	if strings.Contains(p.Message, "end of stream") {
		from = 1
	}
	end := 0
	for _, l := range lines[:min(from-1, len(lines))] {
		end += len(l)
	}
	for i := from - 1; i < len(lines) && i < from-1+maxSyntaxScanLines; i++ {
		end += len(lines[i])
		perr := checkSyntax(data[:end])
		if perr == nil {
			continue
		}
		msg := strings.TrimPrefix(perr.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(perr.Error()); m != nil {
			msg = m[2]
		}
		if msg == p.Message {
			p.Line = i + 1
			break
		}
	}
	return p
}

// maxSyntaxScanLines bounds the prefix scan of syntaxProblem, which parses
// the file up to each line it scans.
const maxSyntaxScanLines = 400

// checkSyntax parses every YAML document in data and returns the first
// syntax error.
func checkSyntax(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readDocument parses data into its one YAML document's root node (nil for
// an empty file) or returns the syntax problem.
func readDocument(name string, data []byte) (*yaml.Node, *Problem) {
	syntax := func(err error) *Problem { return syntaxProblem(name, data, err) }
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntax(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Problem{File: name, Line: next.Line, Message: "a second YAML document begins here; the config is one document"}
	case !errors.Is(err, io.EOF):
		return nil, syntax(err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// decoder decodes yaml.Nodes into the Config's types by reflection over
// their yaml tags. It records the line of every field path it sets and
// collects problems instead of stopping at the first.
type decoder struct {
	file     string
	lines    map[string]int
	bad      map[string]bool
	problems []Problem
}

func (d *decoder) fail(path string, line int, format string, args ...any) {
	d.bad[path] = true
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Field: path, Message: fmt.Sprintf(format, args...)})
}

// root decodes the document's root node into the Config v; false if it is
// not a mapping.
func (d *decoder) root(n *yaml.Node, v reflect.Value) bool {
	n = resolve(n)
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		d.problems = append(d.problems, Problem{File: d.file, Line: n.Line, Message: "the config must be a mapping of keys such as plants: and devices:, got " + show(n)})
		return false
	}
	d.structure("", n, v)
	return true
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	dateType     = reflect.TypeFor[Date]()
)

// value decodes n into v. line is the line of n's key (or of the list item);
// null keeps v as it is, so a key without a value keeps its default.
func (d *decoder) value(path string, line int, n *yaml.Node, v reflect.Value) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	switch v.Type() {
	case durationType:
		d.duration(path, line, n, v)
		return
	case dateType:
		d.date(path, line, n, v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		setDefaultsOf(e.Interface())
		d.value(path, line, n, e.Elem())
		if !d.bad[path] {
			v.Set(e)
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.fail(path, line, "expected a mapping, got %s", show(n))
			return
		}
		d.structure(path, n, v)
	case reflect.Slice:
		d.list(path, line, n, v)
	case reflect.Map:
		d.stringMap(path, line, n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(path, line, "expected a string, got %s", show(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(path, line, "%s is not a boolean (true or false)", show(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := parseInt(n)
		if !ok {
			d.fail(path, line, "%s is not an integer", show(n))
			return
		}
		if v.OverflowInt(i) {
			d.fail(path, line, "%s is out of range", show(n))
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil {
			d.fail(path, line, "%s is not a number", show(n))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(path, line, "%s is not a finite number", show(n))
			return
		}
		v.SetFloat(f)
	default:
		panic("config: no decoder for " + v.Type().String()) // a new field of an unsupported type
	}
}

// structure decodes mapping n into struct v, field by field; keys that are
// not a field are problems.
func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) {
	fields := fieldsOf(v.Type())
	pairs := d.pairs(path, n)
	given := map[string]bool{}
	for _, p := range pairs {
		given[p.name] = true
	}
	for _, p := range pairs {
		fp := join(path, p.name)
		i, ok := fields.index[p.name]
		if !ok {
			msg := "unknown field"
			if s := suggest(p.name, fields.names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
				if !given[s] {
					// The value meant for s is this one: do not also
					// report s as missing.
					d.bad[join(path, s)] = true
				}
			}
			d.fail(fp, p.key.Line, "%s", msg)
			continue
		}
		d.lines[fp] = p.key.Line
		d.value(fp, p.key.Line, p.value, v.FieldByIndex(i))
	}
}

// list decodes sequence n into slice v. Each element starts from its type's
// defaults.
func (d *decoder) list(path string, line int, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.fail(path, line, "expected a list, got %s", show(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		d.lines[ip] = item.Line
		e := reflect.New(v.Type().Elem())
		setDefaultsOf(e.Interface())
		d.value(ip, item.Line, item, e.Elem())
		s = reflect.Append(s, e.Elem())
	}
	v.Set(s)
}

// stringMap decodes mapping n into v, a map from string to string.
func (d *decoder) stringMap(path string, line int, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, line, "expected a mapping, got %s", show(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	for _, p := range d.pairs(path, n) {
		fp := join(path, p.name)
		d.lines[fp] = p.key.Line
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(fp, p.key.Line, p.value, e)
		m.SetMapIndex(reflect.ValueOf(p.name), e)
	}
	v.Set(m)
}

func (d *decoder) duration(path string, line int, n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if dur, err := time.ParseDuration(n.Value); err == nil {
			v.SetInt(int64(dur))
			return
		}
	}
	if i, ok := parseInt(n); ok {
		if i == 0 {
			v.SetInt(0)
			return
		}
		d.fail(path, line, "%s is not a duration (give a unit, as in \"%ds\")", show(n), i)
		return
	}
	d.fail(path, line, "%s is not a duration", show(n))
}

func (d *decoder) date(path string, line int, n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || n.ShortTag() == "!!timestamp") {
		if t, err := time.Parse(time.DateOnly, n.Value); err == nil {
			v.Set(reflect.ValueOf(Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}))
			return
		}
	}
	d.fail(path, line, "%s is not a date (YYYY-MM-DD)", show(n))
}

// pair is one key and value of a mapping.
type pair struct {
	name       string
	key, value *yaml.Node
}

// pairs returns the keys and values of mapping n, in order, with merge keys
// ("<<: *anchor") expanded: a key given in n wins over a merged one, and of
// several merged mappings the first wins. A key given twice is a problem.
func (d *decoder) pairs(path string, n *yaml.Node) []pair {
	return d.expand(path, n, map[*yaml.Node]bool{n: true}, map[*yaml.Node]bool{})
}

// expand is pairs for a mapping n that may itself be merged. active holds
// the mappings being expanded (a mapping that merges one of them is a
// cycle) and merged those already expanded once (merging one again adds
// nothing), so expansion is linear in the size of the document.
func (d *decoder) expand(path string, n *yaml.Node, active, merged map[*yaml.Node]bool) []pair {
	var own, fromMerges []pair
	seen := map[string]int{} // key -> line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			for _, m := range d.mergeSources(path, k.Line, val) {
				switch {
				case active[m]:
					d.fail(path, k.Line, "<< merges a mapping that contains it")
				case !merged[m]:
					merged[m], active[m] = true, true
					fromMerges = append(fromMerges, d.expand(path, m, active, merged)...)
					delete(active, m)
				}
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k.Line, "a key must be a plain name, got %s", show(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(join(path, k.Value), k.Line, "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{name: k.Value, key: k, value: val})
	}
	for _, p := range fromMerges {
		if _, ok := seen[p.name]; !ok {
			seen[p.name] = p.key.Line
			own = append(own, p)
		}
	}
	return own
}

// mergeSources returns the mappings a merge key's value names: one mapping
// or a list of mappings.
func (d *decoder) mergeSources(path string, line int, n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	maps := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		maps = maps[:0]
		for _, m := range n.Content {
			maps = append(maps, resolve(m))
		}
	}
	for _, m := range maps {
		if m.Kind != yaml.MappingNode {
			d.fail(path, line, "<< merges mappings, got %s", show(m))
			return nil
		}
	}
	return maps
}

// fields describes the yaml-tagged fields of a struct type, those of an
// embedded struct tagged ",inline" among them (the consumer's driver
// settings).
type fields struct {
	index map[string][]int // yaml name -> field index path
	names []string         // yaml names in field order
}

func fieldsOf(t reflect.Type) fields {
	f := fields{index: map[string][]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if sf.Anonymous && opts == "inline" && sf.Type.Kind() == reflect.Struct {
			inner := fieldsOf(sf.Type)
			for _, n := range inner.names {
				f.index[n] = append([]int{i}, inner.index[n]...)
				f.names = append(f.names, n)
			}
			continue
		}
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		f.index[name] = []int{i}
		f.names = append(f.names, name)
	}
	return f
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

var decimal = regexp.MustCompile(`^[-+]?[0-9]+$`)

// parseInt reads an integer scalar. Digits with leading zeros are decimal
// (YAML 1.2: unit: 010 is 10); 0x, 0o and 0b prefixes and '_' separators
// work as in YAML.
func parseInt(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, false
	}
	s := strings.ReplaceAll(n.Value, "_", "")
	base := 0
	if decimal.MatchString(s) {
		base = 10
	}
	i, err := strconv.ParseInt(s, base, 64)
	return i, err == nil
}

// show renders a node for a message: strings quoted, other scalars as
// written, collections by their kind.
func show(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "an alias"
}

// join appends a key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest returns the candidate that name most likely misspells: one equal
// but for letter case, or one within a small edit distance (none for names
// shorter than 4, where one edit makes another word: ip is not id); "" if
// none.
func suggest(name string, candidates []string) string {
	limit := 0
	switch {
	case len(name) >= 12:
		limit = 3
	case len(name) >= 6:
		limit = 2
	case len(name) >= 4:
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		dist := editDistance(strings.ToLower(name), strings.ToLower(c))
		if dist < bestDist {
			best, bestDist = c, dist
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours each count 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
