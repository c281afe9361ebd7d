// Package eebus is plantd as the controllable system of the grid
// operator's control box (FNN Steuerbox) over EEBus, for §14a EnWG: the
// use cases LPC (limitation of power consumption) and LPP (limitation of
// power production) of github.com/enbility/eebus-go (usecases/cs/lpc and
// cs/lpp), over SHIP (TLS WebSockets) and SPINE.
//
// # Job
//
// A [Node] is the SHIP connection hub (ship-go's hub: the WebSocket
// server on the configured port, on every interface, and the client that
// dials a paired box) and the local SPINE device, an energy management
// system with one CEM entity that carries the use cases. Discovery is
// ship-go's mDNS as eebus-go's own service does it: avahi over D-Bus when
// it runs, else the Go zeroconf responder, announcing and browsing on
// every interface, or on eebus.interfaces when that lists some
// (NodeSpec.Peers replaces mDNS with known addresses: the tests on
// loopback). A node pairs only with the trusted SKIs (eebus.trusted); no
// pairing is ever approved at run time, and events of any other SKI are
// dropped and logged once (EEBusUntrusted), never acted on.
//
// plantd's certificate (SHIP's self-signed ECDSA P-256 with a subject key
// identifier) is made at the first start and kept in the state directory
// (the database's) as eebus.pem, 0600; `plantd eebus ski` prints its SKI
// for the installer to register with the box.
//
// # The one gate
//
// The [Service] is a door like the relay contacts (package gridinput):
//
//   - LPP: an active production limit is a grid-operator window of
//     FeedInLimit in W (or opModMaxLimW, eebus.productionCommand)
//     submitted through grid control's one gate (Gate: Submit, Cancel)
//     with the origin door eebus, the box's SKI, role gridoperator and a
//     channel of its own, "eebus:<ski>", so the most restrictive of every
//     grid-operator window governs and nothing loosens it; it is held
//     like an input's (a DELETE answers 409). A limit with a duration is
//     a window of that length; one without is a 24 h window renewed from
//     half of it. Its end or deactivation ends the window (Cancel).
//   - LPC: an active consumption limit goes to the energy manager
//     (Consumers: consumer.Manager.LimitConsumption), which keeps the
//     controllable consumers together at or below it, never below §14a's
//     minimum for their number, the rest of the house untouched.
//
// A written limit is approved or refused (EEBusLimitRefused) before the
// use case takes it: negative or not a number, above the nominal maximum
// reported to the box, or of a negative duration is refused. The nominal
// maxima (LPC/LPP scenario 4) are the controllable consumers' rated sum
// (Spec) and the inverters' rated sum as their discovery read it
// (Deps.ProductionNominal, asked before each decision of the loop, since
// the inverters are discovered after the start; a new sum is reported to
// the box when it changes and governs the next approval).
//
// # Failsafe and heartbeat
//
// The box's failsafe values (consumption and production limit, failsafe
// duration minimum) start as the config's and, once the box writes its
// own, are those, kept in eebus-state.json in the state directory
// (written atomically) and published again at the next start. Without the
// box's heartbeat for eebus.heartbeatTimeout (counted from the last one
// received, or from the connection of a box that has sent none since;
// a connection that drops does not reset it) the failsafe limits apply
// (EEBusHeartbeatLost, EEBusFailsafe) and hold at least the failsafe
// duration, also when the heartbeat returns sooner; then, with the
// heartbeat back, the box's limits govern again (EEBusRecovered). plantd
// starts in the failsafe state and leaves it when the box speaks (its
// first heartbeat or limit); but a restart within a lost heartbeat's
// failsafe duration resumes that failsafe (its start is kept in
// eebus-state.json while it holds), which then ends as it would have
// without the restart. A limit written while in failsafe is
// remembered and governs when the failsafe ends. Windows an earlier run
// left open are ended once this run holds its own decision.
//
// # Shown
//
// Service.Status is what cmd/plantd shows: GET /gateway/v1/inputs'
// eebus member and the Grid operator page, /metrics (plantd_eebus_*),
// Home Assistant's §14a consumption limit sensor. Every event above is a
// plant log entry (EEBus...), which the MQTT uplink carries in up/log;
// the production windows are schedules like any other (createdBy
// eebus:<ski>, role gridoperator).
//
// # Known limits of the stack (eebus-go v0.7.0, spine-go v0.7.0, ship-go v0.6.0)
//
//   - LPC and LPP share one LoadControl server feature, whose write is
//     done once both use cases approved it; spine-go counts those
//     approvals per SKI in a map that a second write in flight resets, so
//     a box that writes LPC and LPP at the same instant may see one of them
//     time out ("write not approved in time"). Boxes write one at a time.
//   - eebus-go registers a write's result callback after sending the
//     write: a box can miss plantd's quick answer (package controlbox
//     answers "ok -" then). plantd's side is unaffected.
//   - The use cases subscribe to spine-go's one global event bus: two
//     EEBus devices in one process see each other's events and the stack
//     races on them (the tests run the box in a process of its own).
//   - spine-go's event bus reads its subscriber list without its lock
//     while the local device's subscription is added at the first remote
//     device and removed with the last: Node keeps the local device
//     subscribed for good (keepSubscribed), so that list is not written
//     while connections come and go. Left: spine-go's DeviceLocal deletes
//     a removed remote device from its map without its lock, so a
//     connection removed while another of the same box is set up or
//     looked up (a double connection, a reconnect overlapping the old
//     connection's end) races on that map; with one box per gateway the
//     window is a few instructions, but it needs a fix in spine-go.
//   - The failsafe duration minimum is 2 h to 24 h (the use cases' range):
//     a shorter one in the config is published as 2 h.
//
// # Import boundary
//
// eebus imports gridcontrol (the gate's types: Origin, Order, Schedule),
// plant (log entries), internal/atomicfile (its state files), eebus-go,
// ship-go and spine-go, and the standard
// library. The config section is the leaf eebus/eebusconfig, which config
// imports; only cmd/plantd imports this package and wires it.
//
// Imports: plantd/gridcontrol, plantd/internal/atomicfile, plantd/plant
package eebus
