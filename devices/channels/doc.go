// Package channels is the device layer's knowledge of what a device's
// points mean in plantd's domain: the one table from SunSpec points to the
// API's channels, with their signs (mapping.go), the reading of a
// device's health from its state and event points (status.go), the
// compilation of a device template's points to channels (template.go),
// and the nameplate of a discovered device ([Nameplate]: identity,
// ratings, the channels it feeds).
//
// The poller (devices/poller) keeps one [Device] per discovered device and
// fills each poll's plant.Sample through it, so that plant receives
// readings, a status and a nameplate in its own words and knows no SunSpec
// model. A poll allocates nothing once a device's buffers have grown.
//
// Signs, units and the priority of rows are plant/doc.go's rules
// ("Channels, units and signs", "Health"); this package implements them
// for SunSpec and template devices, plant checks the values against its
// plausibility bounds.
//
// Imports: plantd/devices/template, plantd/plant, plantd/plant/kind, plantd/sunspec
package channels
