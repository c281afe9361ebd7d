// Package gridcontrol runs the grid operator's schedules on the plant's
// inverters: it validates and stores schedules, decides per command which
// inverters can carry it, and writes the SunSpec controls on time, with
// the fallbacks that keep a plant safe when something fails.
//
// # Commands and models
//
// Every command of the spec (§2.5) maps to writes of both platform
// generations, classic (12x/13x models) and IEEE 1547 (7xx):
//
//	command              classic                         DER
//	opModMaxLimW         123 WMaxLimPct, WMaxLim_Ena     704 WMaxLimPct, WMaxLimPctEna
//	FeedInLimit          the same limit, set by the loop below (needs a grid meter)
//	OpModDisconnect      123 Conn (classic systems only, as the spec says)
//	opModFixedPFInjectW  123 OutPFSet, OutPFSet_Ena      704 PFWInj.PF, PFWInjEna
//	opModFixedPfAbsorbW  (none: 123 has one PF)          704 PFWAbs.PF, PFWAbsEna
//	opModVoltVar         126                             705
//	opModVoltWatt        132                             706
//	opModFreqWatt        134 (points), 127 (params)      711 (params)
//	opModLvrtMustTrip    129                             707 (MustTrip)
//	opModHvrtMustTrip    130                             708
//	opModLfrtMustTrip    135                             709
//	opModHfrtMustTrip    136                             710
//
// A curve command carries points {x, y} in the units of the model (x = V
// in % of the reference voltage or Hz, or a trip time in s; y = var or W
// in %, or V in % or Hz; the reference is 121 VRef for the 12x/13x "%
// VRef", 702 VNom for the 7xx "VNomPct") and, for the parameter models
// (127, 711), params by point name. A curve with a voltage axis may send
// it in volts with the command's unit "V": it is converted for each device
// with that device's reference voltage, read when the curve is checked and
// when it is written, and range-checked in % there. One command may carry
// both points and params, each device taking the part its model has. Curves
// go into the last curve the device does not mark read-only. A 12x/13x
// model takes the curve, ActCrv, ModEna and RvrtTms in one write; a 7xx
// model gets the curve data first and the adopt request (AdptCrvReq /
// AdptCtlReq) with Ena and RvrtTms in a second write, so it never adopts a
// half-written curve. Values are checked against what each device reports
// before anything is written: rated power for a limit in W, the number of
// points a curve holds (NPt and the map), writable points and parameters.
//
// Eligibility (Eligible, and the API's eligibilityCheck): a command is
// eligible when at least one active, discovered, reachable inverter has a
// model that carries it and the platform rule allows it; FeedInLimit also
// needs a grid meter that answers. Offline capable inverters are named in
// a reason and get the command when they are back.
//
// A command may reach only part of a plant: OpModDisconnect only classic
// inverters, opModFixedPfAbsorbW only DER ones, a curve only inverters with
// its model. Assess answers per active inverter whether it acts and why
// not, the share of their rated power that acts (coverage) and partial.
// Submit stores such a command with its windows marked partial (coverage
// and inverters, judged again when the window is applied) and logs
// CommandPartial with the share it governs; the window's status keeps its
// meaning. With RequireAll (the API's requireAll=true) it is refused
// instead, also when the eligibility check is skipped.
//
// # Doors: one gate
//
// Every way into control reaches grid control through one typed call:
// Submit(ctx, plant, Origin, []Order) (SubmitJSON for a schedule body
// posted to the HTTP API), Cancel and Extend with the Origin. An Origin
// names the door, the identity at that door, the role it acts with and,
// for origins that are a precedence channel of their own, that channel;
// createdBy and the plant log show it as "door:identity (role)" (a token's
// name alone for the HTTP API). What each door may do:
//
//	door              identity                 role (default)         may                                never
//	HTTP API, OAuth   token or client name     the credential's       any command its role allows        -
//	cloud MQTT down/  the broker session       mqtt.remoteRole        schedules, consumer modes (as the  act without the broker's
//	                  "mqtt:<gatewayId>"                              API: its requests and answers)     authentication
//	Home Assistant    "ha:<clientId>"          installer              a FeedInLimit window, a consumer's gridoperator unless the broker
//	                                                                  mode                               connection has credentials;
//	                                                                                                     payloads over 64 KiB
//	SunSpec server    "modbus:<address>",      installer              an opModMaxLimW window of its own  end or renew another master's
//	                  which must be in allow   (gridoperator only     channel; end its own               window (ErrNotPermitted)
//	                  once writes are on       when configured)
//	device proxy      the master's address     -                      read; write only from allow, with  write a point plantd holds;
//	                  (allow)                                         writes on                          nameplate and settings models
//	                                                                                                     unless configured
//	inputs (relays)   "input:<id>/<contacts>"  gridoperator           windows that live while the        be ended by anyone else: a
//	                                                                  contacts demand them               DELETE answers 409 (ErrHeldByInput)
//	EEBus control box "eebus:<ski>", a        gridoperator           LPP windows of its own channel     act when untrusted; be ended by
//	                  trusted SKI                                     while the limit stands             anyone else (ErrHeldByInput)
//	energy manager    itself                   -                      consumers' setpoints               touch an inverter limit
//	day-ahead plan    "plan:<planner>"         standard, channel      battery setpoints (BatteryPower)   touch an inverter limit; export
//	(site loop)       (PlanOrigin)             "plan"                 of its channel: SetBatteryPower,   above a FeedInLimit (its
//	                                                                  ReleaseBatteryPower                discharge is capped)
//
// Channels: an input's windows and each Modbus master's are channels of
// their own within their role. Within a channel the newest window wins;
// across channels and roles the most restrictive limit governs (below), so
// no door loosens another's limit: a grid operator's window is loosened by
// nothing but its own end. A channel's windows are ended and renewed by
// that channel alone, except that the API's people may end a Modbus
// master's window within their role; an input's window is ended by its
// input only (when its contacts release it, or its failsafe), never by a
// DELETE, which answers 409 naming the input and its contacts (a caller
// below the grid operator's role gets 403 first, as for any grid
// operator's schedule). The energy
// manager (package consumer) never submits: it switches consumers. The
// day-ahead plan's battery setpoints (below, "Battery setpoints") go
// through the same gate with the standard role, below every installer's
// and grid operator's window: precedence in every cycle is grid
// operator's windows > installer's > the plan > surplus (DESIGN §6.2).
//
// # Schedules
//
// A schedule is {scheduleId, plantId, commands: [{command, start, end,
// value, unit, curve}], createdAt, createdBy}; start and end are RFC 3339
// with offset, years 2000 to 2099, or relative to the controller's clock
// when the schedule arrives ("+10s", "+1h30m": the simulated clock under
// plantd demo), stored as the times they name. ParseSchedule refuses, with every field
// named, malformed JSON, duplicate keys, unknown fields and commands,
// windows that end before they start or in the past, overlapping windows
// of one command in one schedule, and values out of range (limits 0..100 %
// or W, power factor (0, 1] without unit, curve x increasing, curve points
// within plausible ranges of their model's unit: Command.Axes, e.g.
// volt-var x 50..150 % and y -100..100 %, so that volts sent as per cent
// are refused with a hint to send unit "V").
//
// There is one timeline per command. Every start and end is an edge armed
// on the controller's clock (see Clock below) that wakes the control cycle. In each
// slice the newest schedule of a role wins, and a window every instant of
// which a newer schedule of the same role covers is reported superseded.
// Across roles a grid operator's window is mandatory: for the limits
// (opModMaxLimW, FeedInLimit) the most restrictive of the roles' windows
// governs (compared in W with the rated power of the inverters taking the
// limit), so an installer can tighten but never loosen an operator's
// limit; for the other commands, whose values have no order, the grid
// operator's window governs. An open window that does not govern is listed
// overridden, with overriddenBy naming the schedule that does; it governs
// again when that one ends. The role is the credential's (Schedule.Role;
// schedules stored before it are read from createdBy's "(role)"). A grid
// operator's input (package gridinput: createdBy "input:<id>/...") and
// each Modbus master of the SunSpec server is a channel of its own within
// the role (Schedule.Channel): its windows and the role's others combine
// as two roles' do (the most restrictive limit governs), so neither a
// newer API window nor a newer input or master window loosens the other;
// an input lifts its limit with Cancel, never with a window of its own.
// Back-to-back windows join: the control goes from one value to the next
// without the default in between. Across commands, the lowest active-power
// limit wins (opModMaxLimW and FeedInLimit) and a disconnect holds whatever
// the limit. Schedules and their status (pending, active, done,
// superseded, overridden, failed with the reason; appliedAt once every
// inverter that carries the command took it, late when more than 5 s after
// the start, naming the devices)
// are stored in SQLite and survive restarts: a window open at boot is
// applied at once, one that closed meanwhile is not replayed. Finished
// schedules (every window ended, cancelled or superseded) stay listed for
// 7 days; a plant keeps at most 200, the oldest finished going first, and
// a schedule that would exceed that with schedules still pending is
// refused. Only a grid operator's may take the last 50: no other door (the
// API's installers, a Modbus master, the cloud) can fill the plant so that
// the operator's next limit is refused.
//
// # Recurring windows and the audit
//
// A command may carry repeat, a cron spec of five fields (robfig/cron's
// standard fields, no descriptor such as @every or @daily: those are
// refused naming the five-field form; UTC unless it starts with
// CRON_TZ=<zone>), with duration instead of end and optionally until and
// start: a window of that length starts at each time the spec names, none
// at or after until, none before start; without start the window open now
// counts. On the days the zone's clock changes (recurSpec), a spec that
// names particular hours runs each start once: one in the hour the clock
// skips (Europe/Berlin: 02:00 to 02:59 on the last Sunday of March) at the
// first valid time, the change itself (03:00), however many starts that
// hour held; one in the hour the clock repeats (02:00 to 02:59 on the last
// Sunday of October) at its first pass only. A spec of every hour (hour
// field *) keeps real time: the repeated hour's starts twice, none in the
// skipped one. ParseSchedule refuses a bad spec, a duration under 1 s or
// longer than the spec's period (the shortest gap of its next 64 starts
// and of its starts around each clock change within a year, so the
// windows of one command never overlap; at noon the spring-forward day is
// 23 h), end given with repeat, a spec with no start before until, and a
// recurring command beside other windows of its command in its schedule,
// each on its field. A descriptor stored before they were refused starts
// no further window. Expansion is lazy and on the controller's clock: the command
// holds one window (Start, End: open now or next), an ordinary window for
// the timeline, precedence, ramps, reversion, statuses and logs; the
// cycle (advance, recurring.go) files it under Finished when it ends and
// moves it on to the next occurrence, re-arming the boundaries
// (RecurringWindowEnded in the plant log). Missed occurrences (plantd
// down) are not replayed. Memory per command is one window ahead plus
// the finished ones of KeepFinished, at most 200. Each occurrence keys
// the controls' state by its start, so back-to-back occurrences are
// separate windows. Cancel ends a schedule: open windows end now, pending
// ones and later occurrences never start (Cancelled); a credential
// cancels schedules of its role or a lower one. Extend moves an open
// window's end later (a master renewing its limit: package sunspecserver),
// under the same role rule, without a new schedule or log entry.
//
// Every write that sets a window's control on a device (the first, a new
// value, a new window; not the renewals) is filed with the window
// (Writes, at most 32, the last slot the latest): the device, model, the
// top-level points the write set with their values and the values read
// back right after, and when. They are stored in the schedule's record,
// so they survive a restart, and listed with IncludeFinished (the API's
// include=finished).
//
// # Defaults, ramps and reversion
//
// At first contact the controller reads every control model of each
// inverter and stores the image (store: control_default); that is the
// default it restores after the last window, never "100 %": an installer's
// permanent 70 % limit survives plantd. After a window every writable
// register plantd touched reads as in that image, bit for bit. A 7xx
// curve model takes three writes for it, since its curve 1 (the one in
// effect) changes only by adoption: curve 1's default goes into a
// writable curve (the one the adopt request named at first contact if
// that is writable, else plantd's own), which is adopted with the header
// (Ena, RvrtTms, RvrtCrv...) as it was; then that curve gets its own
// default back and the adopt request (AdptCrvReq, AdptCtlReq) its value
// as read, when writing it adopts nothing unwanted: 0 is no request, and
// an index is written only when its curve now equals curve 1. A device
// that clears its request itself after adopting is left to do so; a
// request that cannot be put back without adopting other contents is left
// at the index plantd adopted and logged (GridControlRestoreNote). gridControl.defaults.powerLimitPercent
// in the config replaces the device's own limit as the default, and is
// then held and renewed like a command. While no window is active and
// plantd holds none of an inverter's controls, the cycle leaves the
// inverter alone and its default image stays in the store only, loaded
// again when a window needs it.
//
// A tighter limit is written at once; a looser one, the end of a window
// included, ramps at gridControl.rampRatePercentPerSecond (10 % of rated
// power per second by default): nothing moves at the moment the target
// rises, then the limit climbs one cycle's worth of the rate at a time,
// each step at least a cycle after the last reached the device, so the
// rise over any second stays within the rate and an ending window causes
// no feed-in peak. Never above the device's default. After a restart the
// controller reads the limit each inverter holds and continues from it: an
// equal or tighter value stays (and ramps up from there), a looser one is
// tightened at once; it never assumes a value it did not read.
//
// Each cycle reconciles the devices side by side (at most 64 at once)
// and waits for them at most Config.DeviceWait (a cycle, at most an
// eighth of the reversion timeout): a device that answers slowly finishes
// in the background and is left out of the cycles until it has, so that
// it never delays the other devices' renewals, ramps and FeedInLimit
// steps.
//
// Every control written carries its reversion timeout
// (gridControl.reversionTimeout, 60 s): 123 *_RvrtTms, 704 *RvrtTms, the
// curve models' RvrtTms. It is renewed from half of it on while the
// command is due, by writing the setpoint and its timeout again even when
// unchanged (a write that changes no register would not reach the device,
// whose timer would revert the control inside its window); a 7xx curve is
// renewed by its adopt request. On 704 the stored reversion values
// (WMaxLimPctRvrt, WMaxLimPctEnaRvrt, PFWInjRvrt...) are programmed to the
// default (or the configured default where tighter), so an inverter whose
// gateway died goes back to the installer's limit, not to "unlimited". A
// classic 123 inverter has no such values: its reversion disables the
// limit (100 %). Where its default is a limit (an installer's permanent
// one, or the configured default), plantd therefore writes its limits
// without a reversion time: a dead gateway leaves the window's value,
// between the window and the installer's limit (the safe side), until
// plantd runs again; the plant log says so once per device
// (LimitWithoutReversion). Where its default is no limit, the reversion
// lands on it and the timeout is written as for 704.
//
// # Safety
//
//   - Ownership: plantd writes only the points of the controls it drives
//     and records, before writing, that it owns them (store:
//     control_owner), so a restart restores exactly those; it restores a
//     control from the stored image of the points it owns, nothing else.
//   - Read-back: every write reads the model back (sunspec.WriteModel); a
//     refused or different value is an error. Refusals are retried with
//     backoff (1, 2, 4 … 30 s); after 3 refusals the command is marked
//     failed, with the device's answer, in its status and the plant log,
//     and retried still.
//   - Held controls are re-asserted (tamper.go). Every control cycle, for
//     each control plantd holds in a model the poll reads, the device's
//     latest poll is compared, register by register, with what plantd's
//     last write of that control read back: on 123 the limit
//     (WMaxLimPct, WMaxLimPct_RvrtTms, WMaxLimPct_RmpTms, WMaxLim_Ena),
//     the connection (Conn, Conn_RvrtTms) and the power factor (OutPFSet,
//     its RvrtTms, RmpTms and Ena); on 704 the limit (WMaxLimPct,
//     WMaxLimPctEna, WMaxLimPctRvrtTms, WMaxLimPctRvrt, WMaxLimPctEnaRvrt)
//     and each power factor (PFWInj/PFWAbs PF, the reversion PF,
//     RvrtTms, EnaRvrt, Ena). The poller reads 123 and 704 anyway, and
//     plant.Live keeps a copy of their registers from each successful
//     poll, numbered (Live.PolledRegs): a device polled at least once a
//     cycle costs no Modbus request of its own. A cycle that finds no
//     poll newer than the one it judged last reads the held model itself,
//     at most once a second per model (heldReadEvery;
//     plantd_gridcontrol_held_reads_total), so a device polled every 5 s
//     (the default) is still looked at every second while plantd holds a
//     control on it, about four reads in five seconds per held model.
//     Such a read comes after plantd's own writes (the cycle made them)
//     and must show the latest.
//     The numbers keep plantd's own writes from counting: a device's
//     polls never overlap, so the second poll applied after a write
//     began after it and must show that write; the one before it may
//     show that write or the one before (a ramp step, a renewal, the
//     FeedInLimit loop's next value: what plantd wants is the value it
//     last wrote, during a ramp the step, not the target); after an
//     enable toggle, or a rewrite of a foreign value, it is not judged.
//     A reversion time that reads lower than written is no difference
//     (devices that count it down in place). A difference is written
//     again in the same cycle, the whole control as a renewal writes it
//     (the enable toggled too on a device that needs it; the follow
//     check counts again from there); the first difference of an episode
//     is logged, once (ControlTampered in the plant log and a warning:
//     device, control, model, each point with the value found and the
//     one wanted), and counted (Stats.Tampered,
//     plantd_gridcontrol_control_tampered_total by device); the episode
//     ends at the first poll that reads back as written (an info line).
//     Between cycles a watcher looks at the latest polls every quarter
//     of a cycle and wakes the cycle on a difference, so a foreign value
//     is gone within one poll interval (or the second between the
//     cycle's own reads, whichever is shorter), a quarter cycle and the
//     write: 1.04 to 1.08 s with the poll and the cycle at 1 s, 1.02 to
//     1.12 s with a 5 s poll and a 1 s cycle, 0.19 to 0.28 s at 250 ms
//     and 200 ms (TestTamperedLimitReasserted). The check
//     costs 144 ns per inverter and cycle (a 704 limit; 243 ns for limit,
//     connection and PF on a 123), the watcher 11 us per look at 100
//     inverters, no allocation (BenchmarkCheckHeld,
//     BenchmarkHeldDiffers100): 60 us per second at 100 inverters.
//     The curve models (126, 127, 129, 130, 132, 134, 135, 136 and
//     705 to 711) are not polled, so not compared: reading them every
//     poll would add a request or more per device and poll. A curve
//     plantd holds is written again at each renewal (half the reversion
//     timeout; a 7xx curve by its adopt request, which adopts what its
//     writable curve then holds), and a device proxy refuses writes to
//     it (HeldModels).
//   - Devices that ignore RvrtTms: a 704 device whose WMaxLimPctRvrtRem
//     does not count down between two writes is logged once
//     (ReversionIgnored): such a device keeps its limit if plantd stops.
//   - Devices that take a new limit only when its enable goes from 0 to 1:
//     every cycle while plantd holds a limit, the inverter's output (its
//     latest poll, no extra Modbus traffic) is compared with it, from two
//     cycles after each change on; an output above it on two samples in a
//     row (the register having read back right) makes plantd toggle the
//     enable off and on, record the device in the store (device_quirk, so
//     a restart toggles with its first write) and log
//     LimitNeedsEnableToggle once. Such a device is toggled with every new
//     value; the limit is then off for one Modbus round trip, far shorter
//     than an inverter's power response. Checked all through the window,
//     not once: a device under clouds at the change shows it when the sun
//     returns. An output still above the limit 30 cycles after the toggle
//     is a device that does not follow its limit: LimitNotFollowed in the
//     plant log, the limit's windows failed (never done), and
//     plantd_gridcontrol_devices_not_following in /metrics, until it
//     follows again (LimitFollowedAgain).
//   - A device offline at a window's start gets the command in the first
//     cycle after it answers again (the cycle looks again every tenth of a
//     cycle while a window waits for a device); the command is marked late.
//   - Loss of the operator link: schedules are stored and run locally; the
//     last one runs to its end, then the default applies.
//   - A dead gateway: the devices' own reversion timers take over (above).
//
// # FeedInLimit
//
// A loop on the grid meter, once per cycle (1 s): it reads the meter's
// grid power and the output of the inverters taking part directly over
// Modbus, computes the PV power that keeps the export at the limit
// (pv + grid + limit, i.e. consumption plus the allowed export), and gives
// every inverter the same share of its rated power; the ramp applies as
// for any limit, tighter at once. A battery in self-consumption mode holds
// the meter at 0, so the meter alone would freeze the loop wherever PV
// stands; the batteries' power and SoC from the live state (battery
// devices and hybrid inverters) go in too:
//
//	PV target = pv + grid + discharge + room + limit
//
// The battery's discharge is load that PV could serve; room is how much
// faster the batteries could charge (their rated power, 802 WChaRteMax or
// 124 WChaMax as discovered, less their charging now; 0 at 99 % SoC or
// more; unknown rating: the step), at most a tenth of the inverters'
// rating per cycle (the step). PV so raised that shows at the meter as
// export above the limit (plus 1 % of the rating, at least 100 W) instead
// of in the battery stops the raises for 30 s (batteryFullHold), doubled
// for each refusal in a row up to 8 min. The price of that probe is an
// export above the limit for about a cycle at each refusal (one of 1.8
// kW for 0.2 s in 40 s with a battery that stops charging:
// TestFeedInLimitBatteryRefuses), and the battery's values are its last
// poll's while the meter and PV are read in the cycle: a discharge that
// ended since is still counted until the battery's next poll (poll a
// battery as often as the meter where the grid operator's limit is
// tight). Consumers get PV the limit holds
// back through the energy manager (package consumer), which switches one
// on at a time to try it; its draw then shows as import and the loop
// raises PV for it. Worked example, FeedInLimit 0 % on the demo at a
// summer noon (16 kW to be had, 18 kW rated): PV 6.0 kW carries the
// house's 1.0 kW and the battery's 5.0 kW (its rating), the meter at 0.
// The house's load rises by 8 kW: the battery now discharges 3.0 kW and
// the meter still shows 0 (a loop on the meter alone keeps PV at 6.0 kW).
// The next cycle's target is 6.0 + 0 + 3.0 + 1.8 (the step; the room is
// 5.0) = 10.8 kW: the battery charges 1.8 kW, then 3.6 kW, then 5.0 kW at
// PV 14.0 kW, the meter near 0 throughout (TestFeedInLimitBattery: 6.0 to
// 14.0 kW within a second, the export at most 0.2 kW, the ramp
// permitting). The energy manager is told the batteries' power and SoC
// with the meter's power, and PV a FeedInLimit holds back only up to an
// opModMaxLimW cap: PV the cap holds back is no surplus.
// If the meter does not answer, the last limit holds for
// gridControl.meterLossGrace, then the inverters step down to the export
// limit itself (as if the plant consumed nothing): never open. Without a
// grid meter the command is not eligible (NoGridMeter).
//
// # Battery setpoints
//
// BatteryPower is plantd's own command, not one of the spec's: a
// battery's charge or discharge power in W, positive discharging,
// negative charging (from the grid too), 0 holding its state of charge
// (neither way); or, with unit noDischarge (UnitNoDischarge), no
// discharge while PV surplus still charges it (124 StorCtl_Mod 2,
// OutWRte 0, ChaGriSet PV; 802 SoCRsvMin at the SoC, SocRsvMax the
// battery's own). Windows stored with unit W (all before noDischarge
// was added) keep their meaning: 0 W is the full hold. The site loop's
// plan sets it with
//
//	SetBatteryPower(ctx, PlanOrigin("day-ahead"), plantID, watts, until) (Schedule, error)
//	SetBatteryNoDischarge(ctx, PlanOrigin("day-ahead"), plantID, until) (Schedule, error)
//	ReleaseBatteryPower(ctx, PlanOrigin("day-ahead"), plantID) error
//
// and it is a window like any other (one mechanism): stored (a restart
// holds it again from its first cycle), armed on the clock, its writes
// audited, held, renewed, re-asserted and restored. The API does not take
// it (not in Commands, eligibleCommands or a POST), and Schedules lists
// its schedules only with BatteryWindows, so the API's schedules keep the
// spec's commands and roles. The same watts (and unit) again extends the
// open window; other watts or the other unit replace it (a new schedule, the older cancelled);
// a channel keeps its newest 16 finished ones, so a plan changing every
// 15 minutes does not crowd the grid operator's schedules out of
// MaxSchedules. The plant log says BatterySetpoint (the value, who, until)
// and BatterySetpointReleased; GridControlWrite names each battery's first
// write of a window and GridControlRestored its end; /metrics has
// plantd_gridcontrol_battery_setpoint_watts (what plantd wrote, after a
// cap) and ..._asked_watts per battery (BatterySetpoints).
//
// The origin PlanOrigin is door plan, role standard, channel "plan":
// across roles the higher role's BatteryPower window governs (an
// installer's over the plan's; the grid operator sends none), and no
// battery setpoint loosens a grid operator's FeedInLimit: while one is in
// force, a discharge is capped each cycle at what the batteries do now
// (what plantd last wrote, else their live power) plus the room the
// meter shows (the limit + the grid's import, read by the FeedInLimit
// loop in the same cycle); no room is added while that loop holds PV back
// (the inverters within 10 % of their limit, as surplus judges it), so
// PV serves the house first and the battery keeps its energy, and none
// without a meter reading. The FeedInLimit loop leaves the batteries
// carrying a BatteryPower window in W out of its battery terms (their
// discharge is no load PV could serve, their room no room to probe; a
// no-discharge window's batteries stay in them: they take PV surplus by
// themselves), and
// in the cycle a hold or a discharge is first written it lowers PV by
// what those batteries charge now (that power would otherwise show as
// export until the next cycle). A change of the cap smaller than half a
// percent of WChaMax (below 124's 1 % step) is not written.
// TestBatteryDischargeCappedByFeedInLimit: 5 kW forced at night, the
// operator's FeedInLimit 0 W: export at most 10 W over 5 s, the battery
// covering the house's 0.35 kW. TestBatterySetpointUnderFeedInLimit: at
// a summer noon under FeedInLimit 0 % with the battery charging 5 kW, a
// hold and a discharge of 5 kW leave the battery at 0 W and PV at the
// house's 1.0 kW, a charge of 4 kW PV at 5.0 kW, no discharge the
// battery still charging 5 kW, the export at most 9 W per cycle.
// TestBatteryNoDischarge: on a battery with 124 and one with 802 only,
// no discharge at a summer noon charges 5 kW from PV, at night with the
// house drawing 5 kW more stays at 0 W (the meter carries the house); a
// full hold at noon stays at 0 W.
//
// Carriers are the active batteries and the hybrid inverters with 124,
// which share the plant's setpoint by rated power. On 124 (the
// convention of Fronius GEN24's SunSpec storage control: a negative
// OutWRte is a charge the battery must take, a negative InWRte a
// discharge it must give; evcc's fronius-gen24 template, for one, charges
// with ChaGriSet 1, StorCtl_Mod 2, OutWRte -rate and discharges with
// StorCtl_Mod 3, InWRte -100, OutWRte 100, but writes InOutWRte_RvrtTms
// 0, no reversion), with p = watts / WChaMax × 100:
//
//	discharge p   StorCtl_Mod 3, InWRte -p, OutWRte p
//	charge p      StorCtl_Mod 3, InWRte p, OutWRte -p, ChaGriSet 1 (GRID)
//	hold          StorCtl_Mod 3, InWRte 0, OutWRte 0
//
// each with InOutWRte_RvrtTms = gridControl.reversionTimeout (renewed at
// half of it, so a battery whose gateway died goes back to its own
// self-consumption by its timer) and InOutWRte_WinTms, InOutWRte_RmpTms
// 0 (at once). ChaGriSet keeps the default's value except for a charge.
// Held points (checkHeld): StorCtl_Mod, InWRte, OutWRte, ChaGriSet and
// the three timers. 802 alone has no power setpoint: a battery with 802
// and no 124 takes only a hold, as its reserve bounds SoCRsvMin =
// SocRsvMax = its SoC at the window's first write (held, so another
// master moving them is written back); any other value fails on it at
// once (errUnsupported: the window failed, GridControlWriteFailed,
// nothing written). 802 has no reversion timer: a killed plantd leaves
// those bounds until it runs again (a clean stop restores them; CtrlHb is
// not written, no device's reaction to it is assumed). 713 is read-only.
// 124 and 802 are not among the models the poll keeps for grid control
// (123, 704), so the cycle reads a held battery model itself, at most
// once a second: another master's OutWRte was written over 1 ms to 1.24
// s after it (TestBatteryTamperedRewritten), an 802 SoCRsvMin 217 ms
// after (TestBattery802Hold). The window's end (or a
// release) restores the points plantd wrote from the default image read
// at first contact; so does a clean stop (Run returning: a battery is not
// left forcing a charge until its timer runs out). Killed, plantd writes
// nothing: TestBatteryRevertsWhenPlantdKilled (a 3 s reversion) sees 124
// back at StorCtl_Mod 0 and the battery covering the house 3.0 s after
// the kill.
//
// # Settings
//
// Settings reads, for one settings type of the spec, the configuration in
// effect on every inverter now: the limit, fixed power factor or curve
// with its enable, per device, and whether plantd holds it. A
// configuration no inverter has enabled answers its Deactivated form
// (FixedActivePowerLimitDeactivatedConfig, ...); the ride-through curves,
// which have no such form, answer ...DeviceDefault.
//
// # Clock
//
// Config.Clock is the one clock of the controller: schedule validation,
// the control cycle's cadence, ramps, renewals, the follow check and the
// window edges. One mechanism finds the edges on every clock, the
// system's (the default, plantd run), the demo's simulated plant clock
// (FuncClock) and a test's stepped one alike: the controller keeps its
// armed edges (a robfig/cron Schedule each, whose Next gives the times,
// and the job that marks the edge for the latency figures), and the run
// loop waits on one timer of the clock for the nearest edge, the next
// cycle or a ramp step, whichever comes first, never longer than a cycle.
// At every wake it fires each edge the clock passed, once and in time
// order, before the cycle judges the windows at the clock's now: a clock
// stepped by an hour (a DST change, a stepped test clock) or a machine
// back from suspend fires every edge it passed, once, within a cycle of
// waking. An edge armed while the loop waits (a schedule submitted)
// before its timer kicks the loop, which arms again. robfig/cron's own
// runner is not used: a test that steps an hour's window through in a
// second of simulated time runs the code plantd runs.
//
// # One schedule's walk
//
// A schedule posted to POST /gridcontrol/v1/plants/{plantId}/schedules
// passes these places, once each, in this order, as one plant.Schedule
// (package plant's type, aliased here as Schedule) from the
// handler to the store, never re-encoded by hand:
//
//  1. httpapi: the router (routes.go) runs requestID, metrics, recoverer,
//     accessLog and bodyLimit, then auth.Authenticate and
//     auth.Need(installer) (package httpapi/oauth2: a token's or OAuth
//     client's role) and resolvePlant (a migrated id answers 308).
//  2. httpapi.Server.postSchedules (httpapi/gridcontrol.go): the query
//     flags, readJSONBody, oauth2.Caller for the Origin.
//  3. gridcontrol.Controller.SubmitJSON (submit.go) and ParseSchedule
//     (schedule.go): jsondup.Check, the strict decode, validate and
//     checkCommands give the []ScheduledCmd.
//  4. Controller.submit (submit.go): assessAll and check (commands.go's
//     Assess; a curve tried on the devices' default images), markCoverage,
//     the Schedule made (id, createdAt, createdBy, role, channel), prunable
//     and forget.
//  5. Controller.persist: plant.Schedule.Clone under the lock, then
//     store.Store.PutSchedule (store/logs.go) encodes it (json.Marshal)
//     into the schedule table.
//  6. Controller.arm (controller.go): an edge (clock.go) at each of its
//     window starts and ends, the loop kicked when one comes before its
//     timer; view makes the 201 answer, which postSchedules writes
//     through httpapi's envelope; wake starts a cycle.
//  7. Controller.loop and cycle (controller.go), at the edge's time or the
//     next cycle: step finds with activeAt (schedule.go) the window that
//     governs each command; plan; reconcile (device.go) per inverter.
//  8. For a limit reconcileLimit and writeLimit (limit.go), editLimit
//     (controls.go) on the model's image (the other commands:
//     reconcileControl, editPF, editCurve, ...).
//  9. sunspec.WriteModelRenew (sunspec/write.go): the changed registers of
//     the image, written through the device's sunspec.ReadWriter, then
//     read back.
//  10. modbus.Client.WriteRegisters (modbus/client.go), the ReadWriter
//     cmd/plantd hands grid control (Conns): function 16 on the wire, the
//     register write. settle then marks the window applied and the
//     persister (persister.go) stores it again, off the cycle: the cycle
//     never waits for the store on its way to the devices (a store that
//     stalls past the reversion timeout would let the inverters revert).
//
// At a restart the store gives the Schedules back (store.Store.Schedules)
// and Run's load step holds them again as they were stored.
//
// # Files and imports
//
// controller.go runs the loop (load, restore, arm, the cycle, plan of a
// plant);
// schedule.go parses schedules and resolves the timeline (roles,
// superseded); submit.go takes and lists schedules; recurring.go the
// recurring windows, Cancel, Extend and the audit of writes; device.go holds an
// inverter's controls, writes with read-back and restores; persister.go
// stores the statuses the cycle changed; limit.go the
// active-power limit (restart, ramp, reversion, follow check); feedin.go
// the FeedInLimit loop; battery.go the battery setpoints (SetBatteryPower,
// the plan's origin, the FeedInLimit cap, the 124/802 edits); controls.go
// the register edits per model;
// commands.go the command table and eligibility; settings.go the settings
// read-out; held.go which models of a device it holds (for a device's
// Modbus proxy); tamper.go the comparison of what it holds with the
// polls (re-assertion); governing.go the limit in force (for the SunSpec
// server's reads); clock.go the clock and the armed edges. gridcontrol
// imports config (defaults and role names), sunspec (models, writes with
// read-back, exception answers; a device's discovered description comes
// as plant.DeviceLive.Discovered, which plant carries opaque and
// discovered.go's sunspecOf asserts back to a *sunspec.Device: plant does
// not import sunspec, grid control imports neither devices nor modbus),
// internal/backoff (the write retry's wait), internal/jsondup (a key
// given twice in a schedule), plant and plant/kind (the
// live state and its types, a device's communication state, log entries,
// the schedule type plant.Schedule), store (schedules, defaults,
// ownership, quirks, the plant log), robfig/cron (its spec parser and
// Schedule, not its runner) and the standard library; only cmd/plantd,
// httpapi and eebus (a control box's door, through the same gate) import
// it.
//
// Imports: plantd/config, plantd/internal/backoff, plantd/internal/jsondup, plantd/plant, plantd/plant/kind, plantd/store, plantd/sunspec
package gridcontrol
