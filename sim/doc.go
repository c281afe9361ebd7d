// Package sim is the simulated PV plant: real SunSpec Modbus TCP servers
// with physics and fault injection, for the demo and for tests.
//
// A Plant holds devices of the four SunSpec kinds (plantd/plant/kind), an
// inverter either classic or DER (DeviceConfig.DER), each speaking the
// SunSpec map of a real device at base 40000 (SunS marker, models back to
// back from 40002, end marker 0xFFFF 0), relay boards with the loads
// they switch, Shelly plugs and OCPP charge points with a car (below):
//
//	kind          models                                                  Md
//	inverter      1 103 120 121 122 123 126 127 129 130 132 134 135 136  SIM-INV-10K
//	inverter DER  1 701 702 704 705 706 707 708 709 710 711              SIM-DER-8K
//	meter         1 203                                                   SIM-METER-3P
//	battery       1 124 713 802                                           SIM-BAT-10
//	battery DER   1 713 802 (DER storage: no 124, no power setpoint)      SIM-BAT-10
//	sensor        1 308                                                   SIM-WX
//
// Model 1 says Mn "plantd", Vr "1.0.0", SN "SIM-<id>", DA = the unit id.
// Curve models hold plausible EN 50549 / IEEE 1547 style curves of 4
// points: two curves in 126, 132 and 705, one in the others (134 with two
// would exceed the 125 registers of one read).
// Every point the simulator does not fill holds its not-implemented value
// (0x8000, 0xFFFF, NaN, 0 for accumulators); accumulators it fills never
// read 0. Scale factors keep values inside their types (W_SF 0, A_SF -2,
// V_SF -1, Hz_SF -2 or -3).
//
// # Physics
//
// Nothing ticks: on each request the plant integrates its state from the
// last request to the current simulated time (sim time = Config.Start +
// elapsed wall time × Config.Speed, with the wall clock Config.Now), in
// steps of at most a minute, and renders the device's registers. Every
// value is a deterministic function of the location, the clock, the
// writes received and the scenario hooks (below):
//
//   - the sun: elevation from declination, hour angle and the equation of
//     time; Haurwitz clear-sky irradiance; a cloud term fixed per local day
//     (off with Config.ClearSky); ambient and module temperature, wind;
//   - inverters: PV available = 1.1 × rating × GHI/1000 × temperature
//     derating × losses × efficiency, capped at the rating and WMax; AC
//     output = min(available, limit), the limit being the effective
//     active power limit of the grid controls (below). Below 15 W an
//     inverter sleeps (103 St 2, 701 St off / InvSt sleeping, DC values
//     not implemented);
//   - load: a household profile of a few hundred watts with morning,
//     midday and evening peaks in the plant's time zone;
//   - batteries charge from the surplus and cover the deficit up to their
//     rating (self-consumption), within the power window of 124's storage
//     control (below: a forced charge from the grid, a forced discharge,
//     a hold), between the SoC bounds (5..100 %, raised by 124 MinRsvPct
//     and 802 SoCRsvMin, lowered by SocRsvMax; the power tapers to reach
//     a bound in about 5 minutes, whatever was asked), 96 % efficient each
//     way; 802 SetOp 2 disconnects. 802 W and A are positive while
//     discharging, like 701 W for generation; the meter sees what the
//     battery takes from or gives to the grid;
//   - the meter: W = load - PV - battery (positive = import from the grid,
//     the SunSpec meter sign), TotWhImp/TotWhExp integrate it; a sub-meter
//     (DeviceConfig.Measures) shows one load's draw instead, VAr 0;
//   - the switchable loads (Config.Loads) add their draw to the load, from
//     the coils of their relay board at each instant (below);
//   - template devices (DeviceConfig.Template: a device family of
//     plantd/devices/template, such as an Eastron meter or a Huawei
//     inverter) serve that template's register image on holding and input
//     registers, read-only: a meter mirrors the grid connection, an
//     inverter makes power from the weather (plus, for a hybrid, a battery
//     following the plant's surplus), a battery follows the surplus within
//     its rating; they do not enter the balance. Identification points
//     hold what the template's identification expects, nameplate points
//     the template's vendor and model and the device's serial.
//     Device.TemplateValues returns the image as the template decoder
//     reads it. The Eastron meters' twins (sdm630, sdm120, sdm72) also
//     answer every input register of the vendor's full map (eastron.go,
//     EastronRegisters), as a real meter does for other readers such as
//     mbmd.
//
// Plant.Balance returns the same numbers the registers show; Device.State
// and Device.Writes expose a device's state and the writes it accepted.
//
// # Grid controls
//
// Every control a write touches takes effect at the simulated instant of
// the write; every reversion timer runs on the simulated clock (Speed
// applies) and expires at its exact time, also while the device is
// offline (FaultOffline), as a real device's own timers would.
//
//	123 WMaxLimPct, WMaxLim_Ena   the limit in % of 121 WMax when enabled;
//	                              100 % when disabled
//	123 WMaxLimPct_RmpTms         the limit moves linearly from where it
//	                              is to the new value (or to 100 % when
//	                              disabled) over RmpTms seconds, 0 = at
//	                              once; RmpTms written at the instant of
//	                              the setpoint, or during its ramp, times
//	                              that ramp
//	123 WMaxLimPct_RvrtTms        > 0, written with the limit enabled:
//	                              the limit reverts (Ena 0, 100 %, at
//	                              once) that many seconds after the write
//	123 OutPFSet, OutPFSet_Ena    fixed power factor: 103 VAr = W ×
//	                              tan(acos |PF|), negative PF absorbing,
//	                              103 PF shows it; _RmpTms ramps the
//	                              VAr/W ratio, _RvrtTms reverts (Ena 0)
//	123 Conn, Conn_RvrtTms        0 disconnects (W 0, St standby);
//	                              RvrtTms reconnects
//	123 *_WinTms, VArPct_*        stored and read back, no effect (no
//	                              random window delay is simulated)
//	704 WMaxLimPctEna/WMaxLimPct  the limit in % of 702 WMax, at once;
//	                              WMaxLimPctRvrtTms starts a timer shown
//	                              in WMaxLimPctRvrtRem, whose expiry
//	                              applies WMaxLimPctRvrt and
//	                              WMaxLimPctEnaRvrt
//	704 WSetEna, WSetMod, WSet,   an active power setpoint (WSetMod 0:
//	    WSetPct                   WSetPct in % of WMax, 1: WSet in W)
//	                              that caps the output like a limit;
//	                              WSetRvrtTms/WSetRvrtRem revert to
//	                              WSetRvrt, WSetPctRvrt, WSetEnaRvrt
//	704 PFWInjEna, PFWInj.PF/Ext  fixed power factor while injecting
//	                              (Ext 1, under-excited, absorbs VAr):
//	                              701 Var and PF; PFWInjRvrtTms/RvrtRem
//	                              revert to PFWInjEnaRvrt and PFWInjRvrt
//	704 PFWAbs*                   the same points and reversion, stored
//	                              only: a PV inverter never absorbs W
//	704 VarSet*, WRmp, VarRmp     stored and read back, no effect
//	126 127 129 130 132 134 135   curve points, ActCrv, ModEna and the
//	136 705 706 707 708 709 710   other header points are stored and
//	711                           read back exactly; RvrtTms (126-136
//	                              except 127; 705, 706, 711 with RvrtRem
//	                              counting down) switches the mode off
//	                              (ModEna bit 0 / Ena 0) on expiry, the
//	                              curves kept; 7xx AdptCrvReq (711
//	                              AdptCtlReq) answers AdptCrvRslt 1
//	                              completed for 1..NCrv, 2 failed else;
//	                              a completed request for curve N > 1
//	                              copies it into curve 1, the curve in
//	                              effect (its ReadOnly point kept); 0 is
//	                              no request: nothing adopted, the result
//	                              kept; the request reads as written
//	                              (AdoptClearsRequest: set back to 0)
//	124 StorCtl_Mod, InWRte,      the battery's power window (positive
//	    OutWRte (% of WChaMax)    discharging): bit 0 caps charging at
//	                              InWRte %, bit 1 discharging at OutWRte
//	                              %; a negative OutWRte is a charge the
//	                              battery must take, a negative InWRte a
//	                              discharge it must give (Fronius GEN24's
//	                              convention): InWRte -p, OutWRte p is a
//	                              discharge of p % (exported when the
//	                              house takes less), InWRte p, OutWRte -p
//	                              a charge of p %, both 0 a hold;
//	                              StorCtl_Mod 2 with OutWRte 0 no
//	                              discharge, charging from the surplus
//	124 ChaGriSet                 1 (GRID): a charge beyond the PV surplus
//	                              comes from the grid; 0 (PV, the
//	                              default): from the surplus only
//	124 InOutWRte_RvrtTms         > 0, written with StorCtl_Mod on: that
//	                              many seconds after the last write of the
//	                              storage control, StorCtl_Mod goes to 0
//	                              and both rates to 100 % (back to
//	                              self-consumption); RevertAt of
//	                              Device.State shows when
//	124 InOutWRte_WinTms, _RmpTms stored and read back, no effect
//	802 SoCRsvMin, SocRsvMax      the SoC bounds above (equal: a hold)
//
// The effective active power limit is the lower of the limit (after its
// ramp) and 704 WSet when enabled; Device.State().EffectiveLimitPct and
// Plant.EffectiveLimitPct return it. The curves have no physical effect:
// the simulated grid stays within 231 V ± 2.5 V and 50 Hz ± 0.03 Hz, where
// the default volt-watt (100 % up to 106 % of VRef) and freq-watt (from
// 50.2 Hz) curves would not act anyway, and nothing trips.
//
// Four device modes imitate inverters that plantd must detect or handle
// (DeviceConfig, or plantd sim --ignore-revert / --needs-enable-toggle /
// --ignores-limit / --adopt-clears-request):
//
//	IgnoreRevert       every RvrtTms is accepted and read back, nothing
//	                   ever reverts, and the 704/7xx RvrtRem points show
//	                   the RvrtTms written and do not count down
//	NeedsEnableToggle  a new WMaxLimPct (123 or 704) takes effect only
//	                   when its enable (WMaxLim_Ena, WMaxLimPctEna) goes
//	                   from 0 to 1 after it; written alone while enabled
//	                   it changes the register, not the limit
//	IgnoresLimit       every limit write is accepted and read back, and
//	                   the output is never limited (toggled or not)
//	AdoptClearsRequest a DER inverter sets a 7xx adopt request back to
//	                   0 once it acted on it (the request of a device
//	                   without it reads as written)
//
// # Register trace
//
// Every write a device receives, accepted or refused, is a TraceEntry:
// simulated and wall time, unit, address, model, the points it touched
// with their values decoded after the write (TracePoint names like
// "WMaxLimPct", "PFWInj.PF", "curve[2].V1"), the refusal if any, and the
// inverter's effective limit and connection right after it.
// Plant.Trace(id) returns the last Config.TraceLimit (10000) entries of a
// device, Plant.TraceDropped(id) how many older ones were dropped. With
// Config.TraceFile (plantd sim --trace FILE) each entry is also appended
// to the file as one JSON line as soon as it happens; ReadTraceFile reads
// such a file back.
//
// # Scenario hooks
//
// For control-loop tests: Plant.SetLoadOffset(w) adds w watts to the
// consumption the meter sees (a load step), Plant.SetCloudFactor(f)
// scales the irradiance by f in 0..1 (a cloud step; inverters, meter and
// sensor follow); both act from the next read. A device stops answering
// with Device.SetFault(Fault{Kind: FaultOffline}) and comes back with
// Device.SetFault(Fault{}); its physics and timers carry on meanwhile.
//
// # Relay boards and loads
//
// A device with DeviceConfig.Relay is a relay board (relay.go), no
// SunSpec device and of no kind: an I/O module modelled on Beckhoff's
// EK9000 Modbus TCP bus coupler with eight relay outputs, coils 0..7
// (functions 1, 5, 15), and eight digital inputs, discrete inputs 0..7
// (function 2; Device.SetInput sets them, as the contact wired to them
// would; the board keeps the wall times of the last 32 reads of them,
// Device.Relay's InputReads, so a test sees when a client saw an input).
// Its holding registers are the EK9000's communication watchdog,
// at its addresses (Beckhoff's EK9000 documentation, "Modbus interface"):
//
//	0x1020  r   watchdog current time, ms since the last trigger (0 when
//	            not running)
//	0x1021  r   number of triggered fallbacks
//	0x1120  rw  watchdog time, 1..60000 ms (default 1000)
//	0x1121  rw  watchdog reset: a write is a trigger
//	0x1122  rw  type: 0 write telegram, 1 telegram, 2 disabled (the
//	            simulated board starts disabled; an EK9000 ships with 1)
//	0x1123  rw  fallback: 0 outputs to zero (default), 1 freeze
//
// A write to the coils starts the watchdog unless it is disabled; every
// request to the board (telegram) or every coil write (write telegram)
// triggers it. When no trigger came for the watchdog time on the wall
// clock (Config.Now; the simulated clock's Speed does not apply, as for
// a real module), the fallback applies at that instant: every coil falls
// to 0 (freeze: they stay), the trip is counted (0x1021, Device.Relay's
// Trips and LastTrip) and the watchdog stops until the next coil write.
// Nothing ticks: the next request or Device.Relay applies it, and the
// loads' energy is integrated to the expiry exactly. Other addresses
// answer exception 2, values out of range exception 3, input registers
// exception 1; coils and discrete inputs of every other device answer
// exception 1.
//
// The loads (Config.Loads, appliance.go) sit on a board's coils:
//
//	heater   one coil: draws RatedW (default 3000 W) while on
//	sgready  coils A = Coil, B = Coil+1, the SG-Ready states
//	         (A, B) = (1, 0) 1 locked, (0, 0) 2 normal, (0, 1) 3
//	         recommended, (1, 1) 4 forced; draws StateW[state-1]
//	         (default 0, 700, 1600, 2400 W)
//
// Plant.Load returns a load's draw, energy and SG-Ready state; Balance's
// LoadW includes every load. Writes to a board are traced like the
// others, with points "coil[N]", "WatchdogTime", "WatchdogMode", ...
//
// # Writes
//
// Functions 6 and 16 write holding registers. A write that touches a
// register of a read-only point, or lies outside the map, is refused with
// exception 2 (illegal data address); an enum value that is not one of the
// point's symbols, a percentage out of range, or an inverter's WMax (121,
// 702) above its nameplate rating, with exception 3. Accepted
// writes take effect on the next read.
//
// # Endpoints, the proxy, and faults
//
// Each endpoint (a device's own port, or one shared by the devices with the
// same Config Endpoint, told apart by unit id) is served by plantd/modbus's
// Server, the one Modbus TCP server of plantd (accept, MBAP framing, a
// goroutine per client, ServePDU and the plant's handler, server.go), with
// the endpoint as its Front: each connection's proxyConn applies the fault
// of the unit a request is for, with buffers reused for every frame, so
// the normal path adds no allocation of its own. The faults
// (Device.SetFault, at any time):
//
//	FaultNone            answers normally
//	FaultSlow            answers after Fault.Delay (default 1 s)
//	FaultDrop            closes the TCP connection instead of answering
//	FaultGarbage         answers random bytes: noise, a length that promises
//	                     more than follows, or a nonsense function code
//	FaultWrongTID        answers one request behind, under the earlier
//	                     request's transaction id (the first under tid-1)
//	FaultException       answers every request with exception Fault.Code
//	                     (default 4), without executing it
//	FaultNotImplemented  every measured value reads not implemented; state,
//	                     accumulators and the physics carry on
//	FaultOneClient       the endpoint keeps one connection: a new one closes
//	                     the others
//	FaultOffline         the endpoint resets new connections at once and
//	                     closes open ones; on an endpoint shared with live
//	                     devices, the unit answers exception 0x0B instead
//
// Requests for a unit nobody answers to get exception 0x0B (gateway target
// failed to respond).
//
// # Modbus RTU: serial lines and RTU over TCP
//
// Devices can answer as Modbus RTU slaves instead (rtu.go): frames of the
// unit id, the PDU and the CRC-16/MODBUS (low byte first), delimited by a
// silence of 3.5 characters (1.75 ms above 19200 baud). The PDU goes
// through the same ServePDU and handler as on the TCP endpoints, so reads,
// writes and exceptions mean the same (functions 1, 2, 3, 4, 5, 6, 15,
// 16; a request malformed for its function, such as a quantity of 0 or
// 126 registers or a byte count that does not match, answers exception 3;
// an unknown function exception 1). A frame with a bad CRC, for a unit
// nobody on the line answers to, or a broadcast (unit 0, not executed)
// gets no answer, as on a real bus.
//
//	Config.Serial           serial lines (SerialConfig: Path, Baud 9600,
//	                        Parity N, StopBits 1, Devices by id): the
//	                        devices answer on the character device at
//	                        their Unit, and have no TCP endpoint
//	                        (Device.Bus is the path, Addr ""); a pty
//	                        pair from socat in tests, plantd sim --serial
//	DeviceConfig.RTUOverTCP the device's endpoint speaks RTU frames in
//	                        the TCP stream, like a serial converter in
//	                        transparent mode; DeviceConfig.Baud paces it
//	                        as its serial line (0: unpaced)
//
// Pacing: every byte takes 11 bit times (BitsPerChar: start, 8 data,
// parity or a second stop bit, stop) at the baud. A request occupies the
// line from the arrival of its first byte (or the end of the previous
// answer); the frame ends a gap after its last byte's wire time; the
// answer is written whole at the instant its last byte would arrive, that
// end plus its own wire time. The slave adds the gap and nothing else, so
// a master keeping the gap uses 97.4 % of the line with 125-register
// reads (BusStats.Late sums the scheduling latency of the writes).
// Device.RTUStats and Plant.SerialStats count frames, bad frames, ignored
// and silent requests, answers and bytes. A serial line lost after Start
// (the pty's other end gone, an adapter unplugged) is reopened with
// backoff; one missing at Start fails Start with its path.
//
// Faults on an RTU line (Device.SetFault, per unit):
//
//	FaultOffline    the unit never answers
//	FaultDrop       the same on a serial line; RTU over TCP closes the
//	                connection
//	FaultSlow       the answer Fault.Delay later
//	FaultBadCRC     the answer with one bit flipped after the unit id: a
//	                CRC error
//	FaultCollision  a second master's frame (3..30 random bytes, no valid
//	                CRC) right after the request, then the answer a gap
//	                later
//	FaultGarbage    3..30 random bytes instead of the answer
//	FaultException  exception Fault.Code; FaultNotImplemented as on TCP
//	FaultWrongTID   no effect: RTU has no transaction id
//	FaultOneClient  RTU over TCP keeps one connection
//
// An RTU over TCP endpoint stays reachable when its units are offline: the
// converter answers TCP, its units stay silent. Its connections share one
// line: a request that comes in while another is answered waits for it. FaultBadCRC and
// FaultCollision do nothing on Modbus TCP.
//
// # Shelly plugs
//
// Config.Shellies adds Shelly Gen2 plugs (ShellyConfig: ID, RatedW default
// 1200 W, Port 0 = free), each the twin of a Shelly Plus Plug S with an
// appliance behind it, served over real HTTP on a loopback port of its
// own (Plant.Shelly(id).URL()), without authentication. They speak the
// documented Gen2 RPC (shelly.go cites the pages): POST /rpc with a whole
// request frame, POST /rpc/<Method> with the params as body, and GET
// /rpc/<Method>?<params>; GET /shelly is the device info.
//
//	Shelly.GetDeviceInfo  id "shellyplusplugs-<mac>", mac, model
//	                      SNPL-00112EU, gen 2, fw_id, ver, app PlugS,
//	                      auth_en false
//	Switch.GetStatus      id 0: source, output, apower, voltage, current,
//	                      freq, aenergy {total Wh, by_minute mWh of the
//	                      last three whole minutes, minute_ts},
//	                      temperature {tC, tF}; timer_started_at and
//	                      timer_duration while a toggle_after runs
//	Switch.Set            id 0, on, toggle_after (s): was_on; the output
//	                      flips back after toggle_after on the wall clock
//	                      (Config.Now, as the device's own timer), a new
//	                      Set replaces the timer
//	Switch.Toggle         id 0: was_on
//
// Errors are error objects {code, message}: -103 for a missing or bad
// argument, -105 for a switch id other than 0, 404 for an unknown method;
// in a frame over POST /rpc (HTTP 200), or alone with HTTP 400, 404 or
// 500 on /rpc/<Method>.
//
// While on, the appliance draws RatedW: the plant's consumption (the
// meter, the batteries, Plant.Balance().LoadW) includes it, apower shows
// it and aenergy.total is its integrated energy; a timer's flip ends an
// integration step, so the energy counts it to the instant.
// Shelly.SetFault injects a fault into every request, which is then not
// executed:
//
//	ShellyFault500      HTTP 500 with a plain-text body
//	ShellyFaultGarbage  HTTP 200 with a body that is not JSON
//	ShellyFaultHang     no answer until the client gives up or Close
//	ShellyFaultSlow     the normal answer after Delay (default 1 s)
//
// # OCPP charge point twin
//
// Config.ChargePoints adds OCPP 1.6J charge points (ChargePointConfig:
// ID, URL, Password, MaxCurrentA 16, Phases 3, VoltageV 230, IDTag
// "SIMCAR", MeterInterval 10 s, ReconnectMin 1 s .. ReconnectMax 30 s),
// each a wallbox with one connector and a car behind it (CarConfig:
// CapacityWh 60000, SoCPct 40 at the start, TargetSoCPct 100,
// MaxCurrentA 16, plugged in unless Unplugged). It is a real OCPP client
// (chargepoint.go, with ocpp-go's charge point API over a WebSocket
// client of its own on gorilla/websocket, chargepoint_ws.go: ocpp-go
// v0.19.0's closes its send queue while its dispatcher may send on it,
// a race and a panic when the central system drops) of a central system
// such as plantd's: Plant.ChargePoint(id).Run(ctx) connects to URL/ID
// (ChargePoint.SetURL sets the URL later; Password is HTTP basic auth with
// the ID as user), independently of the plant's Start and Close:
//
//	cfg.ChargePoints = []sim.ChargePointConfig{{ID: "wallbox", URL: "ws://127.0.0.1:8887/ocpp"}}
//	p, _ := sim.New(cfg, logger)
//	g.Go(func() error { return p.Run(ctx) })
//	g.Go(func() error { return p.ChargePoint("wallbox").Run(ctx) })
//
// Run connects, retrying with a doubling wait from ReconnectMin to
// ReconnectMax while the central system is away (and again when the
// connection drops), and per connection sends BootNotification (vendor
// "plantd-sim", model "twin", the ID as serial number) until Accepted,
// StatusNotification of connector 0 (Available) and of connector 1 at
// every change (Available, Preparing, Charging, SuspendedEV,
// SuspendedEVSE), Heartbeat at the interval the boot's answer gives (5 min
// if 0). A plugged car without a transaction sends Authorize and
// StartTransaction with its IDTag (a refusal leaves it Preparing until it
// is plugged again); during a transaction MeterValues (connector 1, the
// transaction id) go at its start (Transaction.Begin) and every
// MeterInterval (Sample.Periodic), with
//
//	Energy.Active.Import.Register  Wh       the charger's register since
//	                                        the plant's start
//	Power.Active.Import            W        the car's draw, all phases
//	Current.Import                 A        per phase: one value for each
//	                                        of L1, L2, L3 (L1 alone on one
//	                                        phase)
//	Current.Offered                A        the effective limit per phase
//	SoC                            Percent  the car's (location EV)
//
// ChargePoint.Plug(false) ends the transaction (StopTransaction, reason
// EVDisconnected, at once or on the next connection) and drops its
// TxProfiles. The twin answers SetChargingProfile, ClearChargingProfile
// (by id, else by connector, purpose and stack level; Unknown when none
// matched) and GetCompositeSchedule (in A, or W when asked), and of the
// Core profile GetConfiguration (read-only keys such as
// ChargingScheduleAllowedChargingRateUnit "Current,Power"); it rejects
// remote start and stop, reset, availability changes.
//
// Smart charging (chargepoint_profile.go, OCPP 1.6 §3.13): a
// ChargePointMaxProfile goes on connector 0, a TxDefaultProfile on 0 or
// 1, a TxProfile on 1 during a transaction (its transactionId absent or
// the running one); a profile with the id or the stack level and purpose
// of an installed one replaces it. Rejected are others, a first period
// not at 0 s, periods out of order, a rate unit other than A or W, a
// numberPhases other than Phases, stack levels above 8, more than 24
// periods or 16 profiles. The limit at time t: the TxProfile of the
// running transaction with the highest stack level that applies, else
// the TxDefaultProfile with the highest level that applies (connector 1's
// at a tie), else MaxCurrentA; then the lower of it and the
// ChargePointMaxProfile that applies with the highest level; never above
// MaxCurrentA. A profile applies when validFrom <= t < validTo and t lies
// within its schedule: Absolute from startSchedule (the profile's
// arrival if absent), Relative from the transaction's start (its first
// period when none runs), Recurring from startSchedule's latest daily or
// weekly repetition, each for duration if given; the period with the
// latest startPeriod at or before t gives the limit, W converted to A by
// VoltageV × Phases. IEC 61851: below 6 A the car does not charge
// (SuspendedEVSE, 0 W); else it draws min(limit, car's MaxCurrentA,
// MaxCurrentA) × VoltageV × Phases until its SoC reaches TargetSoCPct
// (SuspendedEV, 0 W). Connected or not, the twin applies its profiles:
// with the central system gone, an expiring profile falls back to the
// next one by itself.
//
// Two clocks. Profile validity, schedules, timestamps and timers run on
// the wall clock (time.Now), as a charger's RTC and the central system
// do: the twin arms one timer for the next instant a profile starts,
// ends or changes period, and re-evaluates then (no polling). The car is
// a load of the plant like the heater: its draw adds to Balance's LoadW,
// the grid meter, the batteries' dispatch, and its energy and SoC
// integrate on the simulated clock, so at Speed 100 it charges 100 times
// faster while a 15-minute profile still lasts 15 wall minutes; the
// integration step ends exactly when the car becomes full.
// ChargePoint.State gives Connected, Status, Plugged, TransactionID,
// LimitA and LimitSource ("TxDefaultProfile#1 level 1", "default (no
// profile)"), CurrentA, PowerW, EnergyWh, SoCPct; ChargePoint.Trace every
// change of the effective limit with its wall time and source (the last
// 10000); ChargePoint.Changed a channel closed at the next change.
//
// # Usage
//
//	p, err := sim.New(sim.DefaultConfig(), logger)
//	if err != nil { ... }
//	if err := p.Start(); err != nil { ... }
//	defer p.Close()
//	for _, d := range p.Devices() {
//		fmt.Println(d.ID(), d.Kind(), d.Addr(), d.Unit())
//	}
//	p.Device("inv1").SetFault(sim.Fault{Kind: sim.FaultSlow, Delay: 2 * time.Second})
//
// Tests pass Config.Now a clock they move by hand, so the simulated plant
// stands still between their reads. A test that needs no socket leaves out
// Start and reaches each device's register model in process through
// Device.Registers (inprocess.go: holding registers read and written as
// the server checks them; faults act on the sockets only).
//
// Package sim imports sunspec (model tables, encoding), internal/solar (the
// sun and the clear sky, one definition with the PV forecast), devices/template
// (the template devices' maps), plant/kind (the device kinds), modbus (the
// server side's ServePDU and exceptions; never its client),
// modbus/serialline (the serial lines' standard rates), net/http (the Shelly plugs' servers),
// github.com/lorenzodonini/ocpp-go and github.com/gorilla/websocket (the
// charge point twin's OCPP client, never plantd/charger) and syscall on Linux (a serial line's settings);
// it knows nothing of the rest of the plant domain, storage or plantd's
// HTTP API, and nothing imports it but cmd/plantd and tests.
//
// Imports: plantd/devices/template, plantd/internal/solar, plantd/modbus, plantd/modbus/serialline, plantd/plant/kind, plantd/sunspec
package sim
