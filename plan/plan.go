package plan

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultSlot is the slot length when Input.Slot is 0: a quarter hour, the
// day-ahead market's resolution since October 2025.
const DefaultSlot = 15 * time.Minute

// Slot is what the planner knows of one slot of the horizon.
type Slot struct {
	// ImportEURPerKWh is the price of a kWh taken from the grid,
	// FeedInEURPerKWh what a kWh fed in earns; either may be negative.
	ImportEURPerKWh float64
	FeedInEURPerKWh float64
	// PVW is the PV forecast (W, mean over the slot); BaseLoadW the house
	// without the controllable consumers the plan schedules (W).
	PVW       float64
	BaseLoadW float64
	// MaxImportW and MaxExportW are the grid operator's limits at the
	// connection point (W, ≥ 0) where HasMaxImport and HasMaxExport say
	// one is known.
	MaxImportW   float64
	MaxExportW   float64
	HasMaxImport bool
	HasMaxExport bool
}

// Battery is the plant's battery as the plan sees it. Powers are on the
// AC side (what the grid and the house see); the efficiencies are one way
// (their product is the round trip).
type Battery struct {
	CapacityWh float64
	// SoCPct is the state of charge at the start of slot 0 (%).
	SoCPct float64
	// MinSoCPct is the lowest SoC the plan may use, the reserve included;
	// MaxSoCPct the highest (default 100 when 0).
	MinSoCPct float64
	MaxSoCPct float64
	// MaxChargeW and MaxDischargeW bound its AC power.
	MaxChargeW    float64
	MaxDischargeW float64
	// ChargeEfficiency and DischargeEfficiency (0 < η ≤ 1; 0 = 0.95): a Wh
	// from the AC side stores ChargeEfficiency Wh, a stored Wh gives
	// DischargeEfficiency Wh back.
	ChargeEfficiency    float64
	DischargeEfficiency float64
	// GridCharge allows charging from the grid (else only from PV
	// surplus). DischargeToGrid allows discharging more than the house
	// draws, into the grid (else the battery covers load only, as in
	// self-consumption).
	GridCharge      bool
	DischargeToGrid bool
}

// HeatPump is an SG-Ready heat pump (states as plant.ConsumerReading's
// SGReady: 1 locked, 2 normal, 3 recommended on, 4 forced on). Its heat
// demand over the horizon is RequiredWh of electrical energy: hours in
// state 3 or 4 draw RecommendedW or ForcedW and so heat ahead, hours in
// state 1 draw nothing, and the hours in state 2 (its own controller)
// share what is left, each drawing at most NormalW on average.
type HeatPump struct {
	NormalW      float64
	RecommendedW float64
	ForcedW      float64
	// RequiredWh is the electrical energy it must get within the horizon
	// (its must-run rules summed); 0 = NormalW over the whole horizon.
	RequiredWh float64
	// BufferWh bounds the heating ahead: the electrical energy states 3
	// and 4 may take above the normal draw on one day (its buffer or hot
	// water tank's heat over its COP: 300 l warmed by 10 K hold 3.5 kWh,
	// 1.2 kWh at a COP of 3); 0 = no bound.
	BufferWh float64
	// Lock allows state 1 within its rules; nil: the plan never locks it
	// (state 1 is otherwise the grid operator's).
	Lock *LockRules
}

// LockRules bound the plan's use of SG-Ready state 1.
type LockRules struct {
	// MaxLock is the longest lock; MaxLocksPerDay the number of locks
	// that may start on one day; MaxLockedPerDay their total on one day.
	// Each lock is followed by a release at least as long as the lock.
	MaxLock         time.Duration
	MaxLocksPerDay  int
	MaxLockedPerDay time.Duration
}

// UtilityLockRules are the rules German utilities' heat-pump tariffs hold
// their own lock (EVU-Sperre) to: at most three times a day, each at most
// 2 h, 6 h a day in all, and each lock followed by a release at least as
// long (as Bosch's and Ostrom's customer pages state them).
func UtilityLockRules() LockRules {
	return LockRules{MaxLock: 2 * time.Hour, MaxLocksPerDay: 3, MaxLockedPerDay: 6 * time.Hour}
}

// Car is an EV at a charger in Plan mode (evcc's plans): TargetWh into the
// car by Deadline. Its charging power is 0 or between MinW and MaxW (the
// charger's minimum and maximum current × phases × voltage).
type Car struct {
	// Connected false: the car is away, the plan charges nothing.
	Connected bool
	// TargetWh is the energy to charge by Deadline (zero time: the end
	// of the horizon); a target SoC is (target − SoC now) × capacity.
	TargetWh float64
	Deadline time.Time
	MinW     float64
	MaxW     float64
	// MaxWh is the most the car takes (to full or its limit): hours where
	// charging earns money (import price below 0) charge it beyond the
	// target up to MaxWh; 0 = TargetWh.
	MaxWh float64
}

