// Package poller keeps every configured device read on time, whatever the
// others do: each device on its own interval and its own timer, which
// starts a goroutine per poll that discovers the device (once per
// appearance), reads its poll models with a read plan, has the device's
// channels.Device (plantd/devices/channels) put them in the domain's words
// (readings, status, nameplate) and hands one plant.Sample to a sink. Between polls a device holds no goroutine (a parked one kept
// a 4-8 KB stack: 8.7 MB at 1,000 devices).
//
// A dead, slow or garbage-answering device is marked stale, then offline,
// with the reason, and retried with backoff on its own timer (the poller
// alone decides when a failing device is tried again: the modbus
// endpoint below keeps no retry policy of its own); it never
// delays another device except through a connection they share (devices
// behind one gateway address take turns on its one socket, as the device
// requires; the units behind one address also discover one after the
// other, the others waiting at the poller before their poll begins, which
// keeps a start of 1,000 devices from holding 1,000 deep stacks). Every
// sample carries the device's state after the poll; the
// poller logs no transitions: plant.Live.Apply finds them (one detector),
// and the daemon logs them.
//
// A device with a template (DeviceConfig.Template, plantd/devices/template)
// is not discovered: once per appearance the poller reads all the
// template's blocks and checks its identification (a mismatch fails the
// poll with template.ErrNotIdentified), then every poll reads its poll
// blocks and emits plant.Sample.Readings through channels.TemplateMap.
//
// A poll never makes more than DeviceConfig.MaxRequests requests (default
// 16): a device whose poll models need more fails its polls with
// ErrRequestBudget. A model whose header claims more registers than its
// definition is read only to Model.MaxLen, logged at discovery.
//
// The device list may change while the poller runs (Update, on a config
// reload): devices removed stop, devices added start, a device whose
// settings changed starts anew, and the others keep their
// schedules.
//
// The poller imports modbus, sunspec (the models read), devices (discovery,
// read plans), devices/channels (the models in the domain's words),
// devices/template, internal/backoff, plant/kind (a configured kind) and
// plant, for the domain's types it emits (plant.Sample, plant.CommState)
// and nothing else of the domain; it knows nothing of storage, HTTP or
// MQTT.
//
// Imports: plantd/devices, plantd/devices/channels, plantd/devices/template, plantd/internal/backoff, plantd/modbus, plantd/plant, plantd/plant/kind, plantd/sunspec
package poller
