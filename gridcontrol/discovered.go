package gridcontrol

import (
	"plantd/plant"
	"plantd/sunspec"
)

// sunspecOf is the SunSpec description of a device as the device layer
// discovered it, which plant carries without looking into it
// (plant.DeviceLive.Discovered, plant/doc.go); nil until the device was
// discovered.
func sunspecOf(d plant.Discovery) *sunspec.Device {
	dev, _ := d.(*sunspec.Device)
	return dev
}
