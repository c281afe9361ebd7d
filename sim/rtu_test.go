package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant/kind"
)

// modbusCRC is the test's own CRC-16/MODBUS, table driven, so that the
// simulator's crc16 is checked against another implementation.
var modbusCRCTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i)
		for range 8 {
			lsb := c & 1
			c >>= 1
			if lsb == 1 {
				c ^= 0xA001
			}
		}
		t[i] = c
	}
	return t
}()

func modbusCRC(b []byte) uint16 {
	c := uint16(0xFFFF)
	for _, x := range b {
		c = c>>8 ^ modbusCRCTable[byte(c)^x]
	}
	return c
}

// withCRC returns the frame b with its CRC, low byte first.
func withCRC(b ...byte) []byte {
	c := modbusCRC(b)
	return append(append([]byte(nil), b...), byte(c), byte(c>>8))
}

// crcGood reports whether a frame's CRC matches, by the test's own CRC.
func crcGood(f []byte) bool {
	return len(f) >= 4 && modbusCRC(f[:len(f)-2]) == uint16(f[len(f)-2])|uint16(f[len(f)-1])<<8
}

func TestCRC16(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want uint16
	}{
		{[]byte("123456789"), 0x4B37}, // the CRC catalogue's check value
		{[]byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01}, 0x0A84},
		{[]byte{0x11, 0x03, 0x00, 0x6B, 0x00, 0x03}, 0x8776}, // spec's example frame: 76 87 on the wire
		{nil, 0xFFFF},
	} {
		if got := crc16(tc.in); got != tc.want || modbusCRC(tc.in) != tc.want {
			t.Errorf("crc16(% x) = %04x (test's %04x), want %04x", tc.in, got, modbusCRC(tc.in), tc.want)
		}
	}
	if f := appendCRC([]byte{0x11, 0x03, 0x00, 0x6B, 0x00, 0x03}); !bytes.Equal(f[6:], []byte{0x76, 0x87}) || !crcOK(f) {
		t.Errorf("appendCRC: % x", f)
	}
}

// master is the test's RTU master: raw frames on a TCP connection or a
// serial device, the gap kept between frames.
type master struct {
	t      testing.TB
	c      lineConn
	timing lineTiming
	stats  func() BusStats // the slave's counters, to wait for frames it does not answer
}

// send writes a request frame (the CRC appended).
func (m *master) send(b ...byte) []byte {
	m.t.Helper()
	f := withCRC(b...)
	m.write(f)
	return f
}

func (m *master) write(f []byte) {
	m.t.Helper()
	if _, err := m.c.Write(f); err != nil {
		m.t.Fatalf("write % x: %v", f, err)
	}
}

// read reads exactly n bytes.
func (m *master) read(n int) []byte {
	m.t.Helper()
	b, err := m.readN(n, 10*time.Second)
	if err != nil {
		m.t.Fatalf("read %d bytes: %v (got % x)", n, err, b)
	}
	return b
}

func (m *master) readN(n int, timeout time.Duration) ([]byte, error) {
	_ = m.c.SetReadDeadline(time.Now().Add(timeout))
	b := make([]byte, n)
	k, err := io.ReadFull(m.c, b)
	return b[:k], err
}

// readUntil reads until the bytes end with tail, and returns them.
func (m *master) readUntil(tail []byte) []byte {
	m.t.Helper()
	var got []byte
	buf := make([]byte, 512)
	_ = m.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for !bytes.HasSuffix(got, tail) {
		n, err := m.c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			m.t.Fatalf("read until % x: %v (got % x)", tail, err, got)
		}
	}
	return got
}

// gap waits the inter-frame silence a master keeps after an answer.
func (m *master) gap() { time.Sleep(m.timing.gap) }

