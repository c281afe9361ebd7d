package channels

import (
	"errors"
	"fmt"
	"math"
	. "plantd/plant"
	"sync"
	"testing"
	"time"

	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sunspec"
)

var berlin = mustLoc("Europe/Berlin")

func mustLoc(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func testPlant() ([]Plant, []DeviceInfo) {
	plants := []Plant{{ID: "7190000", Name: "Demo", Location: berlin}, {ID: "2", Name: "Other"}}
	devs := []DeviceInfo{
		{ID: "gw", PlantID: "7190000", Name: "plantd", Kind: kind.Gateway},
		{ID: "inv1", PlantID: "7190000", Name: "Inverter 1", Kind: kind.Inverter},
		{ID: "meter", PlantID: "7190000", Name: "Grid meter", Kind: kind.Meter},
		{ID: "bat", PlantID: "7190000", Name: "Battery", Kind: kind.Battery},
		{ID: "old", PlantID: "7190000", Name: "Old inverter", Kind: kind.Inverter, DeactivatedAt: t0.Add(-time.Hour)},
		{ID: "inv1", PlantID: "2", Name: "duplicate id: ignored", Kind: kind.Inverter},
	}
	return plants, devs
}

func TestLiveApply(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, fixedClock(t0.Add(time.Minute)))
	info := &sunspec.Device{Manufacturer: "plantd", Model: "SIM-INV-10K", Serial: "SIM-inv1", RatedPowerW: 10000}

	// Before any sample: no values, NotAvailable, Unreachable.
	d, ok := l.Device("inv1")
	if !ok {
		t.Fatal("inv1 unknown")
	}
	if d.Health != HealthNotAvailable || d.Comm.Status != CommUnreachable || len(d.Readings) != 0 || !d.LastUpdate.IsZero() {
		t.Errorf("fresh device: %+v", d)
	}

	// A successful poll.
	s := sample("inv1", t0, mk(t, 103, nil, val("W", 4000), val("WH", 1000), raw("St", 4)))
	s.Nameplate, s.Discovered = NameplateOf(info), info
	l.Apply(s)
	d, _ = l.Device("inv1")
	if w, ok := d.Value(ActivePower); !ok || w != 4000 {
		t.Errorf("activePower = %v, %v", w, ok)
	}
	if d.Health != HealthOk || d.Comm.Status != CommOk || !d.LastUpdate.Equal(t0) || d.Discovered != info {
		t.Errorf("after success: health %s comm %s update %v disc %v", d.Health, d.Comm.Status, d.LastUpdate, d.Discovered)
	}
	if d.Comm.SuccessRate != 1 || d.Comm.Polls != 1 || d.Info.Name != "Inverter 1" {
		t.Errorf("comm %+v", d.Comm)
	}

	// A failed poll: values stay, state stale, error kept.
	errTimeout := fmt.Errorf("read plan: %w", &modbus.Error{Op: modbus.OpRead, Endpoint: "x", Unit: 1, Err: modbus.ErrTimeout})
	l.Apply(Sample{Device: "inv1", Time: t0.Add(10 * time.Second), Err: errTimeout, State: StateStale})
	d, _ = l.Device("inv1")
	if w, ok := d.Value(ActivePower); !ok || w != 4000 {
		t.Errorf("stale activePower = %v, %v", w, ok)
	}
	if d.Health != HealthWarning || d.Comm.Status != CommPartial || !d.LastUpdate.Equal(t0) {
		t.Errorf("stale: health %s comm %s update %v", d.Health, d.Comm.Status, d.LastUpdate)
	}
	if !errors.Is(d.Comm.LastError, modbus.ErrTimeout) || !d.Comm.LastErrorTime.Equal(t0.Add(10*time.Second)) ||
		!d.Comm.LastPoll.Equal(t0.Add(10*time.Second)) || !d.Comm.LastContact.Equal(t0) {
		t.Errorf("stale comm %+v", d.Comm)
	}
	if d.Comm.SuccessRate != 0.5 || d.Comm.Polls != 2 {
		t.Errorf("rate %v over %d", d.Comm.SuccessRate, d.Comm.Polls)
	}

	// Offline after a timeout.
	l.Apply(Sample{Device: "inv1", Time: t0.Add(20 * time.Second), Err: errTimeout, State: StateOffline})
	d, _ = l.Device("inv1")
	if d.Health != HealthNotAvailable || d.Comm.Status != CommTimedOut {
		t.Errorf("offline: health %s comm %s", d.Health, d.Comm.Status)
	}

	// Back, asleep, W not implemented: the old W is gone.
	l.Apply(sample("inv1", t0.Add(30*time.Second), mk(t, 103, nil, raw("St", 2))))
	d, _ = l.Device("inv1")
	if _, ok := d.Value(ActivePower); ok {
		t.Error("activePower survived a sample without it")
	}
	if d.Health != HealthOff || d.HealthReason != "St SLEEPING" || d.Comm.Status != CommOk || d.Discovered != info {
		t.Errorf("asleep: health %s (%s) comm %s disc %v", d.Health, d.HealthReason, d.Comm.Status, d.Discovered)
	}
	if d.Comm.LastError == nil {
		t.Error("last error forgotten after recovery")
	}
	if math.Abs(d.Comm.SuccessRate-0.5) > 1e-9 || d.Comm.Polls != 4 {
		t.Errorf("rate %v over %d", d.Comm.SuccessRate, d.Comm.Polls)
	}

	// Samples without State: inferred from Err.
	l.Apply(stateless(sample("meter", t0, mk(t, 203, nil, val("W", 100)))))
	if d, _ := l.Device("meter"); d.Comm.State != StateOnline {
		t.Errorf("meter state %s, want online", d.Comm.State)
	}
	l.Apply(Sample{Device: "meter", Time: t0, Err: errors.New("connection refused")})
	if d, _ := l.Device("meter"); d.Comm.State != StateOffline || d.Comm.Status != CommUnreachable {
		t.Errorf("meter state %s status %s, want offline, Unreachable", d.Comm.State, d.Comm.Status)
	}

	// A sample without time takes the clock's.
	l.Apply(sample("bat", time.Time{}, mk(t, 802, nil, val("W", 100))))
	if d, _ := l.Device("bat"); !d.LastUpdate.Equal(t0.Add(time.Minute)) {
		t.Errorf("bat update %v", d.LastUpdate)
	}

	// Unknown device: dropped and counted.
	l.Apply(sample("nope", t0))
	if n := l.Dropped(); n != 1 {
		t.Errorf("dropped = %d", n)
	}
	if _, ok := l.Device("nope"); ok {
		t.Error("Device(nope) found")
	}
}

