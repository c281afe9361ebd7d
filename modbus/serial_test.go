//go:build unix

package modbus

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// ptyPair is a pair of connected ptys made by socat: the client opens
// A (the master), the bus serves B (the slave); names are links in a temp
// dir.
type ptyPair = proctest.PTYPair

// startPTYPair starts socat with a pty pair at the two paths.
func startPTYPair(t *testing.T, master, slave string) *ptyPair {
	t.Helper()
	return proctest.StartPTYPair(t, master, slave)
}

// serialBus starts a pty pair and an RTU bus with the live units on its
// slave end, and returns the bus, the pair and an RTU endpoint on the
// master end.
func serialBus(t *testing.T, cfg EndpointConfig, live ...byte) (*rtuBus, *ptyPair, *Endpoint) {
	t.Helper()
	dir := t.TempDir()
	p := startPTYPair(t, filepath.Join(dir, "master"), filepath.Join(dir, "slave"))
	bus := newRTUBus(t, live...)
	serveSlave(t, bus, p)
	cfg.Address, cfg.Transport = p.A, TransportRTU
	return bus, p, newTestPool(t).Endpoint(cfg)
}

// serialBusEndpoint is serialBus for the tests shared with RTU over TCP
// (19200 baud: a gap of 2 ms).
func serialBusEndpoint(t *testing.T, cfg EndpointConfig, live ...byte) (*rtuBus, *Endpoint) {
	cfg.Serial.Baud = 19200
	bus, _, ep := serialBus(t, cfg, live...)
	return bus, ep
}

// TestSerialBusDeadUnit is TestRTUBusDeadUnit on a serial line.
func TestSerialBusDeadUnit(t *testing.T) { testBusDeadUnit(t, serialBusEndpoint) }

// TestSerialBusOfEight is TestRTUBusOfEight on a serial line.
func TestSerialBusOfEight(t *testing.T) { testBusOfEight(t, serialBusEndpoint) }

// serveSlave serves bus on the pair's slave end.
func serveSlave(t *testing.T, bus *rtuBus, p *ptyPair) {
	t.Helper()
	f, err := os.OpenFile(p.B, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the slave pty: %v", err)
	}
	bus.serveLine(f)
}

// TestSerialRTU reads and writes over a serial line (a pty pair) and
// checks the bus's counters.
func TestSerialRTU(t *testing.T) {
	_, _, ep := serialBus(t, EndpointConfig{Serial: SerialConfig{Baud: 19200, Parity: "E"}}, 1, 2)
	ctx := t.Context()
	for _, u := range []byte{1, 2} {
		c := ep.Unit(u, 0)
		got, err := c.ReadHoldingRegisters(ctx, 40000, 125, nil)
		if err != nil || !slices.Equal(got, seqRegs(40000, 125, u)) {
			t.Fatalf("unit %d: read %v, %v", u, got, err)
		}
		if err := c.WriteRegisters(ctx, 5, []uint16{42}); err != nil {
			t.Fatalf("unit %d: write: %v", u, err)
		}
		if got, err := c.ReadInputRegisters(ctx, 5, 1, nil); err != nil || got[0] != 42 {
			t.Fatalf("unit %d: read after write %v, %v", u, got, err)
		}
		if err := c.WriteCoil(ctx, 4, true); err != nil {
			t.Fatalf("unit %d: write coil: %v", u, err)
		}
		if got, err := c.ReadCoils(ctx, 3, 3, nil); err != nil || !slices.Equal(got, []bool{true, true, false}) {
			t.Fatalf("unit %d: coils %v, %v", u, got, err)
		}
	}
	st := ep.Stats()
	if st.Transport != TransportRTU || st.Address != ep.Address() || !st.Connected || st.Connects != 1 || st.Requests != 10 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
	// Each request: 8 bytes, the write 13; answers 255, 8, 7, 8, 6.
	if want := uint64(2 * (8 + 11 + 8 + 8 + 8)); st.BytesWritten != want {
		t.Errorf("bytes written %d, want %d", st.BytesWritten, want)
	}
	if want := uint64(2 * (255 + 8 + 7 + 8 + 6)); st.BytesRead != want {
		t.Errorf("bytes read %d, want %d", st.BytesRead, want)
	}
	if u := st.Utilisation(); u <= 0 || u > 1 {
		t.Errorf("utilisation %v", u)
	}
}