// unanswered sends a frame the slave must not answer and waits until it
// counted it as counter says, then keeps the gap.
func (m *master) unanswered(counter func(BusStats) uint64, f []byte) {
	m.t.Helper()
	before := counter(m.stats())
	m.write(f)
	proctest.WaitValue(m.t, fmt.Sprintf("the slave to count the frame % x (last: its stats)", f), 10*time.Second, func() (BusStats, bool) {
		st := m.stats()
		return st, counter(st) != before
	})
	m.gap()
}

// regsAnswer is the answer to a read of n registers from addr of d, from
// its registers as the plant holds them (the clock stands still).
func regsAnswer(t *testing.T, d *Device, fc byte, addr, n uint16) []byte {
	t.Helper()
	regs, err := d.plant.read(d, addr, n)
	if err != nil {
		t.Fatalf("read %d+%d: %v", addr, n, err)
	}
	b := []byte{d.Unit(), fc, byte(2 * n)}
	for _, r := range regs {
		b = binary.BigEndian.AppendUint16(b, r)
	}
	return withCRC(b...)
}

// rtuConfig is a plant whose meter (unit 1), classic inverter (unit 2)
// and relay board (unit 3) sit behind one RTU over TCP converter at baud
// (0: unpaced), the other devices on Modbus TCP.
func rtuConfig(clk *manualClock, baud int) Config {
	cfg := testConfig(clk)
	cfg.Devices = []DeviceConfig{
		{ID: "meter", Kind: kind.Meter, Unit: 1, Endpoint: "conv", RTUOverTCP: true, Baud: baud},
		{ID: "inv1", Kind: kind.Inverter, Unit: 2, Endpoint: "conv", RTUOverTCP: true, Baud: baud},
		{ID: "io", Relay: true, Unit: 3, Endpoint: "conv", RTUOverTCP: true, Baud: baud},
		{ID: "bat", Kind: kind.Battery, Unit: 1},
	}
	return cfg
}

func dialRTU(t *testing.T, p *Plant, baud int) *master {
	t.Helper()
	d := p.Device("meter")
	c, err := net.DialTimeout("tcp", d.Addr(), 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", d.Addr(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &master{t: t, c: c.(*net.TCPConn), timing: timingFor(baud), stats: func() BusStats {
		s, _ := d.RTUStats()
		return s
	}}
}

