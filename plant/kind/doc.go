// Package kind is the one definition of a device kind in plantd: what a
// device is (inverter, meter, battery, sensor, consumer, plantd itself as
// the gateway, or unknown), the word the config and the APIs use for it, and
// its type word in the HTTP API ("Solar Inverters", ...).
//
// # Job
//
// Every layer speaks of device kinds: the config's kind key, the SunSpec
// layer's classification of a device by its models, the simulator's
// devices, the poller's override, the domain's devices and the store, the
// grid control, MQTT and HTTP API above them. They all use [Kind]; no
// other package defines a kind of device, so no layer converts one kind
// into another.
//
// # Import boundary
//
// kind imports only the standard library and no plantd package: it is the
// leaf under every other package (config and devices included, which sit
// below plant), part of package plant's vocabulary that the lower layers
// need too. It holds words and their tables, no behaviour of devices.
//
// Imports: none
package kind
