package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"plantd/devices"

	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/store"
	"plantd/sunspec"
)

// TestDemoEnergy is the whole-system energy check of the store: it runs
// "plantd demo" with a fast simulated clock for PLANTD_DEMO_RUN (e.g. 5m;
// the test is skipped without it, it is too long for every run), reads the
// simulator's own energy counters over Modbus at the start and the end, and
// compares them with the Day, Month and Total energy of the database.
// The counters bracket the daemon's first and last poll: at --speed 288
// and a 250 ms interval one poll is 72 simulated seconds, the bound of the
// comparison's own error at each end.
func TestDemoEnergy(t *testing.T) {
	run, err := time.ParseDuration(os.Getenv("PLANTD_DEMO_RUN"))
	if err != nil {
		t.Skip("set PLANTD_DEMO_RUN=5m to run plantd demo that long and check its stored energy")
	}
	db := filepath.Join(t.TempDir(), "demo.db")
	demo := proctest.Start(t, exec.Command(binPath, "demo", "--interval", "250ms", "--speed", "288", "--listen", "127.0.0.1:0", "--db", db))
	// The device list ("  inv1   inverter (SunSpec 1xx models) ADDR unit
	// 1"), waited for up to the line the banner prints after it.
	addrs := map[string]string{}
	for _, l := range strings.Split(demo.WaitStdout(regexp.MustCompile(`^simulated clock: `), 10*time.Second), "\n") {
		f := strings.Fields(l)
		if n := len(f); n >= 4 && f[n-2] == "unit" && strings.HasPrefix(f[n-3], "127.0.0.1:") {
			addrs[f[0]] = f[n-3]
		}
	}
	if len(addrs) != 5 {
		t.Fatalf("plantd demo listed %v, want 5 devices; stdout:\n%s", addrs, demo.Stdout.String())
	}
	pool := modbus.NewPool(nil)
	defer pool.Close()
	type counter struct {
		dev, field string
		model      uint16
		point      string
	}
	counters := []counter{
		{"inv1", "pv", 103, "WH"}, {"inv2", "pv", 701, "TotWhInj"},
		{"meter", "gridConsumption", 203, "TotWhImp"}, {"meter", "gridFeedIn", 203, "TotWhExp"},
	}
	read := func() map[string]float64 {
		out := map[string]float64{}
		for _, c := range counters {
			cl := pool.Endpoint(modbus.EndpointConfig{Address: addrs[c.dev]}).Unit(1, time.Second)
			d, err := devices.Discover(t.Context(), cl)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := d.Ref(c.model)
			plan, _ := devices.NewReadPlan(d, []sunspec.ModelRef{ref})
			insts, err := plan.Read(t.Context(), cl)
			if err != nil {
				t.Fatal(err)
			}
			v, err := insts[0].Float(c.point)
			if err != nil {
				t.Fatal(err)
			}
			out[c.field] += v
		}
		return out
	}
	before := read()
	time.Sleep(run)
	after := read()
	demo.Signal(os.Interrupt)
	if err := demo.Wait(30 * time.Second); err != nil {
		t.Fatalf("plantd demo: %v", err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	st, err := store.Open(context.Background(), store.Config{Path: db, Plants: []store.PlantInfo{{ID: "demo", Location: berlin}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := func(p plant.Period, date time.Time) map[string]float64 {
		res, err := st.QuerySet(t.Context(), plant.SetQuery{PlantID: "demo", SetType: plant.SetEnergyBalance, Period: p, Date: date, WithTotal: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total == nil {
			return map[string]float64{}
		}
		return res.Total.Values
	}
	total := q(plant.PeriodTotal, time.Time{})
	// Day totals of every local day the run touched, and the months.
	days, months := map[string]float64{}, map[string]float64{}
	seenMonth := map[string]bool{}
	for d := time.Now().In(berlin).AddDate(0, 0, -1); d.Before(time.Now().Add(run*300).In(berlin).AddDate(0, 0, 2)); d = d.AddDate(0, 0, 1) {
		for k, v := range q(plant.PeriodDay, d) {
			days[k] += v
		}
		if m := d.Format("2006-01"); !seenMonth[m] {
			seenMonth[m] = true
			for k, v := range q(plant.PeriodMonth, d) {
				months[k] += v
			}
		}
	}
	for field, src := range map[string]string{"pvGeneration": "pv", "gridConsumption": "gridConsumption", "gridFeedIn": "gridFeedIn"} {
		want := after[src] - before[src]
		for name, got := range map[string]float64{"Total": total[field], "sum of Days": days[field], "sum of Months": months[field]} {
			dev := (got - want) / want * 100
			t.Logf("%-15s %-13s stored %10.0f Wh, simulator counters %10.0f Wh: %+.3f %%", field, name, got, want, dev)
			if math.Abs(dev) > 0.5 {
				t.Errorf("%s %s deviates %.3f %% from the simulator's counters", field, name, dev)
			}
		}
	}
}
