package channels

import (
	. "plantd/plant"
	"plantd/plant/kind"
	"strings"
	"testing"

	"plantd/sunspec"
)

// TestStatusTables checks the health tables against the model
// definitions: the points exist with an enum or bitfield type, and every
// value or bit carries the SunSpec symbol the table names.
func TestStatusTables(t *testing.T) {
	if _, err := compileStatus(); err != nil {
		t.Error(err)
	}
	symbol := func(p *sunspec.Point, v int64) string {
		for _, s := range p.Symbols {
			if s.Value == v {
				return s.Name
			}
		}
		return ""
	}
	for _, r := range stateTable {
		for _, mid := range r.Models {
			p := lookupPoint(t, mid, "", r.Point)
			if p == nil {
				continue
			}
			if p.Type != sunspec.TypeEnum16 && p.Type != sunspec.TypeEnum32 {
				t.Errorf("model %d %s: type %s, want an enum", mid, r.Point, p.Type)
			}
			for _, s := range r.Syms {
				// Model 111 prefixes its symbols with "gg".
				if got := symbol(p, s.Value); !strings.HasSuffix(got, s.Name) {
					t.Errorf("model %d %s = %d: symbol %q, table says %q", mid, r.Point, s.Value, got, s.Name)
				}
			}
		}
	}
	for _, r := range eventTable {
		for _, mid := range r.Models {
			p := lookupPoint(t, mid, "", r.Point)
			if p == nil {
				continue
			}
			if p.Type != sunspec.TypeBitfield16 && p.Type != sunspec.TypeBitfield32 {
				t.Errorf("model %d %s: type %s, want a bitfield", mid, r.Point, p.Type)
			}
			for _, b := range r.Bits {
				if got := symbol(p, int64(b.Bit)); !strings.HasSuffix(got, b.Name) {
					t.Errorf("model %d %s bit %d: symbol %q, table says %q", mid, r.Point, b.Bit, got, b.Name)
				}
				if b.Sev == sevNone {
					t.Errorf("model %d %s bit %d: no severity", mid, r.Point, b.Bit)
				}
			}
		}
	}
	// Every device kind's main state point is read.
	for _, mid := range []uint16{101, 102, 103, 111, 112, 113, 701, 802} {
		found := false
		for _, r := range stateTable {
			for _, m := range r.Models {
				found = found || m == mid
			}
		}
		if !found {
			t.Errorf("model %d: no state rule", mid)
		}
	}
}

