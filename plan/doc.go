// Package plan is the day-ahead planner of issue 45: from the prices and
// forecasts of the next hours it plans the battery, an SG-Ready heat pump
// and a car, slot by slot, and says what the plan saves against no plan.
// It is a pure function ([Compute]): no clock, no I/O, no goroutine, the
// same plan for the same [Input]. The site loop follows the plan and
// stays in charge second by second (surplus, limits and the grid
// operator's windows win over it; DESIGN §6.2).
//
// # Input and output
//
// An [Input] is a run of slots (15 minutes by default, any count: 1, 96,
// 144), each with the import and feed-in price (EUR/kWh, either may be
// negative), the PV forecast, the house's base load (without the
// consumers the plan schedules) and the grid operator's import and
// export limits where known; the [Battery] (capacity, SoC, the reserve
// as its minimum SoC, AC power limits, one-way efficiencies, whether it
// may charge from the grid), the [HeatPump] and the [Car], each nil when
// absent. The [Plan] has a [Step] per slot: the battery's action (below,
// "Holds", for its two holds) and AC power (with the part of a charge from the grid), the SoC after it, the
// heat pump's SG-Ready state (1..4, numbered as plant.ConsumerReading's
// SGReady, plant.SGLocked..SGForced) and draw, the car's
// charging power, the expected import, export and PV held back, the
// slot's cost and a short reason for the API and the log; for the whole
// horizon the cost, the baseline's cost and the saving, and what the car
// and the heat pump fall short of.
//
// # Method
//
// The battery is a dynamic programme over its stored energy: states on a
// grid of SoCStepPct (0.5 % of the capacity by default: 201 states for a
// full range) anchored at the start's energy, so the start is exact and
// the reserve is never crossed; moves per slot are hold, self-consumption
// (cover the house's shortfall or take the PV surplus exactly, the value
// after it read linearly between states) and whole steps up (from the
// grid, where allowed) or down. Backwards from the horizon's end the
// programme finds the least cost to the end for every slot and state;
// then the trajectory is walked forwards from the real start, each slot's
// move chosen again by the same rule. A slot's cost is import × price −
// export × feed-in price; export is 0 where the feed-in price is below
// the floor (PV is held back instead) and at most the export limit;
// import above the import limit costs 10 EUR/kWh, so the plan avoids it
// wherever anything can and shows what it could not avoid (OverImportW).
// Energy left in the battery at the end is worth the horizon's lowest
// import price × the discharge efficiency, in the programme and in the
// plan's cost, so neither empties the battery for nothing nor fills it
// for a price it cannot get back. Grid charging therefore happens only
// where a cheap hour's price through both efficiencies is below what the
// stored energy saves later: the round trip's losses are in every move,
// not a separate threshold (TestNoGridChargeWhenUnprofitable: a flat
// price and a spread just below the losses charge nothing).
//
// Why a programme over the SoC: the battery couples all slots through one
// number, its stored energy, and the programme is exact for that coupling
// (up to the state grid), handles the reserve, power limits, the
// self-consumption rule and the limits per slot without special cases,
// and is fast enough (states × moves × slots: at most 201 × 50 × 144 for
// a 10 kWh battery at 5 kW, about 1.4 million additions a run). A linear programme would be exact too but needs
// a solver module; a greedy battery rule misses the coupling (charging
// at 02:00 pays only if 18:00 is still to come with the battery empty).
//
// The car and the heat pump are not states of the programme (a state per
// car energy and heat pump stock would multiply it beyond the time
// budget): they are placed greedily between two runs of it, by the
// marginal cost of a slot: the cost from that slot's state in the first
// run to the horizon's end when the slot draws more, the battery's move
// in it chosen again (so a slot where the battery would have discharged
// prices the car at what that energy was worth, one with PV surplus at
// the feed-in price, one with PV held back at 0). The second run plans
// the battery around what was placed.
//
//   - The car charges its target by the deadline in the cheapest
//     increments: each slot's power climbs from 0 to its minimum, then in
//     eighths to its maximum (and to what fits under the import limit),
//     and each round takes the increment with the least marginal cost a
//     Wh over all slots, the last cut to what the target still needs.
//     Where the target cannot be met the car charges at its maximum
//     wherever it can, and CarShortWh says how much is missing (best
//     effort, flagged). Beyond the target, up to MaxWh, it takes only
//     increments that earn money.
//   - The heat pump's demand over the horizon (RequiredWh, its must-run
//     rules summed; by default NormalW throughout) is given by its states:
//     3 and 4 draw RecommendedW and ForcedW and so heat ahead, 1 draws
//     nothing, and the slots in state 2 (its own controller) share what
//     is left evenly, at most NormalW each. Each round takes the move that
//     lowers the cost most: a slot to 3 or 4 (the state-2 slots then draw
//     less), a lock where the rules allow (they draw more), or a lock with
//     the heating ahead it needs; the moved slots are costed exactly, the
//     state-2 slots' change by their marginal price. Heating ahead is
//     bounded by BufferWh a day (the tank's or buffer's heat as
//     electrical energy); locks by [LockRules]: the plan locks only when
//     given rules ([UtilityLockRules]: the utilities' own lock, at most
//     three a day of at most 2 h each, 6 h a day, each followed by a
//     release as long), since state 1 is otherwise the grid operator's.
//     Minimum on and off times are not modelled: the site loop's guards
//     (consumer's minOnTime, minOffTime, maxSwitchesPerHour) still hold
//     every switch the plan asks for.
//
// Ties go the same way every time: self-consumption before hold before
// moving the battery, the earlier slot before the later. Flexible loads placed greedily against the
// first run's prices are not an optimum of the whole: the plan is a good
// schedule, and its cost against the baseline is what it claims.
//
// # Holds
//
// A slot where the battery neither charges nor discharges is one of two
// holds, told apart here because only the planner knows why it holds:
//
//   - keepRoom ([BatteryKeepRoom]): the slot's forecast has PV surplus
//     (PV above everything the plan places but the battery), the battery
//     has room and power to take it, and the plan exports it (or holds
//     it back) instead; since self-consumption wins a tie with hold, that
//     is a choice: storing now costs more than what the room earns later,
//     typically before hours of negative feed-in whose PV the battery
//     stores for free (TestHolds: a summer morning before 11–15 h at
//     −0.05 EUR/kWh). The site loop holds the battery at 0 W both ways,
//     so PV the forecast missed does not take that room either.
//   - hold ([BatteryHold]): every other such slot, mostly a deficit whose
//     import is cheaper than a later hour the stored energy is kept for
//     (TestHolds: a winter afternoon before the 17–20 h peak), or a full
//     battery. The plan wants no discharge; it does not need charging
//     blocked, so the site loop only keeps the battery from discharging,
//     and PV a wrong forecast did not foresee is stored, not exported.
//
// checkPlan holds every test's plan to the rule: keepRoom only with a
// forecast surplus and room, hold never where the plan turns away a
// surplus it could store.
//
// # Baseline
//
// The baseline is plantd without a plan: the heat pump in state 2
// throughout, the car charging at its maximum from the start until its
// target is in (evcc's "Now", what an owner does without a plan), the
// battery taking PV surplus and covering the house's shortfall (never
// from or into the grid), surplus exported at any price up to the export
// limit. Its end energy is valued as the plan's.
//
// # Figures
//
// BenchmarkPlan36h (144 slots from 13:00, a 10 kWh battery, a heat pump
// with the utilities' lock rules and a 4 kWh buffer, a car of 30 kWh by
// 07:00; a cheap night, a morning and an evening peak, negative feed-in
// at midday): 13.0–13.4 ms, 253,536 B in 23 allocations per plan (5 runs;
// 13–20 ms at load averages of 4 to 7) on the project's 2-core machine at
// a load average of 5.5 (budget: 50 ms, 5 MB). The programme's two runs
// take about half; the heat pump's rounds most of the rest.
//
// # Import boundary
//
// plan imports the standard library only: it takes numbers, not devices,
// tariffs or forecasts; the site loop converts the plant's config and
// state (a charger's currents × phases × voltage, a target SoC × the
// car's capacity, the must-run rules' energy) into an Input.
//
// Imports: plantd/plant
package plan
