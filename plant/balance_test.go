package plant

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"plantd/modbus"
	"plantd/plant/kind"
)

// Contributors for balance cases.
func inv(id string, w float64) contrib {
	return contrib{id: id, kind: kind.Inverter, state: StateOnline, everOK: true, pv: w, hasPV: true}
}

func meterC(id string, w float64) contrib {
	return contrib{id: id, kind: kind.Meter, state: StateOnline, everOK: true,
		cons: math.Max(0, w), feed: math.Max(0, -w), hasGrid: true}
}

func batC(id string, w, soc, capWh float64) contrib {
	return contrib{id: id, kind: kind.Battery, state: StateOnline, everOK: true,
		dis: math.Max(0, w), cha: math.Max(0, -w), hasBat: true, soc: soc, hasSoC: true, capacityWh: capWh}
}

func with(c contrib, f func(*contrib)) contrib { f(&c); return c }

// opt is an expected optional field: nil = absent.
func opt(v float64) *float64 { return &v }

type wantBalance struct {
	pv, feed, cons, cha, dis, soc, total, self, direct, supply, autarky, selfRate *float64
	issues                                                                        []DeviceIssue
}

func TestComputeBalance(t *testing.T) {
	timeout := fmt.Errorf("poll meter: %w", &modbus.Error{Op: modbus.OpRead, Err: modbus.ErrTimeout})
	tests := []struct {
		name string
		cs   []contrib
		want wantBalance
	}{
		{
			name: "no battery: battery fields absent",
			cs:   []contrib{inv("inv1", 6000), meterC("m", -4000)},
			want: wantBalance{pv: opt(6000), feed: opt(4000), cons: opt(0), total: opt(2000), self: opt(2000),
				direct: opt(2000), supply: opt(2000), autarky: opt(1), selfRate: opt(2000.0 / 6000)},
		},
		{
			name: "night, importing, battery discharging",
			cs:   []contrib{inv("inv1", 0), meterC("m", 300), batC("bat", 700, 55, 10000)},
			want: wantBalance{pv: opt(0), feed: opt(0), cons: opt(300), cha: opt(0), dis: opt(700), soc: opt(55),
				total: opt(1000), self: opt(0), direct: opt(0), supply: opt(700), autarky: opt(0.7)},
		},
		{
			name: "noon: PV charges the battery and feeds in",
			cs:   []contrib{inv("inv1", 8000), inv("inv2", 6000), meterC("m", -7000), batC("bat", -5000, 40, 10000)},
			want: wantBalance{pv: opt(14000), feed: opt(7000), cons: opt(0), cha: opt(5000), dis: opt(0), soc: opt(40),
				total: opt(2000), self: opt(7000), direct: opt(2000), supply: opt(2000), autarky: opt(1), selfRate: opt(0.5)},
		},
		{
			name: "sleeping inverter without W counts 0",
			cs: []contrib{with(inv("inv1", 0), func(c *contrib) { c.hasPV = false; c.off = true }),
				meterC("m", 400)},
			want: wantBalance{pv: opt(0), feed: opt(0), cons: opt(400), total: opt(400), self: opt(0), direct: opt(0),
				supply: opt(0), autarky: opt(0)},
		},
		{
			name: "operating inverter without W: NoValue, PV and totals absent",
			cs:   []contrib{with(inv("inv1", 0), func(c *contrib) { c.hasPV = false }), meterC("m", 400)},
			want: wantBalance{feed: opt(0), cons: opt(400),
				issues: []DeviceIssue{{"inv1", IssueNoValue}}},
		},
		{
			name: "meter offline: grid and totals absent, error names the meter",
			cs: []contrib{inv("inv1", 5000),
				with(meterC("m", -1000), func(c *contrib) { c.state = StateOffline; c.lastErr = fmt.Errorf("refused") })},
			want: wantBalance{pv: opt(5000), issues: []DeviceIssue{{"m", IssueUnreachable}}},
		},
		{
			name: "meter timed out",
			cs: []contrib{inv("inv1", 5000),
				with(meterC("m", -1000), func(c *contrib) { c.state = StateOffline; c.lastErr = timeout })},
			want: wantBalance{pv: opt(5000), issues: []DeviceIssue{{"m", IssueTimedOut}}},
		},
		{
			name: "stale meter: values used, named",
			cs:   []contrib{inv("inv1", 5000), with(meterC("m", -1000), func(c *contrib) { c.state = StateStale })},
			want: wantBalance{pv: opt(5000), feed: opt(1000), cons: opt(0), total: opt(4000), self: opt(4000), direct: opt(4000),
				supply: opt(4000), autarky: opt(1), selfRate: opt(0.8), issues: []DeviceIssue{{"m", IssueStale}}},
		},
		{
			name: "never-read inverter: partial PV, named NoData",
			cs: []contrib{inv("inv1", 5000), with(inv("inv2", 0), func(c *contrib) { c.state = StateUnknown; c.everOK = false; c.hasPV = false }),
				meterC("m", 0)},
			want: wantBalance{pv: opt(5000), feed: opt(0), cons: opt(0), total: opt(5000), self: opt(5000), direct: opt(5000),
				supply: opt(5000), autarky: opt(1), selfRate: opt(1), issues: []DeviceIssue{{"inv2", IssueNoData}}},
		},
		{
			name: "battery offline: battery fields and totals absent",
			cs: []contrib{inv("inv1", 3000), meterC("m", -1000),
				with(batC("bat", -2000, 50, 0), func(c *contrib) { c.state = StateOffline })},
			want: wantBalance{pv: opt(3000), feed: opt(1000), cons: opt(0), issues: []DeviceIssue{{"bat", IssueUnreachable}}},
		},
		{
			name: "two batteries: SoC weighted by capacity",
			cs:   []contrib{meterC("m", 0), batC("b1", 1000, 80, 15000), batC("b2", -1000, 20, 5000)},
			want: wantBalance{feed: opt(0), cons: opt(0), cha: opt(1000), dis: opt(1000), soc: opt(65), total: opt(0), supply: opt(0)},
		},
		{
			name: "two batteries, one rating unknown: plain mean",
			cs:   []contrib{meterC("m", 0), batC("b1", 0, 80, 15000), batC("b2", 0, 20, 0)},
			want: wantBalance{feed: opt(0), cons: opt(0), cha: opt(0), dis: opt(0), soc: opt(50), total: opt(0), supply: opt(0)},
		},
		{
			name: "grid-only plant: no PV fields",
			cs:   []contrib{meterC("m", 900)},
			want: wantBalance{feed: opt(0), cons: opt(900), total: opt(900), supply: opt(0), autarky: opt(0)},
		},
		{
			name: "no meter: only PV",
			cs:   []contrib{inv("inv1", 2500)},
			want: wantBalance{pv: opt(2500)},
		},
		{
			name: "two meters are summed",
			cs:   []contrib{inv("inv1", 3000), meterC("m1", -1000), meterC("m2", 500)},
			want: wantBalance{pv: opt(3000), feed: opt(1000), cons: opt(500), total: opt(2500), self: opt(2000), direct: opt(2000),
				supply: opt(2000), autarky: opt(0.8), selfRate: opt(2000.0 / 3000)},
		},
		{
			name: "battery charging from the grid: direct consumption 0",
			cs:   []contrib{inv("inv1", 0), meterC("m", 3000), batC("bat", -2000, 10, 0)},
			want: wantBalance{pv: opt(0), feed: opt(0), cons: opt(3000), cha: opt(2000), dis: opt(0), soc: opt(10),
				total: opt(1000), self: opt(0), direct: opt(0), supply: opt(0), autarky: opt(0)},
		},
		{
			name: "inconsistent readings: consumption clamped at 0",
			cs:   []contrib{inv("inv1", 1000), meterC("m", -1500)},
			want: wantBalance{pv: opt(1000), feed: opt(1500), cons: opt(0), total: opt(0), self: opt(0), direct: opt(0), supply: opt(0), selfRate: opt(0)},
		},
		{
			name: "empty plant",
			cs:   nil,
			want: wantBalance{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := computeBalance(tt.cs)
			check := func(name string, got, want *float64) {
				t.Helper()
				switch {
				case got == nil && want == nil:
				case got == nil:
					t.Errorf("%s absent, want %v", name, *want)
				case want == nil:
					t.Errorf("%s = %v, want absent", name, *got)
				case math.Abs(*got-*want) > 1e-9:
					t.Errorf("%s = %v, want %v", name, *got, *want)
				}
			}
			w := tt.want
			check("pvGeneration", b.PVGenerationW, w.pv)
			check("totalGeneration", b.TotalGenerationW, w.pv)
			check("gridFeedIn", b.GridFeedInW, w.feed)
			check("gridConsumption", b.GridConsumptionW, w.cons)
			check("batteryCharging", b.BatteryChargingW, w.cha)
			check("batteryDischarging", b.BatteryDischargingW, w.dis)
			check("batteryStateOfCharge", b.BatteryStateOfChargePct, w.soc)
			check("totalConsumption", b.TotalConsumptionW, w.total)
			check("selfConsumption", b.SelfConsumptionW, w.self)
			check("directConsumption", b.DirectConsumptionW, w.direct)
			check("selfSupply", b.SelfSupplyW, w.supply)
			check("autarkyRate", b.AutarkyRate, w.autarky)
			check("selfConsumptionRate", b.SelfConsumptionRate, w.selfRate)
			var issues []DeviceIssue
			if b.Error != nil {
				issues = b.Error.Devices
				if b.Error.Code != DataErrorCode || b.Error.Message == "" {
					t.Errorf("error %+v", b.Error)
				}
			}
			if !slices.Equal(issues, w.issues) {
				t.Errorf("issues = %v, want %v", issues, w.issues)
			}
			for _, r := range []*float64{b.AutarkyRate, b.SelfConsumptionRate} {
				if r != nil && (*r < 0 || *r > 1) {
					t.Errorf("rate %v outside 0..1", *r)
				}
			}
			if b.TotalConsumptionW != nil && *b.TotalConsumptionW > 0 {
				checkIdentity(t, b)
			}
		})
	}
}

