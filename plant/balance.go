package plant

import (
	"fmt"
	"math"
	"plantd/plant/kind"
	"time"
)

// Balance is a plant's live energy balance, in W (DESIGN §4 energy balance
// fields). A nil field does not exist for the plant now and is omitted from
// the API, never sent as 0: a plant without a battery has no battery
// fields, and a value no device could give is absent. Rates are 0..1.
type Balance struct {
	PlantID string    `json:"-"`
	Time    time.Time `json:"-"` // when the balance was computed

	PVGenerationW       *float64 `json:"pvGeneration,omitempty"`
	GridFeedInW         *float64 `json:"gridFeedIn,omitempty"`
	GridConsumptionW    *float64 `json:"gridConsumption,omitempty"`
	DirectConsumptionW  *float64 `json:"directConsumption,omitempty"`
	SelfConsumptionW    *float64 `json:"selfConsumption,omitempty"`
	SelfSupplyW         *float64 `json:"selfSupply,omitempty"`
	TotalConsumptionW   *float64 `json:"totalConsumption,omitempty"`
	TotalGenerationW    *float64 `json:"totalGeneration,omitempty"`
	BatteryChargingW    *float64 `json:"batteryCharging,omitempty"`
	BatteryDischargingW *float64 `json:"batteryDischarging,omitempty"`
	// BatteryStateOfChargePct is the plant's SoC: the mean of its batteries
	// weighted by their rated energy (a plain mean when a rating is
	// unknown).
	BatteryStateOfChargePct *float64 `json:"batteryStateOfCharge,omitempty"`
	AutarkyRate             *float64 `json:"autarkyRate,omitempty"`
	SelfConsumptionRate     *float64 `json:"selfConsumptionRate,omitempty"`

	// Error names the devices behind a value that are stale or missing;
	// nil when every device contributed fresh values.
	Error *DataError `json:"-"`
}

// EnergyMix is a plant's live energy mix: which share of the consumption
// comes from PV directly, from the battery and from the grid (0..1, summing
// to 1), and the consumption itself in W.
type EnergyMix struct {
	PlantID string    `json:"-"`
	Time    time.Time `json:"-"`

	PVConsumptionRate      *float64 `json:"pvConsumptionRate,omitempty"`
	BatteryConsumptionRate *float64 `json:"batteryConsumptionRate,omitempty"`
	GridConsumptionRate    *float64 `json:"gridConsumptionRate,omitempty"`
	TotalConsumptionW      *float64 `json:"totalConsumption,omitempty"`

	Error *DataError `json:"-"`
}

// DataError is the error member of a live set: the devices whose values
// are stale or missing (DESIGN §4, modelled).
type DataError struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Devices []DeviceIssue `json:"devices"`
}

// Error implements error.
func (e *DataError) Error() string { return e.Code + ": " + e.Message }

// DeviceIssue names one device behind a live value and what is wrong.
type DeviceIssue struct {
	DeviceID string      `json:"deviceId"`
	Reason   IssueReason `json:"reason"`
}

// IssueReason is why a device's values are not current.
type IssueReason string

// The issue reasons.
const (
	// IssueStale: the last poll failed; the values used are from the poll
	// before (still fresh by the poller's rule).
	IssueStale IssueReason = "Stale"
	// IssueTimedOut and IssueUnreachable: the device is offline (its last
	// poll timed out, or failed otherwise); its values are not used.
	IssueTimedOut    IssueReason = "TimedOut"
	IssueUnreachable IssueReason = "Unreachable"
	// IssueNoData: the device was never read successfully.
	IssueNoData IssueReason = "NoData"
	// IssueNoValue: the device answers but does not give the value needed
	// (not implemented) while it says it is operating.
	IssueNoValue IssueReason = "NoValue"
)

// DataErrorCode is the Code of a DataError.
const DataErrorCode = "DeviceValuesNotCurrent"

// contrib is what one device gives to a plant's balance.
type contrib struct {
	id      string
	kind    kind.Kind
	state   CommState
	lastErr error
	everOK  bool
	off     bool // its operating state says off, sleeping or standby
	// values: PV, consumption, feed-in, charging, discharging, SoC
	pv, cons, feed, cha, dis, soc  float64
	hasPV, hasGrid, hasBat, hasSoC bool
	capacityWh                     float64
}