func TestLiveSuccessRateWindow(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, nil)
	in := mk(t, 103, nil, val("W", 1))
	for i := 0; i < 100; i++ {
		l.Apply(sample("inv1", t0.Add(time.Duration(i)*time.Second), in))
	}
	for i := 0; i < 16; i++ {
		l.Apply(Sample{Device: "inv1", Time: t0, Err: errors.New("reset"), State: StateOnline})
	}
	d, _ := l.Device("inv1")
	if d.Comm.Polls != 64 || d.Comm.SuccessRate != 0.75 {
		t.Errorf("rate %v over %d polls, want 0.75 over 64", d.Comm.SuccessRate, d.Comm.Polls)
	}
	if d.Comm.Status != CommPartial {
		t.Errorf("status %s, want Partial", d.Comm.Status)
	}
}

func TestLiveDevices(t *testing.T) {
	plants, devs := testPlant()
	now := t0.Add(5 * time.Minute)
	l := NewLive(plants, devs, fixedClock(now))
	if _, err := l.Devices("nope"); !errors.Is(err, ErrUnknownPlant) {
		t.Errorf("Devices(nope) err = %v", err)
	}
	list, err := l.Devices("7190000")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list {
		ids = append(ids, d.Info.ID)
	}
	if fmt.Sprint(ids) != "[gw inv1 meter bat old]" {
		t.Errorf("devices %v", ids)
	}
	want := map[string]Health{"gw": HealthOk, "inv1": HealthNotAvailable, "meter": HealthNotAvailable, "bat": HealthNotAvailable, "old": HealthOff}
	for _, d := range list {
		if d.Health != want[d.Info.ID] {
			t.Errorf("%s health %s, want %s", d.Info.ID, d.Health, want[d.Info.ID])
		}
		if d.Health == "" {
			t.Errorf("%s: empty health", d.Info.ID)
		}
	}
	if gw := list[0]; !gw.LastUpdate.Equal(now) || gw.Comm.Status != CommOk || gw.Info.Type() != kind.TypeMonitoringAndControl {
		t.Errorf("gateway %+v", gw)
	}
	if other, _ := l.Devices("2"); len(other) != 0 {
		t.Errorf("plant 2 has %d devices, want 0 (duplicate id ignored)", len(other))
	}
	if p, ok := l.Plant("7190000"); !ok || p.Timezone() != "Europe/Berlin" {
		t.Errorf("Plant = %+v, %v", p, ok)
	}
	if p, _ := l.Plant("2"); p.Timezone() != "UTC" {
		t.Errorf("plant without location: %q", p.Timezone())
	}
	if len(l.Plants()) != 2 {
		t.Errorf("Plants() = %v", l.Plants())
	}
	if _, err := l.EnergyBalance("nope"); !errors.Is(err, ErrUnknownPlant) {
		t.Errorf("EnergyBalance(nope) err = %v", err)
	}
	if _, err := l.EnergyMix("nope"); !errors.Is(err, ErrUnknownPlant) {
		t.Errorf("EnergyMix(nope) err = %v", err)
	}
}

