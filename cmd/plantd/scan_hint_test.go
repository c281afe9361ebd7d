package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"plantd/sim/simtest"
)

// TestScanInstallerHints scans with the real binary where an installer
// goes wrong: a unit nobody answers behind a gateway, a port that is not
// Modbus, a unit the config would refuse; and reads the grid connection
// of a connected inverter (model 122's ECPConn bitfield) by its name.
func TestScanInstallerHints(t *testing.T) {
	t.Parallel() // its own simulator and ports
	// At noon: an inverter asleep at night reports ECPConn 0.
	p := simtest.Start(t, noonConfig())
	inv := simtest.Device(t, p, "inv1")
	// A TCP port that accepts and never answers, as a web or SSH port
	// does to a Modbus request.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		err, hint string
		jsonHint  bool
	}{
		{"unit nobody answers", []string{"scan", inv.Addr(), "--unit", "99"}, 1, "exception 11", "--unit", false},
		{"unit nobody answers, json", []string{"scan", inv.Addr(), "--unit", "99", "--json"}, 1, "exception 11", "--unit", true},
		{"not a Modbus port", []string{"scan", silent.Addr().String(), "--timeout", "300ms"}, 1, "timeout", "Modbus TCP port", false},
		{"not a Modbus port, json", []string{"scan", silent.Addr().String(), "--timeout", "300ms", "--json"}, 1, "timeout", "Modbus TCP port", true},
		{"reserved unit", []string{"scan", inv.Addr(), "--unit", "250"}, 2, "not a Modbus unit id (0..247 or 255)", "", false},
		{"unit 255", []string{"scan", inv.Addr(), "--unit", "255", "--timeout", "300ms"}, 1, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runBinary(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if tc.jsonHint {
				var e struct{ Error, Hint string }
				if err := json.Unmarshal([]byte(out), &e); err != nil || !strings.Contains(e.Error, tc.err) || !strings.Contains(e.Hint, tc.hint) {
					t.Errorf("JSON failure %+v (%v), want error with %q and hint with %q", e, err, tc.err, tc.hint)
				}
				return
			}
			if !strings.Contains(errOut, tc.err) || (tc.hint != "" && !regexp.MustCompile(`(?m)^hint: .*`+regexp.QuoteMeta(tc.hint)).MatchString(errOut)) {
				t.Errorf("stderr %q, want %q and a hint with %q", errOut, tc.err, tc.hint)
			}
		})
	}
	// The config takes the units scan takes: 250 is refused, 255 is not.
	for unit, ok := range map[int]bool{250: false, 255: true, 0: true, 247: true, 248: false} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "plantd.yaml")
		writeConfig(t, cfg, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "db"))+
			"devices:\n  - {id: d, host: 192.0.2.1, unit: "+strconv.Itoa(unit)+"}\n")
		_, errOut, code := runBinary(t, "check-config", cfg)
		_, scanErr, scanCode := runBinary(t, "scan", "192.0.2.1", "--unit", strconv.Itoa(unit), "--timeout", "100ms")
		if (code == 0) != ok || (scanCode != exitUsage) != ok {
			t.Errorf("unit %d: check-config exit %d (%s), scan exit %d (%s); want both to accept it: %v", unit, code, errOut, scanCode, scanErr, ok)
		}
	}
	// A connected inverter's ECPConn (1: bit 0 set) reads CONNECTED.
	out, errOut, code := runBinary(t, "scan", inv.Addr(), "--values", "--json")
	if code != 0 {
		t.Fatalf("scan --values: exit %d %s", code, errOut)
	}
	var res scanResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range res.Models {
		for _, pt := range m.Points {
			if m.ID == 122 && pt.Name == "ECPConn" {
				found = true
				if pt.Value == nil || *pt.Value != 1 || !slices.Equal(pt.Symbol, []string{"CONNECTED"}) {
					t.Errorf("ECPConn of a connected inverter: %+v, want 1 (CONNECTED)", pt)
				}
			}
		}
	}
	if !found {
		t.Error("no ECPConn in model 122")
	}
	if text, _, _ := runBinary(t, "scan", inv.Addr(), "--values"); !regexp.MustCompile(`ECPConn +1 \(CONNECTED\)`).MatchString(text) {
		t.Errorf("scan --values shows ECPConn as:\n%s", regexp.MustCompile(`.*ECPConn.*`).FindString(text))
	}
}
