// Package sunspecserver shows a plant as one SunSpec device over Modbus
// TCP (config modbusServer), for SCADA systems and direct marketers'
// boxes that expect a Modbus interface to the plant: its measured models
// hold the plant's totals, its control models take an active power limit
// that becomes a grid-control schedule.
//
// # The map
//
// SunS at 40000, then the models back to back, each laid out from the
// generated SunSpec tables (plantd/sunspec, sunspec.NewBlank) and filled
// through its encoder, then the end model (0xFFFF, 0):
//
//	1    Mn plantd, Md "plantd aggregate", Opt the plant id, Vr plantd's
//	     version, SN the gateway id, DA the unit id
//	103  the plant's inverters as one: W the live energy balance's PV;
//	     VA, VAr and WH (lifetime) the sums over the active inverters,
//	     AphA..C the sums, PhVphA..C and Hz the means, each only when
//	     every active inverter reports it (else not implemented); PF
//	     100·W/VA; St 4 (MPPT) while one produces, else 2 (sleeping)
//	203  (with a grid meter) W the grid power from the balance, import
//	     positive as SunSpec meters count; TotWhImp and TotWhExp the grid
//	     meters' counters; phases and Hz from the meter when there is
//	     one
//	124  (with a battery) ChaState the plant's state of charge, ChaSt from
//	     the balance's charging and discharging, WChaMax the batteries'
//	     rated power, InBatV with one battery
//	123  WMaxLimPct (%, WMaxLimPct_SF 0), WMaxLimPct_RvrtTms, WMaxLim_Ena
//	704  WMaxLimPctEna, WMaxLimPct, WMaxLimPctRvrtTms, WMaxLimPctRvrtRem
//	64900  plantd's holder model (holder.go): Role, Own, Cmd, Sched, By
//
// Scale factors of measured values are the smallest (from the resolution
// named in image.go up) at which the plant's values fit their type: a
// client reads a value and its scale factor in one request, as SunSpec
// asks. Which of 203 and 124 the map has is decided by the plant's
// configured devices when the server is made. Reads never reach a device:
// the map is rewritten from plant.Live when its change counter moves (at
// most every 100 ms) or after a second, and answered from memory.
//
// # The limit in force
//
// The limit's points of 123 and 704 read the limit in force on the plant
// (gridcontrol.Controller.GoverningLimit: the lower of the governing
// opModMaxLimW window and the FeedInLimit loop's output limit, whoever
// set it), the same for every master, rounded to the whole per cent:
// WMaxLimPct and the enable 1 while a limit governs, 100 and 0 when none
// does; 704 WMaxLimPctRvrtRem the seconds until its window ends. Only
// RvrtTms reads back as the reading master wrote it. SunSpec has no point
// that says whose a limit is, so the map ends with a model of plantd's
// own in the vendor range, 64900, which a client that does not know it
// steps over by its length: Role (0 none, 1 installer, 2 grid operator),
// Own (1 when the limit in force is the reading master's own window), Cmd
// (0 none, 1 opModMaxLimW, 2 FeedInLimit), Sched (the schedule id) and By
// (its createdBy, "modbus:192.168.10.20 (installer)"). A SCADA system or
// a direct marketer thus sees the plant's curtailment, and whether it is
// its own, without the HTTP API.
//
// # Writes
//
// Only the limit's points of 123 and 704 are writable. Each master
// (client address) has its own state of the limit (controls.go): a write
// is decoded against that master's last WMaxLimPct, RvrtTms and enable,
// so RvrtTms, WMaxLimPct, then the enable, work per master, in either
// model. An enabled limit becomes a schedule of grid control (Submit with
// the eligibility check; its ramps and the gateway's reversion apply as
// to every schedule) with the origin {door modbus, the master's address,
// the configured role (installer by default), channel
// "modbus:<address>"}: created by "modbus:<address> (role)" and logged in
// the plant log like every schedule; see controls.go for RvrtTms and the
// renewal. Each master is its own precedence channel holding one window at
// a time (a new value's window ends the one it replaces): its writes
// create, renew and cancel only its own window (enable 0 ends its own and
// nothing else; grid control refuses a Cancel or Extend of another
// channel's), and the channels combine by the most restrictive limit, so
// a master never loosens a grid operator's limit or another master's.
// Writes need an allow-list (New refuses writes without one; the config
// refuses it too), and the grid operator's role is logged at start as a
// warning naming the allowed masters. At most 64 masters' states are
// kept: a master's state without a window is forgotten 10 minutes after
// its last write (its connection is closed by then), and a new master
// whose state has no room (64 masters holding windows) gets exception 6.
//
// Exceptions: 1 when writes are off (modbusServer.writes) or for
// functions the map has no data for (coils, input registers); 2 for
// registers outside the map or not writable; 3 for values out of range
// (WMaxLimPct outside 0..100, an enable other than 0 or 1) or a schedule
// grid control refuses as invalid; 4 when no inverter is eligible or
// grid control fails; 6 when 64 other masters hold windows; 0x0B for
// another unit id. A refused write changes nothing of the master's state.
//
// # Connections
//
// plantd/modbus's Server serves the map: the allow-list of client
// addresses, the bounds on connections (MaxConns, default 32, and
// MaxConnsPerClient, default 4, an idle connection closed to make room
// for a new one) and the idle close are its. The lines of refused
// connections and refused writes share one limiter with the server
// (modbus.NewRefusals): the first of a master and reason, then at most
// one line a minute with the count suppressed.
//
// # Imports
//
// The package imports plantd/modbus (the server), plantd/sunspec (model
// tables, encoder), plantd/plant (the live state's types),
// plantd/plant/kind, plantd/gridcontrol (schedules, the command names),
// plantd/config (the role names) and plantd/internal/logthrottle (the
// refusals' limiter). Only cmd/plantd imports it.
//
// Imports: plantd/config, plantd/gridcontrol, plantd/internal/logthrottle, plantd/modbus, plantd/plant, plantd/plant/kind, plantd/sunspec
package sunspecserver