// TestLiveReadings checks the read side's order and indexed inputs.
func TestLiveReadings(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, nil)
	mppt := mk(t, 160, map[string]int{"module": 2}, raw("N", 2))
	setGroup(t, mppt, "module", 0, val("DCW", 5000), val("DCV", 600))
	setGroup(t, mppt, "module", 1, val("DCW", 4000), val("DCV", 590))
	l.Apply(sample("inv1", t0, mppt, mk(t, 103, nil, val("W", 8800), val("Hz", 50))))
	d, _ := l.Device("inv1")
	var got []string
	for _, r := range d.Readings {
		got = append(got, fmt.Sprintf("%s%s=%v", r.Channel, idx(r.Index), r.Value))
	}
	want := "[activePower=8800 gridFrequency=50 dcPowerInput[A]=5000 dcPowerInput[B]=4000 dcVoltageInput[A]=600 dcVoltageInput[B]=590 pvGeneration=8800]"
	if fmt.Sprint(got) != want {
		t.Errorf("readings\n got %v\nwant %s", got, want)
	}
	if in := d.Inputs(DCPowerInput); len(in) != 2 || in[1].Value != 4000 {
		t.Errorf("Inputs(dcPowerInput) = %v", in)
	}
}

func idx(i int) string {
	if i == 0 {
		return ""
	}
	return "[" + IndexLabel(i) + "]"
}

// TestLiveEnergyBalance feeds Samples through Apply and checks the balance
// and its error part.
func TestLiveEnergyBalance(t *testing.T) {
	plants, devs := testPlant()
	now := t0.Add(time.Minute)
	l := NewLive(plants, devs, fixedClock(now))
	l.Apply(sample("inv1", t0, mk(t, 103, nil, val("W", 6000), raw("St", 4))))
	l.Apply(sample("meter", t0, mk(t, 203, nil, val("W", -2500))))
	l.Apply(withInfo(sample("bat", t0, mk(t, 802, nil, val("W", -2000), val("SoC", 45), raw("State", 3))), &sunspec.Device{RatedEnergyWh: 10000}))
	// The deactivated inverter's samples never count.
	l.Apply(sample("old", t0, mk(t, 103, nil, val("W", 9999))))

	b, err := l.EnergyBalance("7190000")
	if err != nil {
		t.Fatal(err)
	}
	if b.PlantID != "7190000" || !b.Time.Equal(now) || b.Error != nil {
		t.Errorf("balance head %s %v %v", b.PlantID, b.Time, b.Error)
	}
	if *b.PVGenerationW != 6000 || *b.GridFeedInW != 2500 || *b.GridConsumptionW != 0 || *b.BatteryChargingW != 2000 ||
		*b.BatteryDischargingW != 0 || *b.BatteryStateOfChargePct != 45 || *b.TotalConsumptionW != 1500 {
		t.Errorf("balance %+v", b)
	}
	checkIdentity(t, b)
	mix, err := l.EnergyMix("7190000")
	if err != nil || *mix.PVConsumptionRate != 1 || *mix.TotalConsumptionW != 1500 {
		t.Errorf("mix %+v, %v", mix, err)
	}

	// The meter fails: stale first (values used), then offline.
	l.Apply(Sample{Device: "meter", Time: t0.Add(10 * time.Second), Err: errors.New("reset"), State: StateStale})
	b, _ = l.EnergyBalance("7190000")
	if b.Error == nil || len(b.Error.Devices) != 1 || b.Error.Devices[0] != (DeviceIssue{DeviceID: "meter", Reason: IssueStale}) || b.GridFeedInW == nil {
		t.Errorf("stale meter: error %+v, feed-in %v", b.Error, b.GridFeedInW)
	}
	l.Apply(Sample{Device: "meter", Time: t0.Add(20 * time.Second), Err: errors.New("reset"), State: StateOffline})
	b, _ = l.EnergyBalance("7190000")
	if b.Error == nil || len(b.Error.Devices) != 1 || b.Error.Devices[0] != (DeviceIssue{DeviceID: "meter", Reason: IssueUnreachable}) {
		t.Errorf("offline meter: error %+v", b.Error)
	}
	if b.GridFeedInW != nil || b.TotalConsumptionW != nil || b.PVGenerationW == nil {
		t.Errorf("offline meter: grid %v total %v pv %v", b.GridFeedInW, b.TotalConsumptionW, b.PVGenerationW)
	}
	mix, _ = l.EnergyMix("7190000")
	if mix.Error == nil || mix.TotalConsumptionW != nil {
		t.Errorf("offline meter mix %+v", mix)
	}
}

