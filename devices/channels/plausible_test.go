package channels

import (
	"log/slog"
	. "plantd/plant"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestPlausibleSim overrides points of the simulated devices with wild
// values, one case at a time, polls them over Modbus and checks that Live
// drops exactly the channels fed by the wild point, keeps the others,
// counts the drops per device and channel, and logs once when a channel
// turns implausible and once when it is plausible again.
func TestPlausibleSim(t *testing.T) {
	at := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	_, sds, l := simPlant(t, at)
	var buf proctest.Buffer
	l.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	byID := map[string]*simDevice{}
	for _, sd := range sds {
		byID[sd.dev.ID()] = sd
	}
	type pin struct {
		model uint16
		point string
		raw   uint64
	}
	tests := []struct {
		dev  string
		pins []pin
		drop []Channel // the channels that must be dropped
		keep []Channel // channels that must stay
	}{
		{"inv1", []pin{{103, "W", 32767}, {103, "W_SF", 10}}, []Channel{ActivePower, PVGeneration}, []Channel{VoltagePhaseA, GridFrequency}},
		{"inv1", []pin{{103, "W", 12600}}, []Channel{ActivePower, PVGeneration}, []Channel{ApparentPower}}, // WRtg 10 kW + 25 % + 50 W
		{"inv1", []pin{{103, "Hz", 65000}, {103, "Hz_SF", 10}}, []Channel{GridFrequency}, []Channel{ActivePower}},
		{"inv1", []pin{{103, "Hz", 3000}}, []Channel{GridFrequency}, nil},                           // 30 Hz (Hz_SF -2)
		{"inv1", []pin{{103, "PF", 30000}}, []Channel{DisplacementPowerFactor}, nil},                // 3000 % (PF_SF -1)
		{"inv1", []pin{{103, "PhVphA", 30000}}, []Channel{VoltagePhaseA}, []Channel{VoltagePhaseB}}, // 3000 V (V_SF -1)
		{"inv1", []pin{{103, "AphA", 30000}}, []Channel{CurrentPhaseA}, nil},                        // 300 A > ARtg
		{"inv1", []pin{{103, "VAr", 30000}}, []Channel{ReactivePower}, nil},                         // 30 kvar > VArRtg 6 kvar
		{"inv1", []pin{{103, "DCW", 30000}}, []Channel{DCPowerInput}, nil},                          // 30 kW DC of a 10 kW inverter
		{"bat", []pin{{802, "SoC", 0x7FFF}}, []Channel{BatteryStateOfCharge}, nil},
		{"meter", []pin{{203, "Hz", 65000}, {203, "Hz_SF", 10}}, []Channel{GridFrequency}, []Channel{GridConsumption, GridFeedIn}},
	}
	ctx := t.Context()
	for _, tt := range tests {
		sd := byID[tt.dev]
		before := counts(l, tt.dev)
		for _, p := range tt.pins {
			if err := sd.dev.Override(p.model, p.point, p.raw); err != nil {
				t.Fatal(err)
			}
		}
		buf.Reset()
		for range 3 {
			l.Apply(sd.poll(ctx, at))
		}
		d, _ := l.Device(tt.dev)
		for _, c := range tt.drop {
			if v, ok := d.Value(c); ok {
				t.Errorf("%s %v: %s = %g kept", tt.dev, tt.pins, c, v)
			}
			if got := counts(l, tt.dev)[c] - before[c]; got != 3 {
				t.Errorf("%s %v: %s dropped %d times in 3 polls", tt.dev, tt.pins, c, got)
			}
			if n := strings.Count(buf.String(), "implausible "+c.Name()+" dropped"); n != 1 {
				t.Errorf("%s %v: %d log lines for %s turning implausible, want 1:\n%s", tt.dev, tt.pins, n, c, buf.String())
			}
		}
		for _, c := range tt.keep {
			if _, ok := d.Value(c); !ok {
				t.Errorf("%s %v: %s dropped too", tt.dev, tt.pins, c)
			}
		}
		sd.dev.ClearOverrides()
		buf.Reset()
		l.Apply(sd.poll(ctx, at))
		l.Apply(sd.poll(ctx, at))
		for _, c := range tt.drop {
			if strings.Count(buf.String(), c.Name()+" plausible again") != 1 {
				t.Errorf("%s %v: no single log line for %s plausible again:\n%s", tt.dev, tt.pins, c, buf.String())
			}
			if c == BatteryStateOfCharge || c == GridFrequency {
				if _, ok := func() (float64, bool) { d, _ := l.Device(tt.dev); return d.Value(c) }(); !ok {
					t.Errorf("%s: %s absent after the override ended", tt.dev, c)
				}
			}
		}
	}
}

func counts(l *Live, dev string) map[Channel]uint64 {
	out := map[Channel]uint64{}
	for _, n := range l.Implausible() {
		if n.DeviceID == dev {
			out[n.Channel] = n.Count
		}
	}
	return out
}