// TestSerialRTUFaults checks a dead unit, a late answer, a bad CRC and an
// exception on a serial line: the port stays open, the late answer is
// dropped, and the next request gets its own answer.
func TestSerialRTUFaults(t *testing.T) {
	const timeout = 150 * time.Millisecond
	bus, _, ep := serialBus(t, EndpointConfig{Timeout: timeout}, 1, 3)
	ctx := t.Context()
	live := ep.Unit(1, 0)
	check := func(what string) {
		t.Helper()
		got, err := live.ReadHoldingRegisters(ctx, 7, 2, nil)
		if err != nil || !slices.Equal(got, seqRegs(7, 2, 1)) {
			t.Fatalf("live read after %s: %v, %v", what, got, err)
		}
	}
	check("nothing")

	if _, err := ep.Unit(2, 0).ReadHoldingRegisters(ctx, 0, 1, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("dead unit: err = %v, want ErrTimeout", err)
	}
	check("a dead unit")

	// Unit 3 answers late: its answer comes after the timeout, and must
	// not be read as the answer to the next request.
	bus.setDelay(3, timeout+timeout/2)
	if _, err := ep.Unit(3, 0).ReadHoldingRegisters(ctx, 0, 1, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("late unit: err = %v, want ErrTimeout", err)
	}
	proctest.WaitFor(t, "the late answer on the line", 5*time.Second, func() bool {
		log := bus.log()
		return !log[len(log)-1].answered.IsZero()
	})
	// The next request drops the late answer first. On a loaded machine
	// the pty may pass it on only after the drain's 20 ms of silence, as
	// a very late answer on a real line can come after the next request
	// went out: that request's answer is then malformed (the late frame
	// and its own in one read), never the late one taken for it, and the
	// request after it gets its own.
	lateAfterDrain := 0
	if got, err := live.ReadHoldingRegisters(ctx, 7, 2, nil); errors.Is(err, ErrMalformed) {
		lateAfterDrain = 1
		t.Logf("the late answer came after the drain: %v", err)
		check("a late answer that came after the drain")
	} else if err != nil || !slices.Equal(got, seqRegs(7, 2, 1)) {
		t.Fatalf("live read after a late answer: %v, %v", got, err)
	}

	bus.corrupt(1, 1)
	if _, err := live.ReadHoldingRegisters(ctx, 7, 2, nil); !errors.Is(err, ErrCRC) {
		t.Fatalf("bad crc: err = %v, want ErrCRC", err)
	}
	check("a bad crc")

	bus.setException(7, ExceptionServerDeviceBusy)
	var ex *ExceptionError
	if _, err := live.ReadHoldingRegisters(ctx, 7, 2, nil); !errors.As(err, &ex) || ex.Code != ExceptionServerDeviceBusy {
		t.Fatalf("exception: err = %v", err)
	}

	st := ep.Stats()
	if st.Connects != 1 || !st.Connected {
		t.Errorf("stats %+v: want the port kept open", st)
	}
	if st.Timeouts != 2 || st.CRCErrors != 1 || st.Malformed != uint64(1+lateAfterDrain) || st.Exceptions != 1 || st.Failures != uint64(3+lateAfterDrain) {
		t.Errorf("stats %+v: want 2 timeouts, 1 crc error (malformed), %d malformed besides, 1 exception", st, lateAfterDrain)
	}
	// The late answer (7 bytes) was read and dropped.
	if st.BytesRead < 7 {
		t.Errorf("stats %+v", st)
	}
}

// TestSerialRTUReopen unplugs the line (socat ends) and plugs it back in:
// the request in flight fails, a request while the port is missing names
// it, and the first request after it is back opens it again.
func TestSerialRTUReopen(t *testing.T) {
	bus, p, ep := serialBus(t, EndpointConfig{Timeout: 500 * time.Millisecond}, 1)
	c := ep.Unit(1, 0)
	ctx := t.Context()
	if _, err := c.ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	// The port hung up: the next request fails on it and closes it.
	if _, err := c.ReadHoldingRegisters(ctx, 0, 1, nil); err == nil {
		t.Fatal("request on a hung-up line succeeded")
	}
	proctest.WaitFor(t, "the port closed", 5*time.Second, func() bool { return !ep.Stats().Connected })

	_, err := c.ReadHoldingRegisters(ctx, 0, 1, nil)
	var mbErr *Error
	if !errors.As(err, &mbErr) || mbErr.Op != OpConnect || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p.A) {
		t.Fatalf("request while unplugged: err = %v, want a connect error naming %s", err, p.A)
	}

	p2 := startPTYPair(t, p.A, p.B)
	serveSlave(t, bus, p2)
	got, err := c.ReadHoldingRegisters(ctx, 3, 2, nil)
	if err != nil || !slices.Equal(got, seqRegs(3, 2, 1)) {
		t.Fatalf("request after replug: %v, %v", got, err)
	}
	if st := ep.Stats(); st.Connects != 2 || st.ConnectFailures != 1 {
		t.Errorf("stats %+v: want 2 opens and 1 failed open", st)
	}
}

// TestSerialRTUMissingPort checks the error for a port that does not exist.
func TestSerialRTUMissingPort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ttyUSB9")
	c := newTestPool(t).Endpoint(EndpointConfig{Address: path, Transport: TransportRTU}).Unit(1, 0)
	_, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil)
	want := "modbus connect to " + path + " unit 1: open serial port " + path + ": no such file or directory"
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != want || !IsRetryable(err) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestSerialRTUFrameGap checks that 3.5 character times at the baud pass
// between an answer and the next request (1200 baud: 32 ms).
func TestSerialRTUFrameGap(t *testing.T) {
	cfg := EndpointConfig{Serial: SerialConfig{Baud: 1200}}
	bus, _, ep := serialBus(t, cfg, 1, 2)
	for i := range 4 {
		if _, err := ep.Unit(byte(1+i%2), 0).ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	gap := cfg.Serial.FrameGap()
	log := bus.log()
	for i := 1; i < len(log); i++ {
		if d := log[i].at.Sub(log[i-1].answered); d < gap {
			t.Errorf("request %d came %v after answer %d, want ≥ %v", i, d, i-1, gap)
		}
	}
}
