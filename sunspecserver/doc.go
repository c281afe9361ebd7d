// Package sunspecserver shows a plant as one SunSpec device over Modbus
// TCP (config modbusServer), for SCADA systems and direct marketers'
// boxes that expect a Modbus interface to the plant: its measured models
// hold the plant's totals, its control models take an active power limit
// that becomes a grid-control schedule.
//
// # The map
//
// SunS at 40000, then the models back to back, each laid out from the
// generated SunSpec tables (plantd/devices, devices.NewBlank) and filled
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
//
// Scale factors of measured values are the smallest (from the resolution
// named in image.go up) at which the plant's values fit their type: a
// client reads a value and its scale factor in one request, as SunSpec
// asks. Which of 203 and 124 the map has is decided by the plant's
// configured devices when the server is made. Reads never reach a device:
// the map is rewritten from plant.Live when its change counter moves (at
// most every 100 ms) or after a second, and answered from memory.
//
// # Writes
//
// Only the limit's points of 123 and 704 are writable; both show one
// state. A write (functions 6 and 16) becomes a schedule of grid control
// (Submit with the eligibility check; its ramps and the gateway's
// reversion apply as to every schedule), created by "modbus:<client
// address>" with the configured role (gridoperator by default), logged
// in the plant log like every schedule; see controls.go for RvrtTms and
// the renewal. Exceptions: 1 when writes are off (modbusServer.writes)
// or for functions the map has no data for (coils, input registers); 2
// for registers outside the map or not writable; 3 for values out of
// range (WMaxLimPct outside 0..100, an enable other than 0 or 1) or a
// schedule grid control refuses as invalid; 4 when no inverter is
// eligible or grid control fails; 0x0B for another unit id. A refused
// write changes nothing.
//
// # Connections
//
// plantd/modbus's Server serves the map: the allow-list of client
// addresses, the bounds on connections (MaxConns, default 32, and
// MaxConnsPerClient, default 4, an idle connection closed to make room
// for a new one) and the idle close are its.
//
// # Imports
//
// The package imports plantd/modbus (the server), plantd/devices (model
// tables, encoder), plantd/plant (the live state's types),
// plantd/plant/kind and plantd/gridcontrol (schedules). Only cmd/plantd
// imports it.
package sunspecserver
