package sim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant/kind"
)

// ptyPair starts socat with a pair of linked ptys and returns their
// paths, a for the test's master and b for the simulator; socat is
// stopped when the test ends. Without socat the test is skipped, or fails
// under CI=true.
func ptyPair(t testing.TB, dir string) (a, b string) {
	a, b, _ = ptyPairStop(t, dir)
	return a, b
}

// ptyPairStop is ptyPair that also returns a function stopping socat.
func ptyPairStop(t testing.TB, dir string) (a, b string, stop func()) {
	t.Helper()
	p := proctest.StartPTYPair(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	return p.A, p.B, p.Stop
}

// openMaster opens the master's end of a pty pair.
func openMaster(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// serialConfig is rtuConfig's plant with the meter, inverter and relay
// board on a serial line at path instead of a converter.
func serialConfig(clk *manualClock, path string, baud int) Config {
	cfg := rtuConfig(clk, 0)
	for i := range cfg.Devices[:3] {
		cfg.Devices[i].Endpoint, cfg.Devices[i].RTUOverTCP = "", false
	}
	cfg.Serial = []SerialConfig{{Path: path, Baud: baud, Devices: []string{"meter", "inv1", "io"}}}
	return cfg
}

// serialMaster starts a plant serving its line on a pty and returns it
// with the test's master on the pty's other end.
func serialMaster(t testing.TB, baud int) (*Plant, *master) {
	t.Helper()
	a, b := ptyPair(t, t.TempDir())
	p, err := New(serialConfig(newClock(summerNoon), b, baud), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, &master{t: t, c: openMaster(t, a), timing: timingFor(baud), stats: func() BusStats {
		s, _ := p.SerialStats(b)
		return s
	}}
}

func TestSerial(t *testing.T) {
	p, m := serialMaster(t, 19200)
	d := p.Device("meter")
	if d.Transport() != "rtu" || d.Addr() != "" || d.Bus() == "" {
		t.Errorf("meter: transport %q addr %q bus %q", d.Transport(), d.Addr(), d.Bus())
	}
	if bat := p.Device("bat"); bat.Transport() != "tcp" || bat.Addr() == "" || bat.Bus() != "" {
		t.Errorf("battery: transport %q addr %q bus %q", bat.Transport(), bat.Addr(), bat.Bus())
	}
	t.Run("exchanges", func(t *testing.T) {
		m.t = t
		exchanges(t, p, m)
	})
	t.Run("faults", func(t *testing.T) {
		m.t = t
		faultCases(t, p, m, false)
	})
}

// TestSerialPacing checks that an answer arrives when it would on the
// line: after the request's and the answer's bytes at 11 bits each and
// the 3.5-character gap, not before.
func TestSerialPacing(t *testing.T) {
	const baud = 9600
	p, m := serialMaster(t, baud)
	want := regsAnswer(t, p.Device("meter"), 3, 40000, 125)
	for range 3 {
		start := time.Now()
		m.send(1, 3, 0x9C, 0x40, 0, 125)
		got := m.read(len(want))
		el := time.Since(start)
		if string(got) != string(want) {
			t.Fatalf("answer % x", got)
		}
		line := m.timing.wire(8+len(want)) + m.timing.gap
		if el < line {
			t.Errorf("answer after %v, before the line could carry it (%v)", el, line)
		}
		t.Logf("answer after %v; the line takes %v", el, line)
		m.gap()
	}
}

// readBack reads the meter's first 125 registers as a master does: the
// request, the answer, the gap. It returns the bytes on the wire.
func readBack(m *master) int {
	m.t.Helper()
	req := withCRC(1, 3, 0x9C, 0x40, 0, 125)
	const answer = 3 + 250 + 2
	m.write(req)
	if b, err := m.readN(answer, 10*time.Second); err != nil {
		m.t.Fatalf("read: %v (% x)", err, b)
	}
	m.gap()
	return len(req) + answer
}

// lineUse is bytes on the wire over the line's capacity, baud/11 bytes
// a second, in the time el.
func lineUse(bytes int, el time.Duration, baud int) float64 {
	return float64(bytes) / (el.Seconds() * float64(baud) / BitsPerChar)
}

// TestSerialThroughput checks that back-to-back reads use at least 90 %
// of the line (the protocol's two gaps leave 97.4 % for 125-register
// reads), and never more than the line can carry: the simulator adds
// nothing to the line's own time but its scheduling latency. The fastest
// of ten reads decides, so that a busy machine (CI runs every package's
// tests at once on two cores) does not; the median and the whole run are
// logged, and BenchmarkSerialThroughput measures the sustained figure.
func TestSerialThroughput(t *testing.T) {
	const baud = 19200
	_, m := serialMaster(t, baud)
	var cycles []time.Duration
	bytes := 0
	start := time.Now()
	for range 10 {
		t0 := time.Now()
		bytes = readBack(m)
		cycles = append(cycles, time.Since(t0))
	}
	total := time.Since(start)
	slices.Sort(cycles)
	use := lineUse(bytes, cycles[0], baud)
	t.Logf("%d baud: %.1f %% of the line for the fastest read, %.1f %% the median, %.1f %% over all", baud,
		100*use, 100*lineUse(bytes, cycles[len(cycles)/2], baud), 100*lineUse(10*bytes, total, baud))
	if use < 0.90 || use > 0.975 {
		t.Errorf("line use %.1f %%, want 90..97.5 %%", 100*use)
	}
}

// BenchmarkSerialThroughput reads 125 registers back to back on a pty
// pair and reports the share of the line's capacity used (line-%).
func BenchmarkSerialThroughput(b *testing.B) {
	for _, baud := range []int{9600, 19200} {
		b.Run(timingName(baud), func(b *testing.B) {
			_, m := serialMaster(b, baud)
			before := m.stats()
			bytes := 0
			start := time.Now()
			for b.Loop() {
				bytes += readBack(m)
			}
			b.ReportMetric(100*lineUse(bytes, time.Since(start), baud), "line-%")
			s := m.stats()
			if n := s.Answered - before.Answered; n > 0 {
				b.ReportMetric(float64((s.Late-before.Late).Microseconds())/float64(n), "late-µs/answer")
			}
		})
	}
}

// TestSerialReopen: the line's pty pair goes away and comes back (an
// adapter unplugged and plugged in again); the simulator serves it again.
func TestSerialReopen(t *testing.T) {
	dir := t.TempDir()
	_, b, stop := ptyPairStop(t, dir)
	startPlant(t, serialConfig(newClock(summerNoon), b, 19200))
	stop()
	a, _ := ptyPair(t, dir)
	m := &master{t: t, c: openMaster(t, a), timing: timingFor(19200)}
	want := withCRC(1, 3, 4, 0x53, 0x75, 0x6E, 0x53)
	deadline := time.Now().Add(15 * time.Second)
	for {
		m.send(1, 3, 0x9C, 0x40, 0, 2)
		got, err := m.readN(len(want), 500*time.Millisecond)
		if err == nil && string(got) == string(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer after the line came back: % x, %v", got, err)
		}
	}
}

func TestSerialConfigErrors(t *testing.T) {
	meter := DeviceConfig{ID: "meter", Kind: kind.Meter, Unit: 1}
	inv := DeviceConfig{ID: "inv", Kind: kind.Inverter, Unit: 1}
	for _, tc := range []struct {
		name    string
		devices []DeviceConfig
		serial  []SerialConfig
		want    string
	}{
		{"baud", []DeviceConfig{meter}, []SerialConfig{{Path: "/x", Baud: 9601, Devices: []string{"meter"}}}, "serial[0].baud: 9601 is not a standard rate"},
		{"parity", []DeviceConfig{meter}, []SerialConfig{{Path: "/x", Parity: "M", Devices: []string{"meter"}}}, `serial[0].parity "M"`},
		{"stop bits", []DeviceConfig{meter}, []SerialConfig{{Path: "/x", StopBits: 3, Devices: []string{"meter"}}}, "serial[0].stopBits 3"},
		{"no path", []DeviceConfig{meter}, []SerialConfig{{Devices: []string{"meter"}}}, "serial[0].path: missing"},
		{"path twice", []DeviceConfig{meter, inv}, []SerialConfig{{Path: "/x", Devices: []string{"meter"}}, {Path: "/x", Devices: []string{"inv"}}}, `serial[1].path "/x": used twice`},
		{"no devices", []DeviceConfig{meter}, []SerialConfig{{Path: "/x"}}, "serial[0].devices: none"},
		{"unknown device", []DeviceConfig{meter}, []SerialConfig{{Path: "/x", Devices: []string{"inv9"}}}, `serial[0].devices[0] "inv9": no such device`},
		{"unit twice", []DeviceConfig{meter, inv}, []SerialConfig{{Path: "/x", Devices: []string{"meter", "inv"}}}, "unit 1 already answers on the line (meter)"},
		{"two lines", []DeviceConfig{meter}, []SerialConfig{{Path: "/x", Devices: []string{"meter"}}, {Path: "/y", Devices: []string{"meter"}}}, `already on serial line "/x"`},
		{"port", []DeviceConfig{{ID: "meter", Kind: kind.Meter, Port: 1502}}, []SerialConfig{{Path: "/x", Devices: []string{"meter"}}}, "has no endpoint, port or rtuOverTCP"},
		{"device baud", []DeviceConfig{{ID: "meter", Kind: kind.Meter, Baud: 9600}}, nil, "devices[0].baud: only an RTU over TCP endpoint"},
		{"device baud rate", []DeviceConfig{{ID: "meter", Kind: kind.Meter, RTUOverTCP: true, Baud: 1000}}, nil, "devices[0].baud: 1000 is not a standard rate"},
		{"endpoint disagrees", []DeviceConfig{
			{ID: "meter", Kind: kind.Meter, Endpoint: "gw", RTUOverTCP: true},
			{ID: "inv", Kind: kind.Inverter, Endpoint: "gw", Unit: 2},
		}, nil, `devices[1]: endpoint "gw": rtuOverTCP and baud differ from devices[0] (meter)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Devices, cfg.Serial = tc.devices, tc.serial
			_, err := New(cfg, nil)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an ErrConfig with %q", err, tc.want)
			}
		})
	}
}

// TestSerialMissing: a line whose device does not exist fails Start with
// an error naming it, and leaves nothing running.
func TestSerialMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ttyUSB9")
	cfg := DefaultConfig()
	cfg.Serial = []SerialConfig{{Path: path, Devices: []string{"meter"}}}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Start()
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start: %v, want an error naming %s", err, path)
	}
	_ = p.Close()
}