// Input is one planning problem: slots from Start, each Slot long.
type Input struct {
	Start time.Time
	// Slot is the slot length (0 = DefaultSlot).
	Slot  time.Duration
	Slots []Slot
	// Battery, HeatPump and Car are nil when the plant has none.
	Battery  *Battery
	HeatPump *HeatPump
	Car      *Car
	// FeedInFloorEURPerKWh: below this feed-in price the plan exports
	// nothing (PV is held back instead); 0 = below zero.
	FeedInFloorEURPerKWh float64
	// SoCStepPct is the battery's state resolution (% of capacity,
	// 0.1..10; 0 = 0.5).
	SoCStepPct float64
}

// BatteryAction is what the battery does in a slot.
type BatteryAction string

// The battery actions. The plan's two holds differ in what the battery
// may do when the forecast was wrong: BatteryHold keeps its energy for
// later (no discharge) but takes PV surplus the forecast did not foresee;
// BatteryKeepRoom keeps it still both ways, because the plan exports (or
// holds back) the slot's forecast PV surplus to keep room for later
// (typically before hours of negative feed-in, whose PV it stores
// instead). See the package doc, "Holds".
const (
	BatteryHold       BatteryAction = "hold"       // no discharge; unforeseen PV surplus may charge it
	BatteryKeepRoom   BatteryAction = "keepRoom"   // neither way: PV surplus exported, room kept for later
	BatteryChargePV   BatteryAction = "chargePV"   // charging from PV surplus only
	BatteryChargeGrid BatteryAction = "chargeGrid" // charging, partly from the grid
	BatteryDischarge  BatteryAction = "discharge"
)

// BatteryActions lists every battery action, for the API's documents.
func BatteryActions() []BatteryAction {
	return []BatteryAction{BatteryHold, BatteryKeepRoom, BatteryChargePV, BatteryChargeGrid, BatteryDischarge}
}

// The reasons of a step (Step.Reason), short enough for a log line.
const (
	ReasonNegativeFeedIn = "negative feed-in price: absorb, export 0"
	ReasonGridCharge     = "cheapest hours: grid charge"
	ReasonPeak           = "expensive hour: battery covers load"
	ReasonHeatPumpLock   = "expensive hour: heat pump locked"
	ReasonHeatPumpBoost  = "cheap hour: heat pump heats ahead"
	ReasonCar            = "cheapest slots before the deadline: car charges"
	ReasonStorePV        = "PV surplus: battery stores it for later"
	ReasonKeepRoom       = "PV surplus: export, battery keeps room for later"
	ReasonExport         = "PV surplus: export"
	ReasonImportLimit    = "import limit: load above what the grid allows"
	ReasonSelfConsume    = "self-consumption"
)

// Reasons lists every reason a step may give, for the API's documents.
func Reasons() []string {
	return []string{ReasonNegativeFeedIn, ReasonGridCharge, ReasonPeak, ReasonHeatPumpLock, ReasonHeatPumpBoost,
		ReasonCar, ReasonStorePV, ReasonKeepRoom, ReasonExport, ReasonImportLimit, ReasonSelfConsume}
}

// Step is the plan for one slot. Powers are means over the slot (W).
type Step struct {
	Start time.Time
	// Battery is the action; BatteryW its AC power (> 0 charging, < 0
	// discharging), BatteryFromGridW the part of a charge the grid gives.
	Battery          BatteryAction
	BatteryW         float64
	BatteryFromGridW float64
	// SoCPct is the battery's SoC at the end of the slot.
	SoCPct float64
	// SGReady is the heat pump's state 1..4 (0 without one), HeatPumpW
	// its expected draw.
	SGReady   int
	HeatPumpW float64
	// CarW is the car's charging power.
	CarW float64
	// ImportW, ExportW: the expected grid flows; CurtailedW the PV held
	// back (an export limit, or a feed-in price below the floor).
	ImportW    float64
	ExportW    float64
	CurtailedW float64
	// OverImportW is the import above the grid operator's limit the plan
	// could not avoid (the base load alone above it).
	OverImportW float64
	// CostEUR is the slot's grid cost (import paid − feed-in earned).
	CostEUR float64
	// Reason is one of Reasons: why the step is what it is.
	Reason string
}