// exchanges checks requests and answers byte for byte on a line whose
// meter is unit 1, inverter unit 2 and relay board unit 3.
func exchanges(t *testing.T, p *Plant, m *master) {
	meter, inv, io := p.Device("meter"), p.Device("inv1"), p.Device("io")
	if err := io.SetInput(5, true); err != nil {
		t.Fatal(err)
	}
	// 123 WMaxLimPct of the inverter: writable.
	lim := inv.modelAddr(t, 123) + 2 + 3
	for _, tc := range []struct {
		name string
		req  []byte
		want func() []byte
	}{
		{"read SunS", []byte{1, 3, 0x9C, 0x40, 0, 2}, func() []byte { return withCRC(1, 3, 4, 0x53, 0x75, 0x6E, 0x53) }},
		{"read 125 registers", []byte{1, 3, 0x9C, 0x40, 0, 125}, func() []byte { return regsAnswer(t, meter, 3, 40000, 125) }},
		{"read the inverter's model 1", []byte{2, 3, 0x9C, 0x42, 0, 68}, func() []byte { return regsAnswer(t, inv, 3, 40002, 68) }},
		{"read 0 registers", []byte{1, 3, 0x9C, 0x40, 0, 0}, func() []byte { return withCRC(1, 0x83, 3) }},
		{"read 126 registers", []byte{1, 3, 0x9C, 0x40, 0, 126}, func() []byte { return withCRC(1, 0x83, 3) }},
		{"read outside the map", []byte{1, 3, 0, 0, 0, 2}, func() []byte { return withCRC(1, 0x83, 2) }},
		{"input registers", []byte{1, 4, 0x9C, 0x40, 0, 2}, func() []byte { return withCRC(1, 0x84, 1) }},
		{"coils of a meter", []byte{1, 1, 0, 0, 0, 8}, func() []byte { return withCRC(1, 0x81, 1) }},
		{"unknown function", []byte{1, 0x2B, 0x0E, 1, 0}, func() []byte { return withCRC(1, 0xAB, 1) }},
		{"write a read-only register", []byte{1, 6, 0x9C, 0x40, 0, 1}, func() []byte { return withCRC(1, 0x86, 2) }},
		{"write the limit", []byte{2, 6, byte(lim >> 8), byte(lim), 0, 50}, func() []byte { return withCRC(2, 6, byte(lim>>8), byte(lim), 0, 50) }},
		{"read the limit back", []byte{2, 3, byte(lim >> 8), byte(lim), 0, 1}, func() []byte { return withCRC(2, 3, 2, 0, 50) }},
		{"write the limit out of range", []byte{2, 16, byte(lim >> 8), byte(lim), 0, 1, 2, 0xEA, 0x60}, func() []byte { return withCRC(2, 0x90, 3) }},
		{"write registers, byte count wrong", []byte{2, 16, byte(lim >> 8), byte(lim), 0, 1, 4, 0, 50, 0, 0}, func() []byte { return withCRC(2, 0x90, 3) }},
		{"coil 2 on", []byte{3, 5, 0, 2, 0xFF, 0}, func() []byte { return withCRC(3, 5, 0, 2, 0xFF, 0) }},
		{"coil value neither on nor off", []byte{3, 5, 0, 2, 0x12, 0x34}, func() []byte { return withCRC(3, 0x85, 3) }},
		{"coils 4..7 = 1,0,1,1", []byte{3, 15, 0, 4, 0, 4, 1, 0x0D}, func() []byte { return withCRC(3, 15, 0, 4, 0, 4) }},
		{"read the coils", []byte{3, 1, 0, 0, 0, 8}, func() []byte { return withCRC(3, 1, 1, 0b1101_0100) }},
		{"read coils outside the board", []byte{3, 1, 0, 4, 0, 5}, func() []byte { return withCRC(3, 0x81, 2) }},
		{"read the inputs", []byte{3, 2, 0, 0, 0, 8}, func() []byte { return withCRC(3, 2, 1, 0b0010_0000) }},
		{"watchdog time", []byte{3, 3, 0x11, 0x20, 0, 1}, func() []byte { return withCRC(3, 3, 2, 0x03, 0xE8) }},
	} {
		m.send(tc.req...)
		want := tc.want()
		if got := m.read(len(want)); !bytes.Equal(got, want) {
			t.Errorf("%s: answer\n% x\nwant\n% x", tc.name, got, want)
		}
		m.gap()
	}
	if w := inv.Writes(); len(w) != 1 || w[0].Values[0] != 50 {
		t.Errorf("inverter writes %v", inv.Writes())
	}
	if r, _ := io.Relay(); r.Coils != [RelayChannels]bool{2: true, 4: true, 6: true, 7: true} {
		t.Errorf("coils %v", r.Coils)
	}

	// Silence: an unknown unit, a broadcast, a bad CRC, noise; the next
	// request's answer is the first thing on the line.
	ignored := func(s BusStats) uint64 { return s.Ignored }
	bad := func(s BusStats) uint64 { return s.BadFrames }
	m.unanswered(ignored, withCRC(9, 3, 0x9C, 0x40, 0, 2))
	m.unanswered(ignored, withCRC(0, 6, 0x9C, 0x40, 0, 1))
	f := withCRC(1, 3, 0x9C, 0x40, 0, 2)
	f[len(f)-1] ^= 1
	m.unanswered(bad, f)
	m.unanswered(bad, []byte{0x55, 0xAA, 0x13})
	m.send(1, 3, 0x9C, 0x40, 0, 2)
	if got, want := m.read(9), withCRC(1, 3, 4, 0x53, 0x75, 0x6E, 0x53); !bytes.Equal(got, want) {
		t.Errorf("after the silent frames: % x, want % x", got, want)
	}
	m.gap()
}