// TestLiveConcurrent runs Apply and every reader at once (go test -race).
func TestLiveConcurrent(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, nil)
	insts := map[string][]*sunspec.Instance{
		"inv1":  {mk(t, 103, nil, val("W", 3000))},
		"meter": {mk(t, 203, nil, val("W", -1000))},
		"bat":   {mk(t, 802, nil, val("W", -500), val("SoC", 50))},
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for id, models := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				s := sample(id, t0.Add(time.Duration(i)*time.Second), models...)
				if i%7 == 0 {
					s = Sample{Device: id, Time: s.Time, Err: errors.New("x"), State: StateStale}
				}
				l.Apply(s)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.EnergyBalance("7190000"); err != nil {
				t.Error(err)
				return
			}
			if _, err := l.Devices("7190000"); err != nil {
				t.Error(err)
				return
			}
			l.Device("inv1")
		}
	}()
	// Wait for the writers (the first three goroutines) by polling the
	// counters, then stop the reader.
	deadline := time.Now().Add(10 * time.Second)
	for {
		done := true
		for id := range insts {
			if d, _ := l.Device(id); d.Comm.Polls < 64 {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	b, _ := l.EnergyBalance("7190000")
	if b.PVGenerationW == nil || *b.PVGenerationW != 3000 {
		t.Errorf("final balance %+v", b)
	}
}

// BenchmarkApply measures the per-poll cost of a poll's way into the live
// state for a classic inverter (103 + 120..123 + 160 with two MPPTs) and a
// meter: the device layer's mapping of the models (Device.Fill) and
// Live.Apply, the work plant.Live.Apply did alone while plant mapped
// SunSpec itself (compare with the BenchmarkApply of plant before).
func BenchmarkApply(b *testing.B) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, nil)
	mppt := mk(b, 160, map[string]int{"module": 2}, raw("N", 2))
	setGroup(b, mppt, "module", 0, val("DCW", 5000), val("DCV", 600))
	setGroup(b, mppt, "module", 1, val("DCW", 4000), val("DCV", 590))
	inverter := []*sunspec.Instance{
		mk(b, 103, nil, val("W", 8800), val("VA", 8850), val("VAr", 10), val("Hz", 50), val("PhVphA", 230), val("PhVphB", 231),
			val("PhVphC", 229), val("AphA", 12), val("AphB", 12), val("AphC", 12), val("WH", 1e6), val("DCW", 9000), raw("St", 4), raw("Evt1", 0)),
		mk(b, 120, nil), mk(b, 121, nil), mk(b, 122, nil, val("Ris", 5000)), mk(b, 123, nil), mppt}
	meter := []*sunspec.Instance{mk(b, 203, nil, val("W", -3000), val("WphA", -1000), val("TotWhImp", 1e6), val("TotWhExp", 2e6), raw("Evt", 0))}
	for _, bc := range []struct {
		name, id string
		kind     kind.Kind
		models   []*sunspec.Instance
	}{
		{"inverter", "inv1", kind.Inverter, inverter},
		{"meter", "meter", kind.Meter, meter},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dev := NewDevice(&sunspec.Device{Kind: bc.kind})
			s := Sample{Device: bc.id, Time: t0, State: StateOnline}
			dev.Fill(&s, bc.models)
			l.Apply(s) // grow the buffers once
			b.ReportAllocs()
			for b.Loop() {
				s := Sample{Device: bc.id, Time: t0, State: StateOnline}
				dev.Fill(&s, bc.models)
				l.Apply(s)
			}
		})
	}
	b.Run("failure", func(b *testing.B) {
		s := Sample{Device: "inv1", Time: t0, Err: errors.New("x"), State: StateStale}
		b.ReportAllocs()
		for b.Loop() {
			l.Apply(s)
		}
	})
}

