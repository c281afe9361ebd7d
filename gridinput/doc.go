// Package gridinput takes the grid operator's own channels: the relay
// contacts of a ripple-control receiver (Rundsteuerempfänger) or a control
// box (FNN Steuerbox) wired to the digital inputs of a Modbus I/O module,
// and turns them into ordinary grid-control schedule windows, so that
// eligibility, ramps, read-back, reversion, the plant log, MQTT and the
// schedule list apply to them as to any schedule.
//
// # Job
//
// For each configured input device a loop (Input.Run) reads its contacts
// every poll interval (1 s by default, wall clock) through the shared
// Modbus pool (a Reader: discrete inputs, function 2, or the bits of an
// input register), so it takes turns with the other devices on the
// endpoint. The contacts have names (K1..Kn) and the pattern table maps a
// set of closed contacts to an action: a limit, FeedInLimit or
// opModMaxLimW, in % of rated power or in W. Resolve decides:
//
//   - no contact closed, or a closed set whose action is 100 %: no limit;
//     the input's window ends;
//   - a closed set the table lists: its action;
//   - a closed set the table does not list (K1 and K4 of a 4-relay
//     receiver): an invalid pattern, logged as an error (InputInvalidPattern),
//     and the most restrictive action of any action naming one of the
//     closed contacts applies, never the least.
//
// Every action of one input (and its failsafe) has one command and one
// unit (the config checks it), so "most restrictive" is the lowest value.
//
// # Debounce
//
// With Spec.Debounce (config inputs[].debounce, default 0) a pattern, the
// closed contacts and the dimming signal together, acts only once it has
// been read unchanged for that time (debounce.go): a read of another
// pattern starts the count anew, so a chattering contact makes no window
// per flicker, and until a new pattern stands, what was decided before
// holds (renewed). The loop reads again when the count runs out, between
// two polls, so a change waits the debounce on top of its detection, not
// a poll more. After a failed poll a pattern waits it out again. With 0,
// a pattern acts at its first read. The config keeps it within the loss
// grace.
//
// # Latency
//
// A pattern that stands is submitted in the same step as the read that
// saw it, and the submit wakes grid control's cycle at once: the path from
// the read to the first inverter register written is a few milliseconds
// (BenchmarkInputEdgeToWrite in cmd/plantd, scripts/input-latency). What
// remains is detection: an edge waits for the next poll, uniformly 0 to
// PollInterval, a median of half of it. A median below 500 ms at a 1 s
// poll is therefore not to be had from polling (half the poll plus the
// processing); a shorter PollInterval is the honest lever.
//
// # Windows: submitted, renewed, released
//
// A change of the resolved action submits a schedule (Submitter.Submit)
// with one window of the action from "+0s" (the controller's clock) to
// Window later (24 h by default), created by "input:<id>/<contacts>"
// (K3, or K1+K4 for an invalid pattern, or failsafe) with the role
// gridoperator, and without the eligibility check: the operator's signal
// is stored even while an inverter is offline, and reaches it when it is
// back. Once the new window is stored, the input's previous one is ended
// (Submitter.End). While the signal stands, the loop renews the window
// from half its length on: a new one of the same action, then the old one
// ended; the limit is held all through, with no gap.
//
// When the signal ends, the input's own schedule is ended now
// (gridcontrol's Cancel), not overwritten by a release window: in
// grid control the newest schedule of a role overwrites the role's older
// windows for its whole span, and a schedule cannot end in the past, so a
// "100 %" window from the input (the only release a submit can carry)
// would also lift any older window the grid operator had sent over the
// API or MQTT for that span. Ending the input's own schedule lifts only
// what the input set; any other window governs again at once. Grid control
// then ramps the limit up at its rate. While the input's window is open it
// is the newest of its role, and within the grid operator's role the
// newest schedule wins (gridcontrol's rule); across roles the most
// restrictive limit still applies.
//
// A restart finds the windows its earlier run left open (Submitter.Open,
// by the creator's name "input:<id>/"); they stay until the contacts (or,
// with the module lost, the failsafe) decide, then are ended like a
// replaced window, so a signal that went while plantd was down does not
// hold its limit for the rest of its 24 h.
//
// A submit or end that fails (the store) is logged and tried again at the
// next poll: the loop acts on the difference between what it wants and
// what it holds.
//
// # Loss of the input device
//
// When polls fail, the last valid state holds for LossGrace (60 s by
// default, wall clock, counted from the last good poll, or from the start
// when there was none), then the failsafe action applies (a window
// created by input:<id>/failsafe), logged (InputLost as a warning, then
// InputFailsafe as an error); the config's default failsafe is the most
// restrictive of the input's actions, never no limit. A good poll again
// logs InputRecovered and the contacts decide again.
//
// # §14a dimming
//
// Contacts listed as dimming are not part of the patterns: any of them
// closed means the control box asks to dim the controllable consumers,
// passed on as Dimmer.Dim(plant, on) at every change (the consumers'
// controller applies Pmin). After the loss grace the dimming signal is
// taken as on (the restrictive reading) until the device answers again.
// A control box that only dims (dimming contacts, no pattern table) is an
// input of its own: it sets no feed-in window, and its loss sets no
// failsafe window, only the dimming.
//
// # Import boundary
//
// An input's section of the config file beyond the module's address,
// inputconfig.Settings (contacts, pattern table of inputconfig.Action
// rows, failsafe), with its defaults and its Validate, is in the leaf
// gridinput/inputconfig, which imports no transport; config.Input embeds
// it inline and calls Validate with the file's lines. The pattern table
// Resolve reads is of the same Action rows.
//
// gridinput imports plant (log entries), modbus (the reader of the I/O
// module), gridinput/inputconfig (the Action rows, the defaults) and the
// standard library. It knows nothing of grid control, the store or the
// consumers: it submits through its Submitter and dims through its
// Dimmer interface, both implemented in cmd/plantd, which wires it.
// Only cmd/plantd imports it; config imports inputconfig.
//
// Imports: plantd/gridinput/inputconfig, plantd/modbus, plantd/plant
package gridinput
