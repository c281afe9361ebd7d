package modbusproxy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/devices"

	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// rig is a simulated inverter, plantd's client of it, and a proxy in
// front of that client.
type rig struct {
	dev    *sim.Device
	direct *modbus.Client // plantd's client of the device
	proxy  *modbus.Client // a third party's client of the proxy
	px     *Proxy
	models *sunspec.Device // the device's models, as discovery found them
	held   []modbus.Range
	// unknown makes the device's models unknown to the proxy.
	unknown bool
	// log is the proxy's log; stop ends its Serve (and flushes the
	// refusals' counts).
	log  *logBuffer
	stop func()
}

// newRig starts the simulated plant and a proxy for device id (inv1: the
// classic models 1 103 120 121 122 123 ...; inv2: the DER models 1 701
// 702 704 ...).
func newRig(t testing.TB, cfg Config, id string) *rig {
	t.Helper()
	p := simtest.Start(t, sim.DefaultConfig())
	r := &rig{dev: simtest.Device(t, p, id), log: &logBuffer{}}
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	r.direct = pool.Endpoint(modbus.EndpointConfig{Address: r.dev.Addr()}).Unit(r.dev.Unit(), 2*time.Second)
	var err error
	if r.models, err = devices.Discover(t.Context(), r.direct); err != nil {
		t.Fatalf("discover %s: %v", id, err)
	}
	cfg.Device, cfg.Client = id, r.direct
	cfg.Held = func() []modbus.Range { return r.held }
	cfg.Models = func() ([]Model, bool) {
		var out []Model
		for _, m := range r.models.Models {
			out = append(out, Model{ID: m.ID, Range: devices.Range(m)})
		}
		return out, !r.unknown
	}
	r.px = New(cfg, slog.New(slog.NewTextHandler(r.log, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.px.Serve(ctx, ln) }()
	r.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(r.stop)
	// Another unit id than the device's: the proxy stands for one device.
	r.proxy = pool.Endpoint(modbus.EndpointConfig{Address: ln.Addr().String()}).Unit(7, 2*time.Second)
	return r
}

// point returns the address of a point of model id on the rig's device.
func (r *rig) point(t testing.TB, id uint16, name string) uint16 {
	t.Helper()
	ref, ok := r.models.Ref(id)
	m := sunspec.ModelByID(id)
	if !ok || m == nil || m.Group.PointIndex(name) < 0 {
		t.Fatalf("%s has no %d.%s", r.dev.ID(), id, name)
	}
	return ref.Addr + m.Group.Points[m.Group.PointIndex(name)].Offset
}

// logBuffer is a log's text, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines holding msg.
func (b *logBuffer) lines(msg string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for l := range strings.Lines(b.buf.String()) {
		if strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

// loopback is the proxy's clients' address in the tests.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

func exceptionCode(err error) byte {
	var ex *modbus.ExceptionError
	if errors.As(err, &ex) {
		return ex.Code
	}
	return 0
}

func TestForward(t *testing.T) {
	r := newRig(t, Config{RequestsPerSecond: 1000, Burst: 1000, Allow: loopback, Writes: true, WriteSettings: true}, "inv1")
	ctx := t.Context()
	got, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 4, nil)
	want, err2 := r.direct.ReadHoldingRegisters(ctx, 40000, 4, nil)
	if err != nil || err2 != nil || !slices.Equal(got, want) {
		t.Fatalf("through the proxy %v %v, directly %v %v", got, err, want, err2)
	}
	// The device's own exception goes back as it was.
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 100, 2, nil); exceptionCode(err) != modbus.ExceptionIllegalDataAddress {
		t.Errorf("a read outside the map: %v, want the device's exception 2", err)
	}
	// A write the device takes (model 1 DA, its value) passes with
	// writeSettings; a held range refuses writes and nothing reaches the
	// device, reads pass.
	if err := r.proxy.WriteRegisters(ctx, 40068, []uint16{1}); err != nil {
		t.Fatalf("a write through the proxy: %v", err)
	}
	n := len(r.dev.Writes())
	r.held = []modbus.Range{{Addr: 40060, Count: 10}}
	if err := r.proxy.WriteRegisters(ctx, 40068, []uint16{1}); exceptionCode(err) != modbus.ExceptionServerDeviceBusy {
		t.Errorf("a write to a held range: %v, want exception 6", err)
	}
	if len(r.dev.Writes()) != n {
		t.Error("a refused write reached the device")
	}
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 40060, 10, nil); err != nil {
		t.Errorf("a read of a held range: %v", err)
	}
	// A device that stops answering: exception 0x0B.
	r.dev.SetFault(sim.Fault{Kind: sim.FaultDrop})
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 2, nil); exceptionCode(err) != modbus.ExceptionGatewayTargetDeviceFailedToRespond {
		t.Errorf("a dropped request: %v, want exception 11", err)
	}
}

