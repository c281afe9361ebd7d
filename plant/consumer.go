package plant

import "time"

// ConsumerStatus is a consumer as the home energy manager sees it: its
// settings, its output and why, for the gateway's consumer route and page.
type ConsumerStatus struct {
	DeviceID string `json:"deviceId"`
	PlantID  string `json:"plantId"`
	Name     string `json:"name"`
	// Driver is the hardware: "relay", "sgready" or "shelly".
	Driver string `json:"driver"`
	// Mode is who decides the output (Auto: the surplus controller and the
	// must-run windows; On, Off: the installer).
	Mode     ConsumerMode `json:"mode"`
	Priority int          `json:"priority"`
	// RatedPowerW is the configured power while on.
	RatedPowerW float64 `json:"ratedPower"`
	// SwitchingState is the output read back from the device; "" before
	// the first successful poll.
	SwitchingState SwitchingState `json:"switchingState,omitempty"`
	// SGReady is an SG-Ready heat pump's state 1..4 read back; 0 (omitted)
	// for other consumers.
	SGReady int `json:"sgReadyState,omitempty"`
	// Charger is a charger's state; nil (omitted) for other consumers.
	Charger *ChargerStatus `json:"charger,omitempty"`
	// ConsumptionW is the power now (W); nil when unknown. Estimated
	// says it comes from RatedPowerW while on, not from a meter.
	ConsumptionW *float64 `json:"consumption,omitempty"`
	Estimated    bool     `json:"consumptionEstimated"`
	// EnergyTodayWh is the energy since local midnight (Wh); nil when
	// unknown.
	EnergyTodayWh *float64 `json:"energyToday,omitempty"`
	// Reason says why the output is what it is: one of ConsumerReasons.
	Reason string `json:"reason"`
	// Plan is a charger's target in mode Plan; nil in any other mode.
	Plan *ChargePlan `json:"plan,omitempty"`
	// Planned is what the day-ahead plan asks of the consumer in the slot
	// of now (a car's charging power, a heat pump's SG-Ready state); nil
	// when it asks nothing (no plan, or the consumer is not planned).
	Planned *Planned `json:"planned,omitempty"`
	// NextMustRun is the start of the next must-run window; nil when none.
	NextMustRun *time.Time `json:"nextMustRun,omitempty"`
	// SwitchesLastHour counts the output's switchings in the last hour;
	// MaxSwitchesPerHour is its bound (0: none).
	SwitchesLastHour   int `json:"switchesLastHour"`
	MaxSwitchesPerHour int `json:"maxSwitchesPerHour"`
	// MinOnTime and MinOffTime in seconds.
	MinOnTimeS  float64 `json:"minOnTime"`
	MinOffTimeS float64 `json:"minOffTime"`
}

// ChargePlan is a charger's target in mode Plan, as evcc's plans: an
// energy (Wh) or, where the charger reports the car's SoC and the config
// gives the car's battery capacity, a SoC (%), by Deadline. Exactly one
// of EnergyWh and SoCPct is above 0.
type ChargePlan struct {
	EnergyWh float64   `json:"energy,omitempty"`
	SoCPct   float64   `json:"soc,omitempty"`
	Deadline time.Time `json:"deadline"`
	// RemainingWh is what is still to charge for the target (status
	// only); nil when unknown (a SoC target without the car's SoC).
	RemainingWh *float64 `json:"remaining,omitempty"`
}

// Planned is the day-ahead plan's step for a consumer (status only): a
// car's charging power (W, 0: surplus only in this slot) or a heat pump's
// SG-Ready state (1..4), until Until.
type Planned struct {
	PowerW  *float64  `json:"power,omitempty"`
	SGReady int       `json:"sgReadyState,omitempty"`
	Until   time.Time `json:"until"`
}

// ChargerStatus is an EV charger's part of ConsumerStatus.
type ChargerStatus struct {
	// Status is the connector's OCPP 1.6 status (Available, Preparing,
	// Charging, SuspendedEV, SuspendedEVSE, Finishing, Faulted,
	// Unavailable); "" before the charger told it.
	Status string `json:"status"`
	// CurrentA is the charging current per phase plantd's last accepted
	// profile allows, on Phases; MinCurrentA and MaxCurrentA its bounds.
	CurrentA    float64 `json:"current"`
	Phases      int     `json:"phases"`
	MinCurrentA float64 `json:"minCurrent"`
	MaxCurrentA float64 `json:"maxCurrent"`
	// VehicleSoC is the car's state of charge (%) where the charger
	// reports it.
	VehicleSoC *float64 `json:"vehicleSoc,omitempty"`
}

