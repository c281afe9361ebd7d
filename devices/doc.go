// Package devices talks to SunSpec devices over Modbus: discovery of a
// device's model chain ([Discover]: the SunS marker, the chain, the common
// model and the nameplate ratings) and read planning ([ReadPlan]: the
// models a poll reads, in as few requests of at most 125 registers as the
// map allows, never reaching into a model plantd does not know). The
// models, the codec, the writes with read-back and the description of a
// discovered device are plantd/sunspec's, the layer below that does not
// know the transport.
//
// It imports plantd/modbus (ranges, read planning and the classification
// of an exception answer: "nothing at this address" ends a probe) and
// plantd/sunspec. It knows nothing of the plant domain, nor of storage,
// HTTP or MQTT. Devices return errors and never log them: the poller
// (devices/poller) hands them on in its samples.
//
// Imports: plantd/modbus, plantd/sunspec
package devices