// TestLiveSetDevices replaces the device list: an unchanged device keeps
// its values and counters, a removed one is gone (its samples dropped), an
// added one is listed and takes samples, a changed one starts anew; reads
// and Apply run concurrently with the replacement.
func TestLiveSetDevices(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, nil)
	in := mk(t, 103, nil, val("W", 1500))
	l.Apply(sample("inv1", t0, in))
	l.Apply(sample("inv1", t0.Add(time.Second), in))
	l.Apply(sample("meter", t0, mk(t, 203, nil, val("W", -100))))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l.Apply(sample("inv1", t0.Add(time.Duration(i)*time.Second), in))
			l.Devices("7190000")
			l.EnergyBalance("7190000")
		}
	}()
	next := []DeviceInfo{
		devs[0], devs[1], // gw, inv1 unchanged
		{ID: "meter", PlantID: "7190000", Name: "Grid meter (new name)", Kind: kind.Meter},
		{ID: "inv2", PlantID: "7190000", Name: "Inverter 2", Kind: kind.Inverter},
	} // bat and old removed
	l.SetDevices(next)
	close(stop)
	wg.Wait()

	if d, ok := l.Device("inv1"); !ok || len(d.Readings) == 0 || d.Comm.Polls < 2 {
		t.Errorf("inv1 lost its state: ok %v, %d readings, %d polls", ok, len(d.Readings), d.Comm.Polls)
	}
	if d, ok := l.Device("meter"); !ok || d.Info.Name != "Grid meter (new name)" || d.Comm.Polls != 0 {
		t.Errorf("meter not renewed: ok %v, name %q, %d polls", ok, d.Info.Name, d.Comm.Polls)
	}
	if _, ok := l.Device("bat"); ok {
		t.Error("bat still known after its removal")
	}
	dropped := l.Dropped()
	l.Apply(sample("bat", t0, mk(t, 802, nil, val("W", -500))))
	if l.Dropped() != dropped+1 {
		t.Error("a sample of a removed device was not dropped")
	}
	l.Apply(sample("inv2", t0, mk(t, 103, nil, val("W", 700))))
	list, _ := l.Devices("7190000")
	var ids []string
	for _, d := range list {
		ids = append(ids, d.Info.ID)
	}
	if got := fmt.Sprint(ids); got != "[gw inv1 meter inv2]" {
		t.Errorf("devices %s, want [gw inv1 meter inv2]", got)
	}
	if d, _ := l.Device("inv2"); len(d.Readings) == 0 {
		t.Error("inv2 took no values")
	}
}