func TestRateLimit(t *testing.T) {
	r := newRig(t, Config{RequestsPerSecond: 0.001, Burst: 3}, "inv1")
	ctx := t.Context()
	for i := range 5 {
		_, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 2, nil)
		if i < 3 && err != nil {
			t.Errorf("request %d within the burst: %v", i, err)
		}
		if i >= 3 && exceptionCode(err) != modbus.ExceptionServerDeviceBusy {
			t.Errorf("request %d beyond the burst: %v, want exception 6", i, err)
		}
	}
}

// BenchmarkRead reads model 103 (52 registers) of a simulated inverter
// directly and through the proxy, one request at a time; p99 is the 99th
// percentile of a read's latency.
func BenchmarkRead(b *testing.B) {
	r := newRig(b, Config{RequestsPerSecond: 1e9, Burst: 1000}, "inv1")
	for _, bc := range []struct {
		name string
		c    *modbus.Client
	}{{"direct", r.direct}, {"proxy", r.proxy}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := bc.c.ReadHoldingRegisters(ctx, 40070, 52, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}

// TestWrites: the proxy is read-only unless writes are on, never writes
// a held point, and writes the nameplate and settings models only with
// writeSettings; a refused write never reaches the device and leaves its
// register as it was.
func TestWrites(t *testing.T) {
	off := Config{RequestsPerSecond: 1000, Burst: 1000}
	on := Config{RequestsPerSecond: 1000, Burst: 1000, Allow: loopback, Writes: true}
	settings := on
	settings.WriteSettings = true
	for _, tc := range []struct {
		name    string
		cfg     Config
		dev     string
		model   uint16
		point   string
		held    bool // the point's model held
		unknown bool // the device's models unknown
		ex      byte // the exception, 0: written
	}{
		{"writes off: 702 VNom", off, "inv2", 702, "VNom", false, false, modbus.ExceptionIllegalFunction},
		{"writes off: 704 WMaxLimPct", off, "inv2", 704, "WMaxLimPct", false, false, modbus.ExceptionIllegalFunction},
		{"writes on: 702 VNom, a settings model", on, "inv2", 702, "VNom", false, false, modbus.ExceptionIllegalDataAddress},
		{"writes on: 1 DA, the common model", on, "inv1", 1, "DA", false, false, modbus.ExceptionIllegalDataAddress},
		{"writes on: 121 WMax, a settings model", on, "inv1", 121, "WMax", false, false, modbus.ExceptionIllegalDataAddress},
		{"writes on: 704 WMaxLimPct", on, "inv2", 704, "WMaxLimPct", false, false, 0},
		{"writes on: 123 WMaxLimPct", on, "inv1", 123, "WMaxLimPct", false, false, 0},
		{"writes on: 704 WMaxLimPct held", on, "inv2", 704, "WMaxLimPct", true, false, modbus.ExceptionServerDeviceBusy},
		{"writes on: models unknown", on, "inv2", 704, "WMaxLimPct", false, true, modbus.ExceptionServerDeviceBusy},
		{"writeSettings: 702 VNom", settings, "inv2", 702, "VNom", false, false, 0},
		{"writeSettings: 702 VNom held", settings, "inv2", 702, "VNom", true, false, modbus.ExceptionServerDeviceBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg, tc.dev)
			ctx := t.Context()
			addr := r.point(t, tc.model, tc.point)
			if tc.held {
				ref, _ := r.models.Ref(tc.model)
				r.held = []modbus.Range{devices.Range(ref)}
			}
			r.unknown = tc.unknown
			before, err := r.direct.ReadHoldingRegisters(ctx, addr, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			value := before[0] + 1
			if tc.point == "WMaxLimPct" {
				value = before[0] - 1 // within 0..100 %
			}
			writes := len(r.dev.Writes())
			err = r.proxy.WriteRegisters(ctx, addr, []uint16{value})
			if code := exceptionCode(err); code != tc.ex || (tc.ex == 0 && err != nil) {
				t.Fatalf("a write of %d.%s through the proxy: %v, want exception %d", tc.model, tc.point, err, tc.ex)
			}
			after, err := r.direct.ReadHoldingRegisters(ctx, addr, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ex != 0 {
				if after[0] != before[0] || len(r.dev.Writes()) != writes {
					t.Errorf("a refused write reached the device: %d -> %d, %d writes", before[0], after[0], len(r.dev.Writes())-writes)
				}
				return
			}
			if after[0] != value {
				t.Errorf("%d.%s reads %d after the write of %d", tc.model, tc.point, after[0], value)
			}
		})
	}
	// A coil write is a write too.
	r := newRig(t, off, "inv1")
	if err := r.proxy.WriteCoil(t.Context(), 0, true); exceptionCode(err) != modbus.ExceptionIllegalFunction {
		t.Errorf("a coil write with writes off: %v, want exception 1", err)
	}
}

// TestAllow: a client outside allow is closed at connect (no exception:
// no answer at all), one inside reads.
func TestAllow(t *testing.T) {
	for _, tc := range []struct {
		allow string
		in    bool
	}{{"127.0.0.2/32", false}, {"127.0.0.0/8", true}, {"::1/128", false}} {
		t.Run(tc.allow, func(t *testing.T) {
			r := newRig(t, Config{Allow: []netip.Prefix{netip.MustParsePrefix(tc.allow)}}, "inv1")
			_, err := r.proxy.ReadHoldingRegisters(t.Context(), 40000, 2, nil)
			st := r.px.Stats()
			if tc.in && (err != nil || st.Refused != 0) {
				t.Errorf("an allowed client's read: %v, stats %+v", err, st)
			}
			if !tc.in && (err == nil || exceptionCode(err) != 0 || st.Refused == 0 || st.Requests != 0) {
				t.Errorf("a client outside allow: %v, stats %+v; want the connection closed", err, st)
			}
		})
	}
}

var suppressedRE = regexp.MustCompile(`suppressed=(\d+)`)

// TestRefusalLog: 2,000 writes refused (writes off) write one line at
// once and, when the proxy stops, one with the count of the rest.
func TestRefusalLog(t *testing.T) {
	const n = 2000
	r := newRig(t, Config{RequestsPerSecond: 1e6, Burst: n}, "inv2")
	addr := r.point(t, 702, "VNom")
	for i := range n {
		if err := r.proxy.WriteRegisters(t.Context(), addr, []uint16{1}); exceptionCode(err) != modbus.ExceptionIllegalFunction {
			t.Fatalf("write %d: %v, want exception 1", i, err)
		}
	}
	r.stop()
	lines := r.log.lines("proxied write refused")
	t.Logf("%d refused writes, %d lines:\n%s", n, len(lines), strings.Join(lines, ""))
	if len(lines) == 0 || len(lines) > 3 {
		t.Fatalf("%d lines for %d refused writes, want 1 to 3", len(lines), n)
	}
	events := 0
	for _, l := range lines {
		m := suppressedRE.FindStringSubmatch(l)
		if m == nil {
			events++
			continue
		}
		k, _ := strconv.Atoi(m[1])
		events += k
	}
	if strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[0], "client=127.0.0.1") {
		t.Errorf("the first line is not the first refusal itself: %s", lines[0])
	}
	if events != n {
		t.Errorf("the lines account for %d refused writes, want %d", events, n)
	}
}
