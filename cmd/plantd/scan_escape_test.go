package main

import (
	"strings"
	"testing"

	"plantd/sim"
	"plantd/sim/simtest"
)

// TestScanQuotesControlCharacters: a device whose model 1 strings carry
// terminal escapes (clear screen, set the window title, a bell) must not
// reach the installer's terminal raw from plantd scan; the text around
// them stays readable, with --values too.
func TestScanQuotesControlCharacters(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	if err := inv.OverrideString(1, "Mn", "Evil\x1b[2J\x1b]0;pwned\x07Co"); err != nil {
		t.Fatal(err)
	}
	if err := inv.OverrideString(1, "SN", "SN\r\x9b31m1"); err != nil {
		t.Fatal(err)
	}
	// --values prints model 1's strings again, as points.
	for _, args := range [][]string{{"scan", inv.Addr()}, {"scan", inv.Addr(), "--values"}} {
		out, errOut, code := runBinary(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		for _, c := range out {
			if c != '\n' && (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
				t.Errorf("%v: control character %U in the human output:\n%q", args, c, out)
				break
			}
		}
		if !strings.Contains(out, `Evil\x1b[2J\x1b]0;pwned\aCo`) {
			t.Errorf("%v: manufacturer not shown quoted:\n%s", args, out)
		}
	}
}
