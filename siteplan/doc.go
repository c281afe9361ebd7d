// Package siteplan runs a plant's day-ahead plan (issue 45) and follows
// it through the one gate of grid control. Every 15 minutes, when new
// prices arrive, and when the live state first knows the battery and the
// load, it builds the planner's input (package plan) from the tariffs'
// prices, the PV forecast (package forecast, through PVForecast; PV 0
// without one), the base-load forecast (LoadForecast) and the plant's
// load and its batteries as the live state shows them, and the heat pump and the car the energy manager lets it
// schedule, keeps the plan for the API
// (/gateway/v1/plan), and acts on the slot of now:
//
//   - the batteries: a charge from the grid or a hold that the plan wants
//     is a battery setpoint of the plan's origin (gridcontrol's door plan,
//     role standard: below every installer's and grid operator's window,
//     a FeedInLimit capping it): a hold (plan.BatteryHold) keeps them from
//     discharging while PV surplus the forecast missed still charges them
//     (SetBatteryNoDischarge), keeping room (plan.BatteryKeepRoom) holds
//     them at 0 W both ways (SetBatteryPower 0); in every other slot the
//     setpoint is released and the batteries do their own
//     self-consumption;
//   - negative prices: every run of slots whose feed-in price is below the
//     floor (tariffs feedIn.floor, default 0 EUR/kWh) is a FeedInLimit
//     0 W window of the installer's role from the plan's door
//     ("plan:negative-price"): export is held at 0 W by the FeedInLimit
//     loop, PV goes to the battery and the consumers (the energy manager
//     sees the held-back PV as curtailed surplus), and a grid operator's
//     stricter window still governs. The windows follow the prices: one
//     no longer wanted is cancelled. Each is logged in the plant log
//     (PriceNegative) when it is set.
//
// The energy manager stays in charge second by second (surplus, limits,
// the grid operator's windows); the plan only sets what the gate allows
// its door. Without prices for the next hour, or with prices the
// provider marks stale, the runner falls back to surplus-only: it
// releases its battery setpoint and cancels its windows (PlanFallback in
// the plant log, once per episode).
//
// The heat pump and the car (consumer.Manager.Flexible, through
// Consumers): the first SG-Ready heat pump in mode Auto is the plan's
// HeatPump (its draw per state, config sgReadyPower, else its
// ratedPower; its must-run rules' energy within the horizon as
// RequiredWh, none: its normal draw throughout; heating ahead bounded by
// two hours of its normal draw a day; the utilities' lock rules only
// where its config's planLock lets the plan lock it, default never), and
// the first charger in Plan mode, with a target not yet met before its
// deadline, is the plan's Car (its minimum and maximum current × phases
// × voltage, what the target still needs, the deadline, plugged in or
// not). Each slot the runner hands their step to the energy manager
// (consumer.Manager.SetPlanned: the pump's SG-Ready state, the car's
// power, until the slot's end and a minute), which follows it below the
// grid operator's windows and caps and the installer's modes and
// must-run rules, above the surplus, within the guards; the fallback
// and the runner's stop clear the steps (ClearPlanned), and the energy
// manager goes back to surplus-only. A charger set to Plan, a new
// target, or a car plugged in or out is planned at the next look (at
// most lookEvery, 10 s), not at the next slot.
//
// What the plan knows of the house: the live load is the plant's total
// consumption as the live balance shows it, less what the planned heat
// pump and car draw now when measured (an unmetered pump stays in it:
// its state's rating subtracted took a 1 kW house to 0 W), smoothed over
// an hour of the plan's clock. The base load of each slot is the
// forecast from the plant's history (package forecast's base-load
// profile, through LoadForecast: the median of the last 14 days at that
// quarter-hour of the local day, the same consumers' metered draw left
// out), its first two hours shifted by the live load's departure from
// it (the departure weighted 1 now, 0 two hours ahead; the live load is
// compared with the forecast smoothed alike, so an evening's rise is not
// taken for one); without a forecast (less than 2 days of history) the
// live load flat over the horizon. Snapshot.BaseLoadSource says which
// (history, live, or none before the first sample). Other consumers
// (relays, plugs) are not planned: the energy manager runs them on
// surplus and their must-run rules, and their draw is part of the base
// load.
//
// Imports: plantd/config, plantd/consumer, plantd/gridcontrol, plantd/plan, plantd/plant, plantd/plant/kind, plantd/tariffs
package siteplan