// Plan is the planner's answer.
type Plan struct {
	Start time.Time
	Slot  time.Duration
	Steps []Step
	// CostEUR is the plan's grid cost less the value of the energy the
	// battery holds at the end beyond what it held at the start (valued
	// at EndValueEURPerKWh), so a plan that empties the battery is not
	// flattered; BaselineCostEUR the same for no plan (below);
	// SavingEUR their difference.
	CostEUR           float64
	BaselineCostEUR   float64
	SavingEUR         float64
	EndValueEURPerKWh float64
	// CarShortWh is the part of a connected car's target the horizon
	// cannot give (the plan charges what it can: best effort);
	// CarTargetMet is true when a connected car's target is met (false
	// without a connected car).
	CarShortWh   float64
	CarTargetMet bool
	// HeatPumpShortWh is the heat pump's required energy the plan cannot
	// give within NormalW in state 2.
	HeatPumpShortWh float64
}

// ErrInput is the class of an input the planner cannot use.
var ErrInput = errors.New("plan: bad input")

func inputErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, a...))
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// validate checks the input and returns the slot length.
func (in *Input) validate() (time.Duration, error) {
	dt := in.Slot
	if dt == 0 {
		dt = DefaultSlot
	}
	if dt < time.Minute || dt > 24*time.Hour {
		return 0, inputErr("slot %v is out of range (1m..24h)", dt)
	}
	if len(in.Slots) == 0 {
		return 0, inputErr("no slots")
	}
	for i, s := range in.Slots {
		if !finite(s.ImportEURPerKWh, s.FeedInEURPerKWh, s.PVW, s.BaseLoadW, s.MaxImportW, s.MaxExportW) {
			return 0, inputErr("slot %d: a value is not a number", i)
		}
		if s.PVW < 0 || s.BaseLoadW < 0 || s.MaxImportW < 0 || s.MaxExportW < 0 {
			return 0, inputErr("slot %d: a power is negative", i)
		}
	}
	if !finite(in.FeedInFloorEURPerKWh, in.SoCStepPct) || in.SoCStepPct != 0 && (in.SoCStepPct < 0.1 || in.SoCStepPct > 10) {
		return 0, inputErr("SoC step %v %% is out of range (0.1..10; 0 = 0.5)", in.SoCStepPct)
	}
	if b := in.Battery; b != nil {
		switch {
		case !finite(b.CapacityWh, b.SoCPct, b.MinSoCPct, b.MaxSoCPct, b.MaxChargeW, b.MaxDischargeW,
			b.ChargeEfficiency, b.DischargeEfficiency):
			return 0, inputErr("battery: a value is not a number")
		case b.CapacityWh <= 0:
			return 0, inputErr("battery: capacity %v Wh is not above 0", b.CapacityWh)
		case b.SoCPct < 0 || b.SoCPct > 100 || b.MinSoCPct < 0 || b.MaxSoCPct < 0 || b.MaxSoCPct > 100:
			return 0, inputErr("battery: a SoC is out of range (0..100)")
		case b.MaxSoCPct != 0 && b.MinSoCPct > b.MaxSoCPct:
			return 0, inputErr("battery: minimum SoC %v above maximum %v", b.MinSoCPct, b.MaxSoCPct)
		case b.MaxChargeW < 0 || b.MaxDischargeW < 0:
			return 0, inputErr("battery: a power is negative")
		case b.ChargeEfficiency < 0 || b.ChargeEfficiency > 1 || b.DischargeEfficiency < 0 || b.DischargeEfficiency > 1:
			return 0, inputErr("battery: an efficiency is out of range (0..1)")
		}
	}
	if h := in.HeatPump; h != nil {
		switch {
		case !finite(h.NormalW, h.RecommendedW, h.ForcedW, h.RequiredWh, h.BufferWh):
			return 0, inputErr("heat pump: a value is not a number")
		case h.NormalW <= 0 || h.RecommendedW < h.NormalW || h.ForcedW < h.RecommendedW:
			return 0, inputErr("heat pump: powers must be 0 < normal ≤ recommended ≤ forced")
		case h.RequiredWh < 0 || h.BufferWh < 0:
			return 0, inputErr("heat pump: an energy is negative")
		}
		if l := h.Lock; l != nil && (l.MaxLock < dt || l.MaxLocksPerDay < 1 || l.MaxLockedPerDay < l.MaxLock) {
			return 0, inputErr("heat pump: lock rules need a lock of at least one slot, one a day, and a daily total ≥ the longest lock")
		}
	}
	if c := in.Car; c != nil {
		switch {
		case !finite(c.TargetWh, c.MinW, c.MaxW, c.MaxWh):
			return 0, inputErr("car: a value is not a number")
		case c.TargetWh < 0 || c.MaxWh < 0:
			return 0, inputErr("car: an energy is negative")
		case c.MinW <= 0 || c.MaxW < c.MinW:
			return 0, inputErr("car: powers must be 0 < minimum ≤ maximum")
		}
	}
	return dt, nil
}
