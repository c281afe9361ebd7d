// Package plant is plantd's domain: plants and their devices, the channel
// names of the API, the live state cache, the live energy balance and the
// health of devices.
//
// # Job
//
// [Plant], [DeviceInfo] and [Nameplate] (what discovery learned of a
// device) are the domain types the API speaks; cmd/plantd maps the config
// onto the first two, the device layer makes the third. [Live] caches the
// last poll of every device: the poller emits every poll as a [Sample]
// (its readings, status and nameplate in this package's words, with the
// device's [CommState]) and the daemon hands it to [Live.Apply], which
// returns the device's changes ([Event]: online, stale, offline, and health
// while online; the one place they are detected) for the daemon to log; the
// HTTP API and MQTT read [Live.Device], [Live.Devices],
// [Live.EnergyBalance] and [Live.EnergyMix]; grid control reads
// [Live.PolledRegs], the registers of the control models (123, 704) the
// last poll read, to see a held control another writer changed, without a
// Modbus request of its own, and [DeviceLive.Discovered], the device
// layer's description of the device. [Channel] names a measured
// quantity the way the API does (activePower, gridFeedIn,
// batteryStateOfCharge, ...).
//
// # Vocabulary
//
// The words the packages above exchange are defined here once, and nowhere
// else: a device's kind (package plantd/plant/kind, a leaf so that config,
// devices and the simulator below plant use it too), the log entry
// ([LogEntry], its levels and [LogQuery]) that grid control and cmd/plantd
// make, the store keeps, the HTTP API lists and the uplink publishes, the
// grid-control schedule ([Schedule], its commands [ScheduledCmd], their
// [WindowStatus]: one type and one JSON encoding that grid control makes
// and runs, the store keeps and the HTTP API answers; here because both
// store and gridcontrol speak it and gridcontrol imports store), the
// question for a measurement set ([SetQuery], [Period]) and the problem document
// of refused requests and commands ([Problem], with its codes such as
// [CodeNotFound]). store, httpapi and mqtt
// take and return these types, so cmd/plantd wires them without copying
// fields.
//
// # Import boundary
//
// plant imports the standard library and plantd/plant/kind (the device
// kinds) only. It knows neither the transport nor the SunSpec model layer:
// the device layer below it maps SunSpec points and template points to
// channels (plantd/devices/channels: the only SunSpec-to-API table, the
// only reading of state and event points into a [DeviceStatus], the
// [Nameplate] of a discovered device), and the poller (plantd/devices/poller)
// emits the [Sample] type of this package. A timeout is told by its class
// (an error in the chain whose method Timeout() returns true, as
// net.Error's and plantd/modbus's ErrTimeout do), not by a sentinel of
// plantd/modbus. It must not import sunspec, modbus, devices or any
// package below devices, store, mqtt, httpapi, gridcontrol, config or cmd,
// nor Gin, paho or SQLite (modbus ← devices ← devices/channels and
// devices/poller → plant ← store, mqtt, httpapi, gridcontrol; sunspec and
// plant/kind are leaves).
//
// Grid control writes SunSpec models, so it needs the device layer's
// description of a device (models, platform, capabilities): plant carries
// it for grid control without looking into it, as a value of the small
// interface [Discovery] the device layer fills ([Sample.Discovered], a
// *sunspec.Device) and grid control type-asserts back. The choice keeps one
// snapshot of a device (DeviceLive) for every reader, costs nothing per
// poll (the same pointer every sample), and keeps plant free of sunspec;
// the registers of the control models come as plain [ModelRegisters].
//
// # Channels, units and signs
//
// Values are in W, Wh, var, VA, V, A, Hz, Ω, %, °C, W/m² and m/s (see
// [Channel.Unit]); a power factor is a ratio −1..1 (percent points of
// 1xx/20x models are divided by 100) and keeps the device's sign; reactive
// power keeps the device's sign too. A point the device does not implement
// (SunSpec's not-implemented value) gives no value: the channel is absent,
// never 0.
//
//   - Inverters (101..113, 701): activePower is the AC power the inverter
//     delivers, W > 0 = generation (701: negative = absorption).
//     pvGeneration = max(0, activePower), so an inverter drawing a few
//     watts at night generates 0. pvGenerationTotal is the lifetime AC
//     energy (1xx WH, 701 TotWhInj, else 122 ActWh).
//   - Meters (201..204, 211..214): activePower keeps the SunSpec meter sign,
//     W > 0 = import from the grid. gridConsumption = max(0, W) (bought),
//     gridFeedIn = max(0, −W) (sold); both are ≥ 0 and at most one is
//     non-zero. gridConsumptionTotal = TotWhImp, gridFeedInTotal = TotWhExp.
//   - Batteries (802): model_802.json says only "total power flowing to/from
//     the battery bank". plantd reads 802 W with the generator sign that 701
//     W states explicitly and the simulator uses: W > 0 = discharging (the
//     battery delivers power), W < 0 = charging. batteryDischarging =
//     max(0, W), batteryCharging = max(0, −W), both ≥ 0; activePower of a
//     battery is 802 W (or 701 W on a battery inverter that has it, same
//     sign). batteryCurrent keeps the 802 A sign (positive = discharging by
//     the same rule). SoC: 802 SoC, else 713 SoC, else 124 ChaState.
//     batteryTemperature has no source among the models plantd knows (it
//     needs 803/804), so it is never set yet.
//   - DC inputs: dcPowerInput, dcVoltageInput, dcCurrentInput and
//     dcEnergyInput are indexed: input n (1, 2, ...; label A, B, ...) from
//     the 160 modules or 714 ports; without those, the inverter's one DC
//     total (1xx DCW/DCV/DCA, 714 DCW/DCA) is input A.
//   - Consumers (kind consumer, plantd/consumer): consumption is the
//     load's power in W (≥ 0) and consumptionTotal its lifetime energy in
//     Wh, from a Sample's ConsumerReading (its own meter, the device, or
//     an estimate from its rated power while on); the switching state is
//     DeviceLive.Consumer. A meter that measures a consumer alone
//     (DeviceInfo.Measures) is no grid meter: it counts in no balance.
//   - Sensors: externalInsolation is 302 POAI (plane of array), else 302 GHI,
//     else 308 GHI; module and ambient temperature from 308 (303, 307).
//
// Where several rows give one channel, the first row of the device layer's table wins,
// whatever the order of the models in the device's chain.
//
// Template devices (plantd/devices/template: meters, inverters and
// batteries that speak their vendor's own map) name their channels in
// their template; devices/channels.CompileTemplate checks the names and
// units, and the poller hands their values to Apply as Sample.Readings,
// like a SunSpec device's, already in the channels' units and with the
// signs above (a template states where the vendor's sign differs). Apply
// checks them against the same bounds, with the ratings the template's
// nameplate points give.
//
// # Plausibility
//
// Every value Apply extracts is checked before it reaches the live state
// (and so the store, the balance and any uplink, which read it from
// there). A value outside its bounds is dropped for that poll (the channel
// is absent, as if not implemented), counted per device and channel
// ([Live.Implausible], /metrics plantd_device_implausible_values_total)
// and logged when the channel turns implausible and when it is plausible
// again, not per poll. The device's other values stay. Bounds, inclusive
// ([Bound]); "rated" is the device's nameplate × 1.25 + 50 (W, VA, var, A),
// and a rating is never taken above the absolute limit:
//
//	activePower (+ phases)          ±rated WRtg (120 WRtg, 702 WMaxRtg, 802 WChaRteMax, 124 WChaMax), else ±5 MW
//	pvGeneration, gridFeedIn, gridConsumption,
//	batteryCharging, batteryDischarging,
//	consumption                              0 .. the same
//	apparentPower (+ phases)        ±rated VARtg (120 VARtg, 702 VAMaxRtg), else as active power
//	reactivePower (+ phases)        ±rated VArRtg (largest of 120 VArRtgQ1..4, 702 VarMaxInjRtg/AbsRtg), else as apparent
//	currentPhaseA/B/C               ±rated ARtg (120 ARtg, 702 AMaxRtg), else ±10 kA
//	dcPowerInput                    ±WRtg × 1.5 + 50 (an oversized array), else ±5 MW
//	voltages AC                     0 .. 1000 V (low voltage, IEC 60038)
//	dcVoltageInput, batteryVoltage  0 .. 1500 V
//	dcCurrentInput, batteryCurrent  ±10 kA
//	gridFrequency                   40 .. 70 Hz
//	displacementPowerFactor         −1 .. 1 (a percent value within 1 % above 100 is rounding and clamped)
//	batteryStateOfCharge/OfHealth   0 .. 100 %
//	lifetime counters (…Total, dcEnergyInput)  0 .. rated WRtg × 40 years, else 5 MW × 40 years
//	isolationResistance             0 .. 1 TΩ
//	externalInsolation              −50 .. 2000 W/m²
//	ambientTemperature              −90 .. 70 °C; moduleTemperature, batteryTemperature −60 .. 150 °C
//	windSpeed                       0 .. 120 m/s
//
// Counter steps are checked by the store (store/doc.go, Energy: at most
// 5 MW × the span + 1 kWh), and since every power is bounded, energy
// integrated from power is at most the bound × the span. WHRtg (a
// battery's capacity) bounds nothing yet: no channel carries a battery's
// energy counter. The check costs about 2 ns per value and allocates
// nothing (BenchmarkPlausibility, BenchmarkApply).
//
// # Time
//
// [Clock] stamps samples: an anchor's wall time plus the monotonic time
// since, so stamps advance steadily. A wall clock that moves more than
// 5 s against it (a board without a real-time clock that starts in 1970
// and gets NTP, an operator setting the date) is a jump: logged once,
// counted, and followed. The store refuses samples stamped more than a
// poll interval in its clock's future and keeps rows written while the
// clock was ahead from hiding the present (store/doc.go).
//
// # Live energy balance
//
// See computeBalance and Flows.Derive for the formulas. The balance's
// pvGeneration is the sum of the inverters' pvGeneration, the grid terms
// come from the meters (every meter is taken as a grid meter), the battery
// terms from the batteries and from hybrid inverters (an inverter with
// batteryCharging and batteryDischarging, whose pvGeneration is its PV
// side). The identity
//
//	pvGeneration + gridConsumption + batteryDischarging
//	  = totalConsumption + gridFeedIn + batteryCharging
//
// holds whenever the readings are consistent (totalConsumption is clamped
// at 0 when they are not). A device that is offline or was never read
// gives nothing; a stale one gives its last values; both are listed in the
// balance's Error with a reason. A field is absent when no device could
// give it, and a plant without a battery has no battery fields at all.
//
// # Health
//
// v2 health ([Health]), first match wins:
//
//  1. a deactivated device: Off;
//  2. communication offline or never polled: NotAvailable;
//  3. operating state FAULT (1xx St, 701 InvSt, 802 State, 713 Sta ERROR) or
//     an error event bit: Error;
//  4. operating state off, sleeping, standby, shutting down, disconnected
//     (1xx St, 701 InvSt/St/ConnSt, 802 State DISCONNECTED/SUSPENDING, 124
//     ChaSt OFF): Off;
//  5. a warning event bit, a degraded state (802 SOC PROTECTION, 713 Sta
//     WARNING) or stale communication: Warning;
//  6. otherwise Ok.
//
// THROTTLED is Ok: the limit is usually plantd's own grid-control command.
// 701 ThrotSrc DERATED (a limit the inverter imposes on itself) is a
// warning. A battery in 802 STANDBY is Ok (waiting for surplus or load).
// Error event bits are those that stop production or need a technician
// (ground fault, DC over-voltage, blown fuse, memory loss, hardware test
// failure, arc detection, meter missing sensor, every 802 *_ALARM and
// *_ERROR); grid and environment conditions (over/under voltage or
// frequency, over-temperature, disconnects, cabinet open) are warnings. v1
// health ([Health.V1]): Ok and Warning are Active, the rest Inactive.
//
// Communication status ([CommStatus]): Ok when online; Partial when stale,
// or online with fewer than 90 % of the last (up to 64) polls successful;
// TimedOut when offline after a timeout; Unreachable when offline for any
// other reason or never polled.
//
// Imports: plantd/plant/kind
package plant
