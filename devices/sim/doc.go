// Package sim is the simulated PV plant: real SunSpec Modbus TCP servers
// with physics and fault injection, for the demo and for tests.
//
// A Plant holds devices of five kinds, each speaking the SunSpec map of a
// real device at base 40000 (SunS marker, models back to back from 40002,
// end marker 0xFFFF 0):
//
//	kind          models                                                  Md
//	inverter      1 103 120 121 122 123 126 127 129 130 132 134 135 136  SIM-INV-10K
//	der-inverter  1 701 702 704 705 706 707 708 709 710 711              SIM-DER-8K
//	meter         1 203                                                   SIM-METER-3P
//	battery       1 124 713 802                                           SIM-BAT-10
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
// value is a deterministic function of the location, the clock and the
// writes received:
//
//   - the sun: elevation from declination, hour angle and the equation of
//     time; Haurwitz clear-sky irradiance; a cloud term fixed per local day
//     (off with Config.ClearSky); ambient and module temperature, wind;
//   - inverters: PV available = 1.1 × rating × GHI/1000 × temperature
//     derating × losses × efficiency, capped at the rating and WMax; AC
//     output = min(available, limit). Below 15 W an inverter sleeps (103 St
//     2, 701 St off / InvSt sleeping, DC values not implemented). The
//     classic limit is 123 WMaxLimPct (% of 121 WMax) when WMaxLim_Ena is 1;
//     WMaxLimPct_RvrtTms > 0 reverts it (Ena 0, 100 %) that many seconds
//     after the write. 123 Conn 0 disconnects (W 0, St standby) and honours
//     Conn_RvrtTms. The DER limit is 704 WMaxLimPctEna/WMaxLimPct (% of 702
//     WMax); WMaxLimPctRvrtTms > 0 starts a timer shown in
//     WMaxLimPctRvrtRem, whose expiry applies WMaxLimPctRvrt and
//     WMaxLimPctEnaRvrt. 123 OutPFSet and 704 PFWInj, when enabled, set the
//     reactive power;
//   - load: a household profile of a few hundred watts with morning,
//     midday and evening peaks in the plant's time zone;
//   - batteries charge from the surplus and cover the deficit up to their
//     rating (124 WChaMax, InWRte/OutWRte when StorCtl_Mod enables them),
//     between the SoC bounds (5..100 %, raised by 124 MinRsvPct and 802
//     SoCRsvMin, lowered by SocRsvMax), 96 % efficient each way; 802 SetOp 2
//     disconnects. 802 W and A are positive while discharging, like 701 W
//     for generation;
//   - the meter: W = load - PV - battery (positive = import from the grid,
//     the SunSpec meter sign), TotWhImp/TotWhExp integrate it.
//
// Plant.Balance returns the same numbers the registers show; Device.State
// and Device.Writes expose a device's state and the writes it accepted.
//
// # Writes
//
// Functions 6 and 16 write holding registers. A write that touches a
// register of a read-only point, or lies outside the map, is refused with
// exception 2 (illegal data address); an enum value that is not one of the
// point's symbols, or a percentage out of range, with exception 3. Accepted
// writes take effect on the next read.
//
// # Endpoints, the proxy, and faults
//
// Each endpoint (a device's own port, or one shared by the devices with the
// same Config Endpoint, told apart by unit id) is two things: a
// github.com/simonvetter/modbus server on an internal loopback port, which
// decodes requests and calls the plant, and a small TCP front on the public
// port. The front accepts clients, opens one connection to the internal
// server per client, and forwards MBAP frames (7-byte header: transaction
// id, protocol id, length, unit id; then length-1 PDU bytes) both ways
// from one goroutine per client with buffers reused for every frame, so the
// normal path adds no allocation. It applies the fault of the unit a
// request is for (Device.SetFault, at any time):
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
// stands still between their reads.
//
// Package sim imports devices (model tables, encoding) and the simonvetter
// server; it knows nothing of the transport, the plant domain, storage or
// HTTP, and nothing imports it but cmd/plantd and tests.
package sim