// TestApplyEvents: Apply reports each change of a device's communication
// state (the first poll included) and each change of health of a device
// that stays online, with its log entry, and nothing for a poll that
// changes neither; Restarted makes the next sample a first one again.
func TestApplyEvents(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, fixedClock(t0))
	info := &sunspec.Device{Manufacturer: "plantd", Model: "SIM-INV-10K"}
	plate := NameplateOf(info)
	ok := func(st uint64) Sample {
		s := sample("inv1", t0, mk(t, 103, nil, val("W", 4000), raw("St", st)))
		s.Nameplate, s.Discovered, s.State = plate, info, StateOnline
		return s
	}
	timeout := fmt.Errorf("read: %w", &modbus.Error{Op: modbus.OpRead, Endpoint: "x", Unit: 1, Err: modbus.ErrTimeout})
	type entry struct{ level, code, msg string }
	steps := []struct {
		name string
		s    Sample
		want []entry
	}{
		{"first poll", ok(4), []entry{{"info", "DeviceOnline", "device inv1 online (plantd SIM-INV-10K)"}}},
		{"same again", ok(4), nil},
		{"fault", ok(7), []entry{{"error", "DeviceHealthError", "device inv1 health Error: St FAULT"}}},
		{"fault again", ok(7), nil},
		{"stale", Sample{Device: "inv1", Err: timeout, State: StateStale}, []entry{{"warning", "DeviceStale", "device inv1 stale: " + timeout.Error()}}},
		{"still stale", Sample{Device: "inv1", Err: timeout, State: StateStale}, nil},
		{"offline", Sample{Device: "inv1", Err: timeout, State: StateOffline}, []entry{{"error", "DeviceOffline", "device inv1 offline: " + timeout.Error()}}},
		// Back online with another health: the change of state only.
		{"back", ok(4), []entry{{"info", "DeviceOnline", "device inv1 online (plantd SIM-INV-10K)"}}},
		{"unknown device", Sample{Device: "nope", State: StateOnline}, nil},
	}
	for _, st := range steps {
		var got []entry
		for _, e := range l.Apply(st.s) {
			if e.DeviceID != "inv1" || e.PlantID != "7190000" {
				t.Errorf("%s: event of %s/%s", st.name, e.PlantID, e.DeviceID)
			}
			got = append(got, entry{e.Level(), e.Code(), e.Message()})
		}
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("%s: events %v, want %v", st.name, got, st.want)
		}
	}
	l.Restarted("inv1", "nope")
	if es := l.Apply(ok(4)); len(es) != 1 || es[0].Code() != "DeviceOnline" || es[0].Prev != StateUnknown {
		t.Errorf("after Restarted: %+v", es)
	}
	if es := l.Apply(ok(4)); es != nil {
		t.Errorf("the poll after: %+v", es)
	}
}

// TestNameplate: a device's discovery reaches the API as its Nameplate,
// built once per discovery.
func TestNameplate(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, fixedClock(t0))
	if d, _ := l.Device("inv1"); d.Nameplate != nil {
		t.Fatalf("before discovery: %+v", d.Nameplate)
	}
	info := &sunspec.Device{Manufacturer: "plantd", Model: "SIM-DER", Serial: "S1", Version: "1.2", Platform: sunspec.PlatformDER,
		Models: []sunspec.ModelRef{{ID: 1}, {ID: 701}, {ID: 704}}, Capabilities: []sunspec.Capability{sunspec.CapPowerFactor, sunspec.CapPowerLimit},
		RatedPowerW: 8000}
	s := sample("inv1", t0, mk(t, 103, nil, val("W", 4000)))
	s.Nameplate, s.Discovered = NameplateOf(info), info
	l.Apply(s)
	d, _ := l.Device("inv1")
	n := d.Nameplate
	if n == nil || n.Manufacturer != "plantd" || n.Model != "SIM-DER" || n.Serial != "S1" || n.Version != "1.2" || !n.DER() ||
		fmt.Sprint(n.Models) != "[1 701 704]" || n.RatedPowerW != 8000 || !n.Controllable {
		t.Fatalf("nameplate %+v", n)
	}
	l.Apply(s)
	if d, _ := l.Device("inv1"); d.Nameplate != n {
		t.Error("the same discovery gave a new nameplate")
	}
	info2 := *info
	info2.Platform, info2.Capabilities = sunspec.PlatformClassic, []sunspec.Capability{sunspec.CapMPPT}
	s.Nameplate, s.Discovered = NameplateOf(&info2), &info2
	if es := l.Apply(s); len(es) != 0 {
		t.Errorf("events %+v", es)
	}
	if d, _ := l.Device("inv1"); d.Nameplate == n || d.Nameplate.DER() || d.Nameplate.Controllable {
		t.Errorf("after a new discovery: %+v", d.Nameplate)
	}
}
