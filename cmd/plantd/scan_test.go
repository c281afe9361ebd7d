package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// TestScanValues: --values reads every model of the classic inverter and
// prints each implemented point with its value in its units (scale factor
// applied), enum symbols and strings; --json carries the same.
func TestScanValues(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	out, errOut, code := runBinary(t, "scan", inv.Addr(), "--values", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res scanResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	find := func(model uint16, name string) (scanPoint, bool) {
		for _, m := range res.Models {
			if m.ID != model {
				continue
			}
			if m.Error != "" {
				t.Errorf("model %d: %s", model, m.Error)
			}
			for _, pt := range m.Points {
				if pt.Name == name {
					return pt, true
				}
			}
		}
		return scanPoint{}, false
	}
	if sn, ok := find(1, "SN"); !ok || sn.Text != inv.Serial() {
		t.Errorf("model 1 SN = %+v, want %q", sn, inv.Serial())
	}
	if hz, ok := find(103, "Hz"); !ok || hz.Value == nil || *hz.Value < 49 || *hz.Value > 51 || hz.Units != "Hz" {
		t.Errorf("model 103 Hz = %+v, want about 50 Hz", hz)
	}
	if st, ok := find(103, "St"); !ok || len(st.Symbol) != 1 {
		t.Errorf("model 103 St = %+v, want one symbol", st)
	}
	if v, ok := find(126, "curve[1].V1"); !ok || v.Value == nil {
		t.Errorf("model 126 curve[1].V1 = %+v", v)
	}
	if _, ok := find(103, "W_SF"); ok {
		t.Error("scale factors are applied, not listed")
	}
	text, _, _ := runBinary(t, "scan", inv.Addr(), "--values")
	for _, want := range []string{"SN", inv.Serial(), "Hz", "WMaxLimPct", "curve[1].V1"} {
		if !strings.Contains(text, want) {
			t.Errorf("scan --values lacks %q", want)
		}
	}
}

// TestScanJSONFailure: with --json a failed scan prints a JSON error
// object too; --base limits the probe to one base.
func TestScanJSONFailure(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	for _, tc := range []struct {
		args      []string
		noSunSpec bool
		msg       string
	}{
		{[]string{"scan", inv.Addr(), "--base", "50000", "--json"}, true, "no SunS marker at 50000"},
		{[]string{"scan", deadAddr(t), "--json", "--timeout", "500ms"}, false, "connect"},
	} {
		out, _, code := runBinary(t, tc.args...)
		var e scanError
		if err := json.Unmarshal([]byte(out), &e); err != nil || code != 1 || e.NoSunSpec != tc.noSunSpec || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%v: exit %d, %+v (%v); want exit 1, noSunSpec %v, error with %q", tc.args, code, e, err, tc.noSunSpec, tc.msg)
		}
	}
	if out, _, code := runBinary(t, "scan", inv.Addr(), "--base", "40000", "--json"); code != 0 || !strings.Contains(out, `"base": 40000`) {
		t.Errorf("--base 40000: exit %d\n%s", code, out)
	}
}

// TestScanUnknownKind: a device with models that make no kind (1 and 129
// only) is reported with its capabilities and why its kind is unknown.
func TestScanUnknownKind(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	kind, platform, caps := sunspec.Classify([]uint16{1, 129})
	res := newScanResult("10.0.0.9:502", 3, &sunspec.Device{Base: 40000, Kind: kind, Platform: platform, Capabilities: caps,
		Models: []sunspec.ModelRef{{ID: 1, Addr: 40002, Len: 66}, {ID: 129, Addr: 40070, Len: 60}}})
	var b strings.Builder
	printScan(&b, res)
	for _, want := range []string{"kind          unknown", "capabilities  lvrt", "why unknown   no model that makes an inverter"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("scan of a 1+129 device lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseDemoStart(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	now := time.Date(2026, 11, 23, 22, 30, 0, 0, time.UTC) // 23:30 in Berlin
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "10:00", want: time.Date(2026, 11, 23, 10, 0, 0, 0, berlin)},
		{in: "2026-06-21T12:30", want: time.Date(2026, 6, 21, 12, 30, 0, 0, berlin)},
		{in: "2026-06-21T12:30:00Z", want: time.Date(2026, 6, 21, 12, 30, 0, 0, time.UTC)},
		{in: "25:00", bad: true},
		{in: "noon", bad: true},
	} {
		got, err := parseDemoStart(tc.in, now)
		if tc.bad != (err != nil) || (!tc.bad && !got.Equal(tc.want)) {
			t.Errorf("%q: %v, %v; want %v (bad %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
