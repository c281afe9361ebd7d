package metrics

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Collector writes its metrics at scrape time.
type Collector interface {
	Collect(w *Writer)
}

// Registry is the set of collectors served at /metrics. It is safe for
// concurrent use.
type Registry struct {
	mu         sync.Mutex
	collectors []Collector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// MustRegister adds collectors; they are asked in the order registered.
func (r *Registry) MustRegister(cs ...Collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, cs...)
}

// Gather returns the exposition of every collector's metrics: the samples
// of one metric together, under one HELP and TYPE line, in the order the
// metrics first appeared.
func (r *Registry) Gather() []byte {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	w := &Writer{families: map[string]*family{}}
	for _, c := range cs {
		c.Collect(w)
	}
	var b bytes.Buffer
	for _, f := range w.order {
		b.WriteString("# HELP ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(helpEscaper.Replace(f.help))
		b.WriteString("\n# TYPE ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(f.typ)
		b.WriteByte('\n')
		b.Write(f.samples)
	}
	return b.Bytes()
}

// ServeHTTP answers a scrape.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	body := r.Gather()
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// Writer collects the samples of one scrape.
type Writer struct {
	families map[string]*family
	order    []*family
}

type family struct {
	name, help, typ string
	samples         []byte
}

// Metric types.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
)

// Counter writes one sample of a counter. labels are name, value pairs.
func (w *Writer) Counter(name, help string, v float64, labels ...string) {
	w.sample(w.family(name, help, typeCounter), name, v, labels, "", "")
}

// Gauge writes one sample of a gauge. labels are name, value pairs.
func (w *Writer) Gauge(name, help string, v float64, labels ...string) {
	w.sample(w.family(name, help, typeGauge), name, v, labels, "", "")
}

func (w *Writer) family(name, help, typ string) *family {
	f := w.families[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ}
		w.families[name] = f
		w.order = append(w.order, f)
	}
	return f
}

// sample appends "name{labels,extra} value" to f; extra is one more label
// (a histogram's le) when its name is set. Labels are written sorted by
// name, as Prometheus' own client does.
func (w *Writer) sample(f *family, name string, v float64, labels []string, extraName, extraValue string) {
	labels = sortedPairs(labels)
	b := append(f.samples, name...)
	if len(labels) > 1 || extraName != "" {
		b = append(b, '{')
		sep := false
		for i := 0; i+1 < len(labels); i += 2 {
			b = appendLabel(b, sep, labels[i], labels[i+1])
			sep = true
		}
		if extraName != "" {
			b = appendLabel(b, sep, extraName, extraValue)
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	f.samples = append(b, '\n')
}

func appendLabel(b []byte, sep bool, name, value string) []byte {
	if sep {
		b = append(b, ',')
	}
	b = append(b, name...)
	b = append(b, '=', '"')
	b = append(b, labelEscaper.Replace(value)...)
	return append(b, '"')
}

// appendFloat formats as Prometheus does: +Inf, -Inf, NaN, else the
// shortest representation.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// CounterVec is a counter per combination of label values, updated by the
// code it counts.
type CounterVec struct {
	name, help string
	mu         sync.Mutex
	entries    labelled[counterEntry] // under mu
}

// labelled holds a vector's entries by label values, in the order they
// first appeared (the order Collect writes them).
type labelled[E any] struct {
	labels []string
	values map[string]*E
	order  []*E
	key    []byte // scratch
}

// get returns the entry of the label values, made with newEntry (given the
// name, value pairs) the first time.
func (l *labelled[E]) get(values []string, newEntry func(pairs []string) *E) *E {
	l.key = appendKey(l.key[:0], values)
	e := l.values[string(l.key)]
	if e == nil {
		if l.values == nil {
			l.values = map[string]*E{}
		}
		e = newEntry(pairs(l.labels, values))
		l.values[string(l.key)] = e
		l.order = append(l.order, e)
	}
	return e
}

type counterEntry struct {
	labels []string // name, value pairs
	n      float64
}

// NewCounterVec returns a counter vector with the label names.
func NewCounterVec(name, help string, labelNames ...string) *CounterVec {
	return &CounterVec{name: name, help: help, entries: labelled[counterEntry]{labels: labelNames}}
}

// Inc adds 1 to the counter of the label values (one per label name).
func (c *CounterVec) Inc(values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.get(values, func(p []string) *counterEntry { return &counterEntry{labels: p} }).n++
}

// Collect writes every counter of the vector.
func (c *CounterVec) Collect(w *Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := w.family(c.name, c.help, typeCounter)
	for _, e := range c.entries.order {
		w.sample(f, c.name, e.n, e.labels, "", "")
	}
}

// HistogramVec is a histogram per combination of label values.
type HistogramVec struct {
	name, help string
	buckets    []float64 // upper bounds, ascending, without +Inf
	bucketText []string
	mu         sync.Mutex
	entries    labelled[histEntry] // under mu
}

type histEntry struct {
	labels []string
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// NewHistogramVec returns a histogram vector with the bucket upper bounds
// (ascending) and label names.
func NewHistogramVec(name, help string, buckets []float64, labelNames ...string) *HistogramVec {
	h := &HistogramVec{name: name, help: help, buckets: slices.Clone(buckets), entries: labelled[histEntry]{labels: labelNames}}
	slices.Sort(h.buckets)
	for _, b := range h.buckets {
		h.bucketText = append(h.bucketText, string(appendFloat(nil, b)))
	}
	return h
}

// Observe records v in the histogram of the label values.
func (h *HistogramVec) Observe(v float64, values ...string) {
	i, _ := slices.BinarySearch(h.buckets, v) // first bound >= v; len: +Inf
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries.get(values, func(p []string) *histEntry {
		return &histEntry{labels: p, counts: make([]uint64, len(h.buckets)+1)}
	})
	e.counts[i]++
	e.sum += v
	e.n++
}

// Collect writes every histogram of the vector: cumulative buckets, sum
// and count.
func (h *HistogramVec) Collect(w *Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := w.family(h.name, h.help, typeHistogram)
	for _, e := range h.entries.order {
		var cum uint64
		for i, c := range e.counts {
			cum += c
			le := "+Inf"
			if i < len(h.buckets) {
				le = h.bucketText[i]
			}
			w.sample(f, h.name+"_bucket", float64(cum), e.labels, "le", le)
		}
		w.sample(f, h.name+"_sum", e.sum, e.labels, "", "")
		w.sample(f, h.name+"_count", float64(e.n), e.labels, "", "")
	}
}

// appendKey joins label values with a byte no label value of plantd's
// holds.
func appendKey(b []byte, values []string) []byte {
	for _, v := range values {
		b = append(b, v...)
		b = append(b, 0)
	}
	return b
}

// sortedPairs returns name, value pairs sorted by name: labels itself when
// it already is.
func sortedPairs(labels []string) []string {
	sorted := true
	for i := 2; i+1 < len(labels); i += 2 {
		if labels[i] < labels[i-2] {
			sorted = false
			break
		}
	}
	if sorted {
		return labels
	}
	type pair struct{ name, value string }
	ps := make([]pair, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		ps = append(ps, pair{labels[i], labels[i+1]})
	}
	// sort.SliceStable: no sort instantiated for pair (binary size).
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	out := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		out = append(out, p.name, p.value)
	}
	return out
}

func pairs(names, values []string) []string {
	out := make([]string, 0, 2*len(names))
	for i, n := range names {
		v := ""
		if i < len(values) {
			v = values[i]
		}
		out = append(out, n, v)
	}
	return out
}