// modelAddr is the register address of model id's ID point.
func (d *Device) modelAddr(t *testing.T, id uint16) uint16 {
	t.Helper()
	for _, mi := range d.Models() {
		if mi.ID == id {
			return mi.Addr
		}
	}
	t.Fatalf("%s has no model %d", d.ID(), id)
	return 0
}

func TestRTUOverTCP(t *testing.T) {
	for _, baud := range []int{0, 19200} {
		t.Run(timingName(baud), func(t *testing.T) {
			t.Parallel()
			p := startPlant(t, rtuConfig(newClock(summerNoon), baud))
			if got := p.Device("meter").Transport(); got != "rtu-over-tcp" {
				t.Errorf("meter transport %q", got)
			}
			if got := p.Device("bat").Transport(); got != "tcp" {
				t.Errorf("battery transport %q", got)
			}
			exchanges(t, p, dialRTU(t, p, baud))
		})
	}
}

func timingName(baud int) string {
	if baud == 0 {
		return "unpaced"
	}
	return "baud" + strconv.Itoa(baud)
}

// faultCases checks every fault on the line: m talks to unit 1 (the
// meter) of p.
func faultCases(t *testing.T, p *Plant, m *master, tcp bool) {
	meter := p.Device("meter")
	sunsReq := []byte{1, 3, 0x9C, 0x40, 0, 2}
	suns := withCRC(1, 3, 4, 0x53, 0x75, 0x6E, 0x53)
	silent := func(s BusStats) uint64 { return s.Silent }
	for _, tc := range []struct {
		fault Fault
		check func(t *testing.T)
	}{
		{Fault{Kind: FaultOffline}, func(t *testing.T) {
			m.unanswered(silent, withCRC(sunsReq...))
		}},
		{Fault{Kind: FaultBadCRC}, func(t *testing.T) {
			m.send(sunsReq...)
			got := m.read(len(suns))
			if crcGood(got) || got[0] != 1 {
				t.Errorf("answer % x: want unit 1 and a bad CRC", got)
			}
			diff := 0
			for i := range got {
				if got[i] != suns[i] {
					diff++
				}
			}
			if diff != 1 {
				t.Errorf("answer % x differs from % x in %d bytes, want 1", got, suns, diff)
			}
			m.gap()
		}},
		{Fault{Kind: FaultCollision}, func(t *testing.T) {
			m.send(sunsReq...)
			got := m.readUntil(suns)
			noise := got[:len(got)-len(suns)]
			if len(noise) < 3 || crcGood(noise) {
				t.Errorf("before the answer: % x, want 3 or more bytes without a valid CRC", noise)
			}
			m.gap()
		}},
		{Fault{Kind: FaultGarbage}, func(t *testing.T) {
			m.send(sunsReq...)
			got := m.read(3)
			// The rest of the noise comes before the answer to the
			// next request, an exception 9 that is easy to tell.
			exc := withCRC(1, 0x83, 9)
			meter.SetFault(Fault{Kind: FaultException, Code: 9})
			m.gap()
			m.send(sunsReq...)
			rest := m.readUntil(exc)
			noise := append(got, rest[:len(rest)-len(exc)]...)
			if crcGood(noise) || len(noise) > 30 {
				t.Errorf("garbage % x: want 3..30 bytes without a valid CRC", noise)
			}
			m.gap()
		}},
		{Fault{Kind: FaultException, Code: 9}, func(t *testing.T) {
			m.send(sunsReq...)
			if got, want := m.read(5), withCRC(1, 0x83, 9); !bytes.Equal(got, want) {
				t.Errorf("exception: % x, want % x", got, want)
			}
			m.gap()
		}},
		{Fault{Kind: FaultSlow, Delay: 150 * time.Millisecond}, func(t *testing.T) {
			start := time.Now()
			m.send(sunsReq...)
			if got := m.read(len(suns)); !bytes.Equal(got, suns) {
				t.Errorf("slow answer % x", got)
			}
			if el := time.Since(start); el < 150*time.Millisecond {
				t.Errorf("slow answer after %v, want 150ms or more", el)
			}
			m.gap()
		}},
		{Fault{Kind: FaultDrop}, func(t *testing.T) {
			if !tcp {
				m.unanswered(silent, withCRC(sunsReq...))
				return
			}
			m.send(sunsReq...)
			if b, err := m.readN(1, 10*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Errorf("drop: read % x, %v; want the connection closed", b, err)
			}
		}},
	} {
		t.Run(tc.fault.Kind.String(), func(t *testing.T) {
			meter.SetFault(tc.fault)
			tc.check(t)
			meter.SetFault(Fault{})
			if tc.fault.Kind == FaultDrop && tcp {
				return
			}
			m.send(sunsReq...)
			if got := m.read(len(suns)); !bytes.Equal(got, suns) {
				t.Errorf("after clearing the fault: % x", got)
			}
			m.gap()
		})
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !errors.Is(err, os.ErrDeadlineExceeded)
}

func TestRTUOverTCPFaults(t *testing.T) {
	p := startPlant(t, rtuConfig(newClock(summerNoon), 0))
	faultCases(t, p, dialRTU(t, p, 0), true)
}

// TestRTUOverTCPConnections: a converter keeps accepting connections
// while its units are dead, and FaultOneClient keeps one connection.
func TestRTUOverTCPConnections(t *testing.T) {
	p := startPlant(t, rtuConfig(newClock(summerNoon), 0))
	suns := withCRC(1, 3, 4, 0x53, 0x75, 0x6E, 0x53)
	ask := func(m *master) {
		t.Helper()
		m.send(1, 3, 0x9C, 0x40, 0, 2)
		if got := m.read(len(suns)); !bytes.Equal(got, suns) {
			t.Errorf("answer % x", got)
		}
		m.gap()
	}

	for _, id := range []string{"meter", "inv1", "io"} {
		p.Device(id).SetFault(Fault{Kind: FaultOffline})
	}
	m := dialRTU(t, p, 0)
	m.unanswered(func(s BusStats) uint64 { return s.Silent }, withCRC(1, 3, 0x9C, 0x40, 0, 2))
	for _, id := range []string{"meter", "inv1", "io"} {
		p.Device(id).SetFault(Fault{})
	}
	ask(m)

	p.Device("inv1").SetFault(Fault{Kind: FaultOneClient})
	second := dialRTU(t, p, 0)
	ask(second)
	if b, err := m.readN(1, 10*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("first connection: read % x, %v; want it closed by the second", b, err)
	}
}

// TestRTUOverTCPOneLine: two connections to a paced converter share its
// serial line, so two requests at once take the line twice as long.
func TestRTUOverTCPOneLine(t *testing.T) {
	const baud = 19200
	p := startPlant(t, rtuConfig(newClock(summerNoon), baud))
	want := regsAnswer(t, p.Device("meter"), 3, 40000, 125)
	m1, m2 := dialRTU(t, p, baud), dialRTU(t, p, baud)
	start := time.Now()
	m1.send(1, 3, 0x9C, 0x40, 0, 125)
	m2.send(1, 3, 0x9C, 0x40, 0, 125)
	for _, m := range []*master{m1, m2} {
		if got := m.read(len(want)); !bytes.Equal(got, want) {
			t.Errorf("answer % x", got)
		}
	}
	el := time.Since(start)
	one := m1.timing.wire(8+len(want)) + m1.timing.gap
	if el < 2*one {
		t.Errorf("both answers after %v, want at least %v: the line carried them at once", el, 2*one)
	}
}
