package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// rtuCRC is CRC-16/MODBUS, written for this test.
func rtuCRC(b []byte) uint16 {
	c := uint16(0xFFFF)
	for _, x := range b {
		c ^= uint16(x)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ 0xA001
			} else {
				c >>= 1
			}
		}
	}
	return c
}

func rtuFrame(b ...byte) []byte {
	c := rtuCRC(b)
	return append(b, byte(c), byte(c>>8))
}

// socatPair starts socat with two linked ptys in dir and returns their
// paths; skipped without socat, except under CI=true.
func socatPair(t *testing.T, dir string) (a, b string) {
	t.Helper()
	p := proctest.StartPTYPair(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	return p.A, p.B
}

// TestSimSerial runs "plantd sim --serial" on one end of a pty pair and
// reads the meter as Modbus RTU on the other; the rest stays on TCP.
func TestSimSerial(t *testing.T) {
	t.Parallel() // its own daemon and ptys
	a, b := socatPair(t, t.TempDir())
	p := proctest.Start(t, exec.Command(binPath, "sim", "--serial", b, "--baud", "19200"))
	out := p.WaitStdout(simReadyRE, 10*time.Second)
	devs := simDevices(out)
	if len(devs) != 7 || devs["meter"] != "" || devs["inv1"] == "" || devs["rcr"] == "" {
		t.Errorf("TCP devices %v, want the demo's but the meter", devs)
	}
	if !regexp.MustCompile(`(?m)^meter\s+meter\s+`+regexp.QuoteMeta(b)+` 1 \(RTU 19200 baud\)$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^sdm630\s+template sdm630\s+`+regexp.QuoteMeta(b)+` \d+ \(RTU 19200 baud\)$`).MatchString(out) {
		t.Errorf("the banner does not list the meter and the template devices on %s:\n%s", b, out)
	}
	f, err := os.OpenFile(a, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// SunS, then model 1's header and Mn "plantd".
	for _, tc := range []struct {
		req, want []byte
	}{
		{rtuFrame(1, 3, 0x9C, 0x40, 0, 2), rtuFrame(1, 3, 4, 'S', 'u', 'n', 'S')},
		{rtuFrame(1, 3, 0x9C, 0x42, 0, 5), rtuFrame(1, 3, 10, 0, 1, 0, 66, 'p', 'l', 'a', 'n', 't', 'd')},
	} {
		if _, err := f.Write(tc.req); err != nil {
			t.Fatal(err)
		}
		_ = f.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(tc.want))
		if _, err := io.ReadFull(f, got); err != nil {
			t.Fatalf("read the answer to % x: %v (% x)", tc.req, err, got)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("answer to % x:\n% x\nwant\n% x", tc.req, got, tc.want)
		}
		time.Sleep(2 * time.Millisecond) // the inter-frame gap at 19200 baud
	}
	p.Stop(os.Interrupt, 5*time.Second)
}

// TestSimSerialErrors: --serial with a device that is not there exits 78,
// and the flags that do not go with it are refused.
func TestSimSerialErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "ttyUSB9")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sim", "--serial", missing}, exitConfig, missing},
		{[]string{"sim", "--serial", missing, "--baud", "9601"}, exitUsage, "9601 is not a standard rate"},
		{[]string{"sim", "--baud", "9600"}, exitUsage, "--baud needs --serial"},
		{[]string{"sim", "--serial", missing, "--devices", "10"}, exitUsage, "not with --devices"},
	} {
		_, errOut, code := runBinary(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("plantd %v: exit %d, %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
