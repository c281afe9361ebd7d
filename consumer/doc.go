// Package consumer is plantd's home energy manager: the decision over
// the consumer devices the spec names (switchable loads: a relay output
// of a Modbus I/O module, an SG-Ready heat pump on a relay pair, a Shelly
// plug; and EV chargers over OCPP 1.6J, in amperes), their polling and
// writing loops, the guards that protect their machines (minimum on and
// off times, switchings per hour), and the surplus controller that gives
// them PV surplus, in the control cycle of grid control's FeedInLimit, so
// that a consumer absorbs surplus before PV is curtailed.
//
// # Job
//
// Each consumer has a [Driver] (driver.go's interface; the drivers and
// their one table are in package consumer/drivers) that takes one kind
// of [Setpoint]: a switch, an SG-Ready state or a charging current
// ([Output]). A loop per consumer (manager.go) reads it on its interval
// (wall clock) and hands a plant.Sample with a plant.ConsumerReading to
// the daemon's sink, like the SunSpec poller does for the other devices,
// and writes its output when the decision or a mode change asks, at once
// (the decision wakes the loop). Drivers arm the device's own fail-safe,
// so that an output falls to the driver's Fallback when plantd dies (off;
// SG-Ready: normal; a charger: its fallback current); the loop renews an
// output other than Fallback every third of the driver's Watchdog. A
// clean stop leaves the outputs as they are: a restart within the
// watchdog time does not switch a compressor off and on.
//
// # The decision
//
// Grid control calls [Manager.Absorb] once per control cycle of each plant
// with the plant's balance (plant.Surplus): the grid meter's power, the
// batteries' charging, discharging and state of charge, and the PV a
// FeedInLimit holds back. A battery in self-consumption mode holds the
// meter at 0, so the meter alone hides both a surplus the battery takes
// and a shortfall it covers; the export the decision starts from is
// therefore (exportOf, with the plant's [Battery], config
// plants[].battery, evcc's names):
//
//	export = −grid − discharge + charge (charge only at or above prioritySoc)
//
// The battery's discharge is never surplus: consumers never run on the
// battery, except that above bufferSoc (0 = never) the discharge is not
// subtracted, so consumers already running may keep drawing from it down
// to bufferSoc (none switches on from it). Below prioritySoc the battery
// charges first: its charging is not surplus. At or above it, the power it
// charges with is surplus, since a consumer switched on takes it from the
// battery, not from the grid. Without a SoC the charging does not count.
// Defaults: prioritySoc 100 (the battery charges first at any SoC, as
// before the key existed; evcc's default 0 gives the consumers first go)
// and bufferSoc 0: the battery never feeds them.
//
// Worked example, a winter noon: PV 3.5 kW, house 1.0 kW, the 3 kW heater
// on, the meter at 0 because the battery, at 74 %, covers the 3.5 − 1.0 −
// 3.0 = −0.5 kW by discharging 0.5 kW. The heater sees 0 − 0.5 + 3.0
// (its own draw) = 2.5 kW, below its 2.7 kW switch-off point: it goes off
// (after its minimum on time) and the battery charges 3.0 − 0.5 = 2.5 kW.
// The next cycle, with prioritySoc 50, the heater off sees 0 + 2.5 =
// 2.5 kW, below its 3 kW switch-on point: it stays off, and the battery
// keeps charging. With 1.2 kW more sun the battery charges 3.7 kW and
// the heater sees 3.7 kW: it switches on, and the battery charges 0.7 kW.
// With prioritySoc 80 it would see 0 until the battery passes 80 %.
//
// In priority order (lower first), an Auto consumer sees that export as if
// every Auto consumer were off, less what the consumers before it take;
// it switches on at its switch-on surplus and off below that less its
// hysteresis (its own draw is in what it sees, so it does not switch
// itself off). PV that a FeedInLimit holds back counts too, bounded by
// the inverters' rating above their output (and by an opModMaxLimW cap:
// PV a cap holds back is no surplus), since what the sun would give is
// unknown: one consumer at a time tries it (30 s apart), and one the PV
// cannot carry sees the import (or the battery's discharge, which is never
// surplus) and switches off after its minimum on time. Such a failed try
// (15 s after it, the plant imports or its battery pays more than 200 W)
// holds the next try back for 10 minutes, doubling with each failure in a
// row up to an hour, so that a cloud does not have the home battery pay
// for one consumer after the other; a try the PV carries ends the run.
// Without a grid meter answer, Auto consumers switch off (NoMeter).
// Must-run rules
// (cron specs: "at" a time for a while, or "by" a time for a total) hold a
// consumer on; modes On and Off (the installer, over the API or MQTT) hold
// it against surplus and must-run rules. The guard applies to every
// switch, manual ones too. An SG-Ready pump is recommended (3) on
// surplus, forced (4) by On and must-run rules, and normal (2) otherwise:
// plantd never locks one (state 1 is the grid operator's), unless the
// config lets the day-ahead plan do so (below). The decision
// of 50 consumers takes about 3 µs and allocates nothing
// (BenchmarkAbsorb50).
//
// # Chargers
//
// An EV charger's setpoint is a current per phase, in whole amperes
// between its minimum (6 A: IEC 61851-1, a car does not charge below it)
// and maximum, or 0 A (paused). It takes part in the same priority order,
// seeing the same surplus (its own draw in it), and its modes carry
// evcc's meaning (decideCharger):
//
//   - PV (Auto): the current the surplus carries, once it carried the
//     minimum for EnableDelay (default 1 min); when it no longer does,
//     the minimum for DisableDelay (default 3 min), then 0 A. Without a
//     car plugged in (the connector's OCPP status) or a grid meter: 0 A.
//   - MinPV: the minimum always, more with surplus.
//   - Now (On): the maximum. Off: 0 A. Must-run rules: the maximum.
//
// A current that only changes is written at once and logged nowhere; a
// start or stop is a switch for the guards and the plant log. Dimmed
// (§14a), a charger is slowed down to what fits before it is stopped.
// After a restart plantd knows a charger's current only once the charger
// accepted a profile of this run (the fallback it installs at
// connection, or a current): a charger kept "on" may be read at 0 A
// first and count as switched once (ConsumerFoundSwitched), and one seen
// before its first StatusNotification is decided as without a car (0 A)
// for a cycle.
//
// Worked example, 3 phases, 6..16 A (690 W an ampere): 5 kW of surplus
// at 12:00 starts nothing until 12:01, then 7 A (4830 W: 5000/690 = 7.2).
// With 10.5 kW seen at 12:01:10 (its 4.83 kW included), 15 A. A cloud:
// 3 kW seen, below the 4140 W of 6 A: 6 A, and if the cloud stays 3
// minutes, 0 A (TestDecideCharger walks this). Behind a 3 kW heater of higher priority, 9 kW of surplus
// give the heater 3 kW and the car 8 A.
//
// # The day-ahead plan
//
// A charger has a fifth mode, Plan (evcc's plans): [Manager.SetPlan]
// (PUT /gateway/v1/consumers/{id}/plan) gives it a target, an energy
// (Wh, counted from the charger's energy register at the set) or, where
// the config gives the car's capacity (vehicleCapacity) and the charger
// reports the car's SoC, a SoC, by a deadline (in the future, at most a
// week ahead). Target and mode are kept in the marks (survive a
// restart); another mode ends the plan. The site plan's runner (package
// siteplan) reads what it may schedule ([Manager.Flexible]: the first
// SG-Ready pump in mode Auto, with its draw per state and its must-run
// rules' energy, and the first charger in Plan mode with what its target
// still needs) and hands each slot's step over ([Manager.SetPlanned],
// until the slot's end; [Manager.ClearPlanned] at its fallback to
// surplus-only and its stop). The decision honours a step below the
// grid operator and the installer and above the surplus (DESIGN §6.2):
// modes On and Off and must-run rules win over it; a pump in Auto runs at
// the plan's 3 or 4, is locked (1) only when its config allows the plan
// to (planLock; else it is left to surplus), and in a step of 2 the
// surplus decides as without a plan; a charger in Plan charges the
// step's power in whole amperes between its bounds (a car plugged in),
// and in a step of 0 W, or without a step (no plan, prices stale, the
// target met, the deadline past), charges on PV surplus as in PV mode.
// The guards hold every switch the plan asks for (a pump forced at the
// plan's 4 goes to normal only after its minimum on time), and the §14a
// cap (dim) is applied after the plan: a dimmed plant's pump is locked
// over the plan's 4. The reason is Plan, and the status shows the
// target (plan, with what remains) and the step (planned).
//
// # §14a EnWG dimming
//
// The grid operator may dim a plant's controllable consumers (Spec.
// Controllable; config consumer.controllable, by default the SG-Ready
// heat pumps): [Manager.Dim] (from a control box's contact, package
// gridinput) makes them keep their draw together at or below
// the plant's minimum, switching the last in priority order off first (an
// SG-Ready pump to state 1, lock: it protects its compressor itself),
// over modes, must-run rules and guards, and then gives back, in priority
// order, what fits again (never 0 W while something fits; a charger slows
// down before it stops and comes back at the current that fits). A consumer that is to run counts
// its draw (measured, else rated), but its rating while it is being
// switched on and for 2 minutes after (a compressor starts late: a
// measured 0 W then would let the next consumer on); an SG-Ready pump in normal operation
// counts its rated power too, since its own controller may start it at
// any moment: it is locked when that does not fit. A change of the signal
// is decided at once, with the surplus of the last control cycle (before
// the first cycle: every consumer kept as it is, only the cap applied),
// and written by the consumers' loops right away; every cycle after
// decides with its own. A manual On or Off while the cap holds is decided
// the same way, with the plant's other consumers: it gets what the cap
// leaves. The loops write a decision's reductions before its increases (a
// loop raising an output waits, at most the longest write timeout, until
// the lowered ones are written), so that two consumers trading places
// never draw together. The minimum is the Bundesnetzagentur's
// (determination BK6-22-300, Anlage 1): P_min = 4.2 kW + (n − 1) × GZF ×
// 4.2 kW for n devices behind one energy manager (a heat pump with its
// immersion heater, config consumer.partOf, is one), GZF 0.8, 0.75, 0.7,
// 0.65, 0.6, 0.55, 0.5 for n = 2..8 and 0.45 from 9 on, 4.2 kW for one
// ([MinPower14a]); never 0 W unless gridControl.dimmingMinPowerW says
// otherwise (a heat pump above 11 kW keeps 40 % of its rating, which is
// not modelled: configure the minimum then).
//
// A control box over EEBus (package eebus, use case LPC) sends a limit in
// W instead of a contact: [Manager.LimitConsumption] applies it the same
// way, the cap being the limit but never below that minimum; with the
// contact's dimming on as well, the minimum governs.
//
// # Energy
//
// A consumer's power and lifetime energy come from the meter the config
// assigns to it (its activePower and gridConsumptionTotal in the live
// state), else from the device (a Shelly's apower and aenergy), else
// they are estimated from its rated power while on (an SG-Ready pump:
// while recommended or forced; its normal operation is house load) and
// marked estimated. The estimated counter and the counter at the start
// of the plant's day (energy today) are kept with the guards (below).
//
// # Restarts
//
// A consumer's guards survive a restart ([Deps.Guards]: the store's
// consumer_guard, one row per consumer, keep.go's encoding). Kept: the
// output plantd last commanded and the time of its last switch (minimum
// on and off times), the switchings of the last hour (at most
// maxSwitchesPerHour of them), each "by" rule's on-time in its period
// and the period's end, the day and the energy counter at its start, and
// the estimated counter. The row is replaced at every change of the
// commanded output (a switch, an SG-Ready state), once at a new day and
// at stop, never per cycle: one row a switch, in a transaction of its
// own, 33 bytes plus 8 a kept switching and 16 a "by" rule (a heat pump
// without a switching bound and without "by" rules: 33 bytes; with 6 an
// hour and one rule: 97), which SQLite writes as one WAL frame of a page
// (4120 bytes; TestConsumerGuard); an unchanged row writes nothing. A
// crash while on loses the on-time and the estimate since the last
// write: a "by" rule runs more, never less.
//
// At start the manager restores the guards before anything runs (a time
// after the plant's clock, as a demo's clock set back, counts as now),
// and a "by" rule's on-time only while its period lasts and the rules
// are the same. The first reading of a consumer is taken as its output
// and kept, unwritten (but for the watchdog's renewal of the same state),
// until the first decision, which the restored guards hold: a heat pump
// on for 2 of its 10 minutes' minimum on time stays on for the remaining
// 8, an SG-Ready pair at 4 stays at 4 unless the decision wants another
// state (no 4 → 2 → 4), a relay is not switched off and on
// (TestRestartKeepsGuards, on the simulator's relay board and a SQLite
// file). An output found other than plantd left it switched while plantd
// was away (its watchdog, a person, a power cut) and counts as a switch
// at start; an SG-Ready state 1 or 4 plantd did not set is logged.
// Without Guards the guards start empty and the estimated counter is
// kept in the marks.
//
// # Import boundary
//
// consumer imports plant (the domain's vocabulary), internal/backoff and
// github.com/robfig/cron/v3 (must-run rules, parsed by config). It knows
// nothing of devices (its drivers are in consumer/drivers, behind
// Driver), storage (the marks and the guard state are small
// interfaces), the HTTP API, MQTT or grid control: grid control calls
// Absorb through its Absorber interface, and cmd/plantd wires them.
//
// Imports: plantd/internal/backoff, plantd/plant
package consumer
