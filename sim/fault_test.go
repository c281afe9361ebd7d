package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// rawConn speaks Modbus TCP byte by byte, to see what faults do on the wire.
type rawConn struct {
	t *testing.T
	c net.Conn
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c}
}

// readSunS sends a read of the two SunS registers at 40000.
func (r *rawConn) readSunS(tid uint16, unit byte) {
	r.t.Helper()
	req := []byte{byte(tid >> 8), byte(tid), 0, 0, 0, 6, unit, 3, 0x9C, 0x40, 0, 2}
	_ = r.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.c.Write(req); err != nil {
		r.t.Fatalf("write request: %v", err)
	}
}

// frame reads one MBAP frame.
func (r *rawConn) frame(timeout time.Duration) ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(timeout))
	hdr := make([]byte, 7)
	if _, err := io.ReadFull(r.c, hdr); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[4:6]))
	if n < 1 || n > 254 {
		return hdr, errors.New("bad length")
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r.c, body); err != nil {
		return nil, err
	}
	return append(hdr, body...), nil
}

// any reads whatever arrives first.
func (r *rawConn) any(timeout time.Duration) ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 512)
	n, err := r.c.Read(buf)
	return buf[:n], err
}

// sunsAnswer is the correct answer to readSunS.
func sunsAnswer(tid uint16, unit byte) []byte {
	return []byte{byte(tid >> 8), byte(tid), 0, 0, 0, 7, unit, 3, 4, 0x53, 0x75, 0x6E, 0x53}
}

// closedErr reports whether err says the peer closed or reset the
// connection, not that the read timed out.
func closedErr(err error) bool {
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

func TestFaults(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, testConfig(clk))
	d := p.Device("inv1")
	other := p.Device("inv2")
	const unit = 1

	cases := []struct {
		name  string
		fault Fault
		// check sees the fault through c, opened after the fault was set.
		check func(t *testing.T, c *rawConn)
		// keep: the connection survives the fault and must answer
		// normally once it is cleared.
		keep bool
	}{
		{"slow", Fault{Kind: FaultSlow, Delay: 300 * time.Millisecond}, func(t *testing.T, c *rawConn) {
			start := time.Now()
			c.readSunS(1, unit)
			f, err := c.frame(5 * time.Second)
			if el := time.Since(start); err != nil || !bytes.Equal(f, sunsAnswer(1, unit)) || el < 300*time.Millisecond {
				t.Errorf("answer % x, %v after %s; want the answer after 300ms", f, err, el)
			}
		}, true},
		{"drop", Fault{Kind: FaultDrop}, func(t *testing.T, c *rawConn) {
			c.readSunS(1, unit)
			if b, err := c.any(3 * time.Second); !closedErr(err) {
				t.Errorf("read % x, %v; want the connection closed", b, err)
			}
		}, false},
		{"wrong tid", Fault{Kind: FaultWrongTID}, func(t *testing.T, c *rawConn) {
			c.readSunS(10, unit)
			f, err := c.frame(3 * time.Second)
			if err != nil || binary.BigEndian.Uint16(f) == 10 || !bytes.Equal(f[2:], sunsAnswer(10, unit)[2:]) {
				t.Errorf("first answer % x, %v; want the data under another tid", f, err)
			}
			c.readSunS(11, unit)
			f, err = c.frame(3 * time.Second)
			if err != nil || !bytes.Equal(f, sunsAnswer(10, unit)) {
				t.Errorf("second answer % x, %v; want the answer to tid 10", f, err)
			}
		}, true},
		{"exception 6", Fault{Kind: FaultException, Code: 6}, func(t *testing.T, c *rawConn) {
			c.readSunS(7, unit)
			f, err := c.frame(3 * time.Second)
			if want := []byte{0, 7, 0, 0, 0, 3, unit, 0x83, 6}; err != nil || !bytes.Equal(f, want) {
				t.Errorf("answer % x, %v; want % x", f, err, want)
			}
		}, true},
		{"exception default", Fault{Kind: FaultException}, func(t *testing.T, c *rawConn) {
			c.readSunS(8, unit)
			f, err := c.frame(3 * time.Second)
			if want := []byte{0, 8, 0, 0, 0, 3, unit, 0x83, 4}; err != nil || !bytes.Equal(f, want) {
				t.Errorf("answer % x, %v; want % x", f, err, want)
			}
		}, true},
		{"not implemented", Fault{Kind: FaultNotImplemented}, func(t *testing.T, c *rawConn) {
			mc := dial(t, d)
			m := readModel(t, mc, d, 103)
			for _, n := range []string{"W", "A", "PhVphA", "Hz", "DCW"} {
				if implemented(t, m, n) {
					t.Errorf("103 %s implemented", n)
				}
			}
			if !implemented(t, m, "St") || !implemented(t, m, "WH") {
				t.Error("state and energy should stay")
			}
			if s := d.State(); s.PowerW <= 0 {
				t.Errorf("the physics should carry on: %+v", s)
			}
			c.readSunS(1, unit)
			if f, err := c.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(1, unit)) {
				t.Errorf("SunS: % x, %v", f, err)
			}
		}, true},
		{"one client", Fault{Kind: FaultOneClient}, func(t *testing.T, c *rawConn) {
			c.readSunS(1, unit)
			if f, err := c.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(1, unit)) {
				t.Fatalf("first client: % x, %v", f, err)
			}
			c2 := rawDial(t, d.Addr())
			c2.readSunS(2, unit)
			if f, err := c2.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(2, unit)) {
				t.Fatalf("second client: % x, %v", f, err)
			}
			if b, err := c.any(3 * time.Second); !closedErr(err) {
				t.Errorf("first client read % x, %v; want it kicked", b, err)
			}
		}, false},
		{"offline", Fault{Kind: FaultOffline}, func(t *testing.T, _ *rawConn) {
			// A new connection is reset at once: the dial fails, or the
			// first read.
			c, err := net.DialTimeout("tcp", d.Addr(), 2*time.Second)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("dial: %v; want a reset", err)
				}
				return
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if n, err := c.Read(make([]byte, 16)); !closedErr(err) {
				t.Errorf("read %d bytes, %v; want the connection reset", n, err)
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d.SetFault(tc.fault)
			if got := d.Fault(); got.Kind != tc.fault.Kind {
				t.Fatalf("Fault() = %v", got)
			}
			var c *rawConn
			if tc.fault.Kind != FaultOffline {
				c = rawDial(t, d.Addr())
			}
			tc.check(t, c)

			// Other devices do not see it.
			oc := rawDial(t, other.Addr())
			oc.readSunS(3, unit)
			if f, err := oc.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(3, unit)) {
				t.Errorf("other device: % x, %v", f, err)
			}

			d.SetFault(Fault{})
			conns := []*rawConn{rawDial(t, d.Addr())}
			if tc.keep {
				conns = append(conns, c)
			}
			for i, cc := range conns {
				tid := uint16(100 + i)
				cc.readSunS(tid, unit)
				if f, err := cc.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(tid, unit)) {
					t.Errorf("after clearing, connection %d: % x, %v", i, f, err)
				}
			}
		})
	}
}

