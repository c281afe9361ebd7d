// Package template describes non-SunSpec Modbus devices as data: one YAML
// file per device family (embedded from this directory), giving how to
// recognise the device, which register blocks to read, and for every
// point its address, type, word order, scale, unit and the plant channel
// it feeds. It is to these devices what package sunspec's generated model
// tables are to SunSpec devices.
//
// # Schema
//
//	name: sdm630                # the name devices[].template gives; the file is <name>.yaml
//	vendor: Eastron             # the manufacturer the API shows
//	model: SDM630-Modbus V2     # the model the API shows unless a point gives it
//	kind: meter                 # meter | inverter | battery
//	source:                     # the vendor's document the map is taken from
//	  document: SDM630 Modbus Protocol
//	  version: "1.5"
//	  url: https://...
//	  note: anything the reader should know (a document not reached, ...)
//	notAvailable:               # raw values the device answers for a value it does not have, per type
//	  u16: [0xFFFF]             # u16 s16 u32 s32; 32-bit values as read (words in the point's order)
//	  s32: [0x7FFFFFFF, 0x80000000]
//	blocks:                     # the reads of one poll, in order (few and large)
//	  - {function: 4, address: 0x0000, count: 80}
//	  - {function: 3, address: 0xFC00, count: 2, once: true}   # read at identification only
//	identify:                   # all must hold, checked once per appearance
//	  - {point: frequency, range: [45, 65]}
//	  - {point: model, prefix: SUN2000}
//	  - {point: deviceType, oneOf: [0x0E00, 0x0E03]}
//	  - {point: magic, equals: 0xE3DC}
//	points:
//	  - name: totalPower        # unique within the template
//	    address: 0x0034         # protocol (PDU) address, 0-based
//	    function: 4             # optional: the function of the block holding it
//	    type: f32               # u16 s16 u32 s32 f32, or str (length registers of text)
//	    order: high-first       # word order of 32-bit types: high-first (default) | low-first
//	    scale: 0.1              # factor applied to the raw value (default 1)
//	    scaleRegister: 0x0050   # or: an s16 register holding a power of ten (SunSpec style)
//	    negate: true            # the device's sign is the opposite of the channel's
//	    unit: kW                # the value's unit after scale: W kW var kvar VA kVA V A Hz Wh kWh % °C Ω kΩ MΩ (or "" for a ratio)
//	    channel: activePower    # the plant channel it feeds (plantd/plant's names)
//	    index: 1                # input number of an indexed channel (dcPowerInput, ...)
//	    positive: gridConsumption  # max(0, v) feeds this channel too
//	    negative: gridFeedIn       # max(0, −v) feeds this one
//	    nameplate: ratedPowerW  # or: manufacturer | model | serial | version | ratedPowerW
//
// A numeric point whose raw value is one of its type's notAvailable
// values is absent (Raw, Value and the nameplate give nothing), as an f32
// NaN or infinity is: a vendor's "not available" never becomes a number
// (a SUN2000's all-ones energy register read as 42,949,672,950 Wh). Each
// template says in a comment beside the key why its values are
// sentinels.
//
// Values are decoded to the point's base unit (kW → W, kWh → Wh, MΩ → Ω),
// with negate applied, so that they carry plant's signs (doc.go of package
// plant): a meter's power is positive for import, an inverter's for
// generation, a battery's for discharging. The channel names and their
// units are checked by the device layer when it compiles a template
// (devices/channels.CompileTemplate); this package checks everything else at Parse:
// unknown keys, types, lengths, word orders, a point outside every block
// or in two, overlapping points, identification naming an unknown point.
// Errors name the file and the line.
//
// # Import boundary
//
// template imports the standard library, the YAML decoder and
// plantd/plant/kind only: no modbus (it reads through the small [Reader]
// interface, which a *modbus.Client satisfies), no plant. Package plant
// imports it to map points to channels, the poller to read devices, the
// simulator to serve their images, and config to check template names.
//
// Imports: plantd/plant/kind
package template