// checkIdentity checks PV + gridConsumption + batteryDischarging ==
// totalConsumption + gridFeedIn + batteryCharging within 1 W.
func checkIdentity(t *testing.T, b Balance) {
	t.Helper()
	v := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	in := v(b.PVGenerationW) + v(b.GridConsumptionW) + v(b.BatteryDischargingW)
	out := v(b.TotalConsumptionW) + v(b.GridFeedInW) + v(b.BatteryChargingW)
	if math.Abs(in-out) > 1 {
		t.Errorf("identity: PV %v + grid %v + discharge %v = %v, consumption %v + feed-in %v + charge %v = %v",
			v(b.PVGenerationW), v(b.GridConsumptionW), v(b.BatteryDischargingW), in,
			v(b.TotalConsumptionW), v(b.GridFeedInW), v(b.BatteryChargingW), out)
	}
}

func TestEnergyMix(t *testing.T) {
	tests := []struct {
		name               string
		cs                 []contrib
		pv, bat, grid, tot *float64
	}{
		{"evening: battery and grid", []contrib{inv("i", 0), meterC("m", 250), batC("b", 750, 30, 0)}, opt(0), opt(0.75), opt(0.25), opt(1000)},
		{"noon: all PV", []contrib{inv("i", 5000), meterC("m", -3000), batC("b", -1000, 30, 0)}, opt(1), opt(0), opt(0), opt(1000)},
		{"no battery: no battery rate", []contrib{inv("i", 600), meterC("m", 400)}, opt(0.6), nil, opt(0.4), opt(1000)},
		{"no PV: no PV rate", []contrib{meterC("m", 400)}, nil, nil, opt(1), opt(400)},
		{"no consumption: rates absent", []contrib{inv("i", 0), meterC("m", 0)}, nil, nil, nil, opt(0)},
		{"no meter: nothing", []contrib{inv("i", 100)}, nil, nil, nil, nil},
	}
	for _, tt := range tests {
		m := mixOf(computeBalance(tt.cs))
		for _, f := range []struct {
			name      string
			got, want *float64
		}{
			{"pvConsumptionRate", m.PVConsumptionRate, tt.pv},
			{"batteryConsumptionRate", m.BatteryConsumptionRate, tt.bat},
			{"gridConsumptionRate", m.GridConsumptionRate, tt.grid},
			{"totalConsumption", m.TotalConsumptionW, tt.tot},
		} {
			if (f.got == nil) != (f.want == nil) || f.got != nil && math.Abs(*f.got-*f.want) > 1e-9 {
				t.Errorf("%s: %s = %v, want %v", tt.name, f.name, deref(f.got), deref(f.want))
			}
		}
		if m.PVConsumptionRate != nil || m.GridConsumptionRate != nil {
			sum := deref0(m.PVConsumptionRate) + deref0(m.BatteryConsumptionRate) + deref0(m.GridConsumptionRate)
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("%s: rates sum to %v", tt.name, sum)
			}
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return "absent"
	}
	return *p
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestBalanceJSON checks the JSON shape: API names, absent fields omitted
// (not null, not 0), a zero that exists kept.
func TestBalanceJSON(t *testing.T) {
	b := computeBalance([]contrib{inv("inv1", 0), meterC("m", 300)})
	js, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(js)
	for _, want := range []string{`"pvGeneration":0`, `"gridConsumption":300`, `"gridFeedIn":0`, `"totalConsumption":300`, `"autarkyRate":0`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON %s lacks %s", s, want)
		}
	}
	for _, absent := range []string{"battery", "null", "selfConsumptionRate", "PlantID", "Time", "Error"} {
		if strings.Contains(s, absent) {
			t.Errorf("JSON %s contains %s", s, absent)
		}
	}
	e := &DataError{Code: DataErrorCode, Message: "m", Devices: []DeviceIssue{{"meter", IssueTimedOut}}}
	js, _ = json.Marshal(e)
	if want := `{"code":"DeviceValuesNotCurrent","message":"m","devices":[{"deviceId":"meter","reason":"TimedOut"}]}`; string(js) != want {
		t.Errorf("error JSON %s, want %s", js, want)
	}
}