// TestFaultGarbage checks that garbage never looks like the answer.
func TestFaultGarbage(t *testing.T) {
	p := startPlant(t, testConfig(newClock(summerNoon)))
	d := p.Device("meter")
	d.SetFault(Fault{Kind: FaultGarbage})
	for i := range 12 {
		// A fresh connection each time: garbage may leave the stream out
		// of step.
		c := rawDial(t, d.Addr())
		tid := uint16(i + 1)
		c.readSunS(tid, 1)
		b, err := c.any(3 * time.Second)
		if err != nil || len(b) == 0 {
			t.Fatalf("read: % x, %v; want garbage", b, err)
		}
		if bytes.Equal(b, sunsAnswer(tid, 1)) {
			t.Fatalf("garbage % x is the valid answer", b)
		}
		// Nothing in it is a well-formed answer of function 3 either.
		if len(b) >= 9 && b[2] == 0 && b[3] == 0 && b[7] == 3 && int(binary.BigEndian.Uint16(b[4:6])) == len(b)-6 && int(b[8]) == len(b)-9 {
			t.Errorf("garbage % x parses as a read answer", b)
		}
	}
}

// TestFaultOfflineOpenConnection checks that an endpoint going offline
// closes the connections it has.
func TestFaultOfflineOpenConnection(t *testing.T) {
	p := startPlant(t, testConfig(newClock(summerNoon)))
	d := p.Device("bat")
	c := rawDial(t, d.Addr())
	c.readSunS(1, 1)
	if f, err := c.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(1, 1)) {
		t.Fatalf("answer % x, %v", f, err)
	}
	d.SetFault(Fault{Kind: FaultOffline})
	if b, err := c.any(3 * time.Second); !closedErr(err) {
		t.Errorf("read % x, %v; want the connection closed", b, err)
	}
}

func TestParseFaultKind(t *testing.T) {
	for k := FaultNone; k <= FaultOffline; k++ {
		got, err := ParseFaultKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseFaultKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseFaultKind("gremlins"); err == nil {
		t.Error("unknown kind parsed")
	}
}