// Surplus is what grid control's cycle knows of a plant's power flows,
// handed to the home energy manager once per control cycle.
type Surplus struct {
	// Time is the cycle's time on the plant's clock.
	Time time.Time
	// GridW is the grid meter's active power now (W, import > 0, the
	// SunSpec meter sign); GridOK false when no grid meter answers.
	GridW  float64
	GridOK bool
	// CurtailedW is PV power a limit holds back now that a consumer
	// could get: with a limit in force and the inverters at it, their
	// rated power above their output (an upper bound: what the sun would
	// give is not known), but no more than an opModMaxLimW cap allows
	// (PV a cap holds back stays held back whatever the plant draws);
	// 0 without a limit or when the inverters are below it.
	CurtailedW float64
	// BatteryChargeW and BatteryDischargeW are the plant's batteries'
	// power now (W, both ≥ 0, from the live state, as the energy
	// balance's batteryCharging and batteryDischarging), BatteryOK false
	// when the plant has no battery or none gave a value; BatterySoCPct
	// is their state of charge (%), BatterySoCOK false when unknown. A
	// battery in self-consumption mode holds the grid meter at 0, so the
	// surplus is judged from them too, not from GridW alone.
	BatteryChargeW, BatteryDischargeW float64
	BatteryOK                         bool
	BatterySoCPct                     float64
	BatterySoCOK                      bool
}

// The reasons of a consumer's output (ConsumerStatus.Reason).
const (
	ReasonSurplus      = "Surplus"      // Auto: on, the surplus carries it
	ReasonNoSurplus    = "NoSurplus"    // Auto: off, not enough surplus
	ReasonProbing      = "Probing"      // Auto: off, waits its turn to try PV that a limit holds back
	ReasonNoMeter      = "NoMeter"      // Auto: off, no grid meter answers
	ReasonMustRun      = "MustRun"      // a must-run window holds it on
	ReasonManual       = "Manual"       // mode On or Off
	ReasonMinOnTime    = "MinOnTime"    // held on until its minimum on time passed
	ReasonMinOffTime   = "MinOffTime"   // held off until its minimum off time passed
	ReasonMaxSwitches  = "MaxSwitches"  // held: the switchings per hour are used up
	ReasonOffline      = "Offline"      // its device does not answer
	ReasonStarting     = "Starting"     // not read yet
	ReasonDimmed       = "Dimmed"       // the grid operator dims the plant (§14a EnWG)
	ReasonMinPV        = "MinPV"        // a charger in MinPV: the minimum current, the surplus does not carry more
	ReasonEnableDelay  = "EnableDelay"  // a charger in PV: the surplus carries it, for less than its enable delay yet
	ReasonDisableDelay = "DisableDelay" // a charger in PV: at its minimum, the surplus is gone for less than its disable delay yet
	ReasonNoVehicle    = "NoVehicle"    // a charger in PV or MinPV: no car is plugged in
	ReasonPlan         = "Plan"         // the day-ahead plan's step for this slot (a heat pump's SG-Ready state, a car's charging)
)

// ConsumerReasons lists every reason, for the API's documents.
func ConsumerReasons() []string {
	return []string{ReasonSurplus, ReasonNoSurplus, ReasonProbing, ReasonNoMeter, ReasonMustRun, ReasonManual,
		ReasonMinOnTime, ReasonMinOffTime, ReasonMaxSwitches, ReasonOffline, ReasonStarting, ReasonDimmed,
		ReasonMinPV, ReasonEnableDelay, ReasonDisableDelay, ReasonNoVehicle, ReasonPlan}
}

// The SG-Ready operating states (Bundesverband Wärmepumpe's label): the
// two relay contacts (A, B) give 1 = (1, 0) utility lock, 2 = (0, 0)
// normal, 3 = (0, 1) switch-on recommended, 4 = (1, 1) switch-on forced.
// ConsumerReading.SGReady and the energy manager's outputs use them, and
// the day-ahead planner's heat pump states.
const (
	SGLocked    = 1
	SGNormal    = 2
	SGRecommend = 3
	SGForced    = 4
)