// TestHealthFromModels evaluates hand-made state and event points and
// derives the health of an online device.
func TestHealthFromModels(t *testing.T) {
	st, err := compileStatus()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		models func(t testing.TB) []*sunspec.Instance
		want   Health
		reason string
	}{
		{"103 MPPT", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4), raw("Evt1", 0))}
		}, HealthOk, ""},
		{"103 throttled is Ok", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 5))} }, HealthOk, ""},
		{"103 starting", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 3))} }, HealthOk, ""},
		{"103 sleeping", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 2))} }, HealthOff, "St SLEEPING"},
		{"103 off", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 1))} }, HealthOff, "St OFF"},
		{"103 standby", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 8))} }, HealthOff, "St STANDBY"},
		{"103 shutting down", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 6))} }, HealthOff, "St SHUTTING_DOWN"},
		{"103 fault", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 7))} }, HealthError, "St FAULT"},
		{"111 fault (gg symbols)", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 111, nil, raw("St", 7))} }, HealthError, "St FAULT"},
		{"103 vendor state value: no opinion", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 103, nil, raw("St", 42))} }, HealthOk, ""},
		{"103 ground fault while producing", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4), raw("Evt1", 1<<0))}
		}, HealthError, "Evt1 GROUND_FAULT"},
		{"103 over-temperature", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4), raw("Evt1", 1<<7))}
		}, HealthWarning, "Evt1 OVER_TEMP"},
		{"103 error bit wins over warning bit", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4), raw("Evt1", 1<<7|1<<12))}
		}, HealthError, "Evt1 BLOWN_STRING_FUSE"},
		{"103 sleeping with a stale grid warning: Off", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 2), raw("Evt1", 1<<11))}
		}, HealthOff, "St SLEEPING"},
		{"103 sleeping with a ground fault: Error", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 2), raw("Evt1", 1<<0))}
		}, HealthError, "Evt1 GROUND_FAULT"},
		{"103 unknown event bit: ignored", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4), raw("Evt1", 1<<30))}
		}, HealthOk, ""},
		{"701 running", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("St", 1), raw("InvSt", 3), raw("ConnSt", 1), raw("Alrm", 0))}
		}, HealthOk, ""},
		{"701 sleeping", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("St", 0), raw("InvSt", 1), raw("ConnSt", 0))}
		}, HealthOff, "InvSt SLEEPING"},
		{"701 off by St alone", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 701, nil, raw("St", 0))} }, HealthOff, "St OFF"},
		{"701 disconnected while InvSt says running", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("St", 1), raw("InvSt", 3), raw("ConnSt", 0))}
		}, HealthOff, "ConnSt DISCONNECTED"},
		{"701 fault", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 701, nil, raw("InvSt", 6))} }, HealthError, "InvSt FAULT"},
		{"701 throttled by plantd: Ok", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("InvSt", 4), raw("ThrotSrc", 1<<0))}
		}, HealthOk, ""},
		{"701 derated by itself: Warning", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("InvSt", 4), raw("ThrotSrc", 1<<14))}
		}, HealthWarning, "ThrotSrc DERATED"},
		{"701 manufacturer alarm", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 701, nil, raw("InvSt", 3), raw("Alrm", 1<<16))}
		}, HealthWarning, "Alrm MANUFACTURER_ALRM"},
		{"160 arc detection", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 103, nil, raw("St", 4)), mk(t, 160, nil, raw("Evt", 1<<15))}
		}, HealthError, "Evt ARC_DETECTION"},
		{"meter missing sensor", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 203, nil, raw("Evt", 1<<7))} }, HealthError, "Evt Missing_Sensor"},
		{"meter under-voltage", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 201, nil, raw("Evt", 1<<3))} }, HealthWarning, "Evt Under_Voltage"},
		{"meter without events", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 203, nil, raw("Evt", 0))} }, HealthOk, ""},
		{"802 connected", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 802, nil, raw("State", 3), raw("Evt1", 0))}
		}, HealthOk, ""},
		{"802 standby is Ok", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 802, nil, raw("State", 4))} }, HealthOk, ""},
		{"802 SoC protection", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 802, nil, raw("State", 5))} }, HealthWarning, "State SOC PROTECTION"},
		{"802 disconnected", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 802, nil, raw("State", 1))} }, HealthOff, "State DISCONNECTED"},
		{"802 fault", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 802, nil, raw("State", 99))} }, HealthError, "State FAULT"},
		{"802 over-temperature alarm", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 802, nil, raw("State", 3), raw("Evt1", 1<<1))}
		}, HealthError, "Evt1 OVER_TEMP_ALARM"},
		{"802 over-temperature warning", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 802, nil, raw("State", 3), raw("Evt1", 1<<2))}
		}, HealthWarning, "Evt1 OVER_TEMP_WARNING"},
		{"713 warning", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 713, nil, raw("Sta", 1))} }, HealthWarning, "Sta WARNING"},
		{"713 error", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 713, nil, raw("Sta", 2))} }, HealthError, "Sta ERROR"},
		{"124 off", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 124, nil, raw("ChaSt", 1))} }, HealthOff, "ChaSt OFF"},
		{"battery: worst state of 802 and 124 wins", func(t testing.TB) []*sunspec.Instance {
			return []*sunspec.Instance{mk(t, 124, nil, raw("ChaSt", 4)), mk(t, 802, nil, raw("State", 99))}
		}, HealthError, "State FAULT"},
		{"sensor: no state points", func(t testing.TB) []*sunspec.Instance { return []*sunspec.Instance{mk(t, 308, nil, val("GHI", 500))} }, HealthOk, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models := tt.models(t)
			got, reason := healthOf(st.evaluate(models, newRoute(table, st, "", models)))
			if got != tt.want || reason != tt.reason {
				t.Errorf("health = %s (%q), want %s (%q)", got, reason, tt.want, tt.reason)
			}
		})
	}
}

// healthOf is the health plant gives an online device whose poll said ds.
func healthOf(ds DeviceStatus) (Health, string) {
	l := NewLive([]Plant{{ID: "p"}}, []DeviceInfo{{ID: "x", PlantID: "p", Kind: kind.Inverter}}, nil)
	l.Apply(Sample{Device: "x", Time: t0, Readings: []Reading{}, Status: ds, State: StateOnline})
	d, _ := l.Device("x")
	return d.Health, d.HealthReason
}