// contribs reads the balance inputs of a plant's active devices.
func (l *Live) contribs(plantID string) ([]contrib, error) {
	if _, ok := l.plantIx[plantID]; !ok {
		return nil, fmt.Errorf("live balance of plant %q: %w", plantID, ErrUnknownPlant)
	}
	var out []contrib
	for _, d := range l.idx.Load().byPlant[plantID] {
		if c, ok := d.contrib(); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// contrib reads d's balance inputs; ok is false for a device the balance
// leaves out. All under d's lock: a device configured without a kind has
// it set by its first answer (Live.update).
func (d *deviceState) contrib() (c contrib, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.info.Kind {
	case kind.Meter:
		if !d.info.GridMeter() {
			return c, false // a consumer's own meter: inside the consumption
		}
	case kind.Inverter, kind.Battery:
	case "":
		// Configured without a kind and not discovered yet: it may be any
		// of them, so it is named until it answers.
		if !d.lastOK.IsZero() {
			return c, false // read, yet of no kind the balance knows
		}
	default:
		return c, false
	}
	if !d.info.Active() {
		return c, false
	}
	c = contrib{
		id:      d.info.ID,
		kind:    d.info.Kind,
		state:   d.state,
		lastErr: d.lastErr,
		everOK:  !d.lastOK.IsZero(),
		off:     d.status.Op == OpOff,
	}
	v := &d.vals
	c.pv, c.hasPV = v.get(PVGeneration)
	var okC, okF bool
	c.cons, okC = v.get(GridConsumption)
	c.feed, okF = v.get(GridFeedIn)
	c.hasGrid = okC && okF
	var okCha, okDis bool
	c.cha, okCha = v.get(BatteryCharging)
	c.dis, okDis = v.get(BatteryDischarging)
	c.hasBat = okCha && okDis
	c.soc, c.hasSoC = v.get(BatteryStateOfCharge)
	if d.plate != nil {
		c.capacityWh = d.plate.RatedEnergyWh
	}
	return c, true
}

// EnergyBalance computes a plant's live energy balance from the cached
// values (see Balance and doc.go for the rules).
func (l *Live) EnergyBalance(plantID string) (Balance, error) {
	cs, err := l.contribs(plantID)
	if err != nil {
		return Balance{}, err
	}
	b := computeBalance(cs)
	b.PlantID, b.Time = plantID, l.now()
	return b, nil
}

// EnergyMix computes a plant's live energy mix.
func (l *Live) EnergyMix(plantID string) (EnergyMix, error) {
	cs, err := l.contribs(plantID)
	if err != nil {
		return EnergyMix{}, err
	}
	m := mixOf(computeBalance(cs))
	m.PlantID, m.Time = plantID, l.now()
	return m, nil
}

func ptr(v float64) *float64 { return &v }

// clamp bounds v to lo..hi.
func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// computeBalance is the pure balance rule.
//
// A device whose state is offline or that was never read gives nothing; a
// stale device gives its last values; both are named in Error. An inverter
// or battery that answers without the power value gives 0 when its
// operating state is off/sleeping/standby (a sleeping inverter at night
// often reports W as not implemented), else nothing (NoValue).
//
// Each basic field (pvGeneration, grid, battery) is present when at least
// one device of its role gave a value (the sum of those that did). The
// derived fields ([Flows.Derive]) need the grid and, for each role the
// plant has, that role's value; the rates follow from them:
//
//	autarkyRate       = selfSupply / totalConsumption (absent when consumption is 0)
//	selfConsumptionRate = selfConsumption / PV (absent when PV is 0)
//	totalGeneration   = PV (no other generators yet)
func computeBalance(cs []contrib) Balance {
	var b Balance
	var (
		f      Flows
		soc    socMean
		issues []DeviceIssue
	)
	issue := func(id string, r IssueReason) {
		for _, is := range issues {
			if is.DeviceID == id {
				return
			}
		}
		issues = append(issues, DeviceIssue{DeviceID: id, Reason: r})
	}
	for _, c := range cs {
		switch c.kind {
		case kind.Inverter:
			f.HasInverter = true
			f.HasBattery = f.HasBattery || c.hasBat // a hybrid inverter's battery
		case kind.Battery:
			f.HasBattery = true
		}
		switch {
		case c.state == StateOffline:
			r := IssueUnreachable
			if isTimeout(c.lastErr) {
				r = IssueTimedOut
			}
			issue(c.id, r)
			continue
		case c.state == StateUnknown || !c.everOK:
			issue(c.id, IssueNoData)
			continue
		case c.state == StateStale:
			issue(c.id, IssueStale)
		}
		switch c.kind {
		case kind.Inverter:
			switch {
			case c.hasPV:
				f.PV += c.pv
				f.PVOK = true
			case c.off:
				f.PVOK = true
			default:
				issue(c.id, IssueNoValue)
			}
			if c.hasBat {
				// A hybrid inverter's battery (a template's or 802's
				// charging and discharging channels): its pvGeneration is
				// the PV side, so the battery's flows count as a battery's.
				f.Charging += c.cha
				f.Discharging += c.dis
				f.BatteryOK = true
				if c.hasSoC {
					soc.add(c.soc, c.capacityWh)
				}
			}
		case kind.Meter:
			if c.hasGrid {
				f.GridConsumption += c.cons
				f.GridFeedIn += c.feed
				f.GridOK = true
			} else {
				issue(c.id, IssueNoValue)
			}
		case kind.Battery:
			switch {
			case c.hasBat:
				f.Charging += c.cha
				f.Discharging += c.dis
				f.BatteryOK = true
			case c.off:
				f.BatteryOK = true
			default:
				issue(c.id, IssueNoValue)
			}
			if c.hasSoC {
				soc.add(c.soc, c.capacityWh)
			}
		}
	}
	if f.PVOK {
		b.PVGenerationW = ptr(f.PV)
		b.TotalGenerationW = ptr(f.PV)
	}
	if f.GridOK {
		b.GridConsumptionW = ptr(f.GridConsumption)
		b.GridFeedInW = ptr(f.GridFeedIn)
	}
	if f.BatteryOK {
		b.BatteryChargingW = ptr(f.Charging)
		b.BatteryDischargingW = ptr(f.Discharging)
	}
	if v, ok := soc.value(); ok {
		b.BatteryStateOfChargePct = ptr(v)
	}
	if d, ok := f.Derive(); ok {
		b.derive(d, f.PV)
	}
	if len(issues) > 0 {
		b.Error = &DataError{
			Code:    DataErrorCode,
			Message: fmt.Sprintf("values of %d device(s) are stale or missing", len(issues)),
			Devices: issues,
		}
	}
	return b
}

// Flows are the basic flows of a plant's energy balance, as power (W)
// or as an interval's energy (Wh): for each role the sum over its devices
// that gave a value, whether any did (PVOK, GridOK, BatteryOK), and which
// roles the plant has (HasInverter, HasBattery). The live balance and the
// store's interval balances both derive the rest from them with Derive.
type Flows struct {
	PV, GridConsumption, GridFeedIn, Charging, Discharging float64

	PVOK, GridOK, BatteryOK bool
	HasInverter, HasBattery bool
}

// Derived are the flows a balance derives from its basic flows:
//
//	totalConsumption  = PV + gridConsumption + batteryDischarging − gridFeedIn − batteryCharging (≥ 0)
//	selfSupply        = totalConsumption − gridConsumption (0..totalConsumption)
//	selfConsumption   = PV − gridFeedIn (0..PV)
//	directConsumption = PV − gridFeedIn − batteryCharging (0..PV)
//
// The last two only when PV is known (PVOK).
type Derived struct {
	TotalConsumption, SelfSupply       float64
	SelfConsumption, DirectConsumption float64
	PVOK                               bool
}

// Derive returns the derived flows, or false when they cannot be known:
// the grid gave no value, or a role the plant has (inverters, batteries)
// gave none.
func (f Flows) Derive() (Derived, bool) {
	if !f.GridOK || !f.PVOK && f.HasInverter || !f.BatteryOK && f.HasBattery {
		return Derived{}, false
	}
	total := math.Max(0, f.PV+f.GridConsumption+f.Discharging-f.GridFeedIn-f.Charging)
	d := Derived{TotalConsumption: total, SelfSupply: clamp(total-f.GridConsumption, 0, total), PVOK: f.PVOK}
	if f.PVOK {
		d.SelfConsumption = clamp(f.PV-f.GridFeedIn, 0, f.PV)
		d.DirectConsumption = clamp(f.PV-f.GridFeedIn-f.Charging, 0, f.PV)
	}
	return d, true
}

// derive fills the derived flows and the rates they give: autarky, and
// with PV known the self-consumption rate.
func (b *Balance) derive(d Derived, pv float64) {
	b.TotalConsumptionW = ptr(d.TotalConsumption)
	b.SelfSupplyW = ptr(d.SelfSupply)
	if d.TotalConsumption > 0 {
		b.AutarkyRate = ptr(clamp(d.SelfSupply/d.TotalConsumption, 0, 1))
	}
	if d.PVOK {
		b.SelfConsumptionW = ptr(d.SelfConsumption)
		b.DirectConsumptionW = ptr(d.DirectConsumption)
		if pv > 0 {
			b.SelfConsumptionRate = ptr(clamp(d.SelfConsumption/pv, 0, 1))
		}
	}
}

// socMean averages the batteries' states of charge: weighted by capacity
// when every battery has one, else plain.
type socMean struct {
	sum, weight, plain float64
	n                  int
	unrated            bool
}

func (m *socMean) add(soc, capacityWh float64) {
	m.n++
	m.plain += soc
	if capacityWh > 0 {
		m.sum += soc * capacityWh
		m.weight += capacityWh
	} else {
		m.unrated = true
	}
}

func (m *socMean) value() (float64, bool) {
	switch {
	case m.n == 0:
		return 0, false
	case !m.unrated && m.weight > 0:
		return m.sum / m.weight, true
	}
	return m.plain / float64(m.n), true
}

// mixOf derives the energy mix from a balance: the consumption's sources
// are PV used directly, battery discharge and grid import; each rate is its
// share of their sum (which is totalConsumption whenever the readings are
// consistent).
func mixOf(b Balance) EnergyMix {
	m := EnergyMix{Error: b.Error, TotalConsumptionW: b.TotalConsumptionW}
	if b.TotalConsumptionW == nil || b.GridConsumptionW == nil {
		return m
	}
	val := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	direct, dis, grid := val(b.DirectConsumptionW), val(b.BatteryDischargingW), val(b.GridConsumptionW)
	sum := direct + dis + grid
	if sum <= 0 {
		return m
	}
	if b.DirectConsumptionW != nil {
		m.PVConsumptionRate = ptr(direct / sum)
	}
	m.GridConsumptionRate = ptr(grid / sum)
	if b.BatteryDischargingW != nil {
		m.BatteryConsumptionRate = ptr(dis / sum)
	}
	return m
}
