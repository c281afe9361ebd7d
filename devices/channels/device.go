package channels

import (
	"slices"
	"time"

	"plantd/plant"
	"plantd/sunspec"
)

// The compiled tables, shared by every device: constants checked by
// TestChannelTable and TestStatusTables, so a failure to compile them is
// a programming error, like a bad regexp.MustCompile.
var (
	table  = must(compileTable(channelTable))
	states = must(compileStatus())
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Device turns the polls of one discovered device into the domain's words:
// its nameplate, its readings, its status and the registers of its
// models, set in a plant.Sample. It keeps the buffers of the last poll, so
// that a poll allocates nothing once they have grown to the device's size:
// keep one per device and discovery, and use it from one goroutine.
type Device struct {
	info     *sunspec.Device
	plate    *plant.Nameplate
	ext      extractor
	route    *route // of the last poll's models
	readings []plant.Reading
	regs     []plant.ModelRegisters
}

// NewDevice describes a discovered device (a SunSpec device, or a template
// device: info.Template set, no models).
func NewDevice(info *sunspec.Device) *Device {
	return &Device{info: info, plate: NameplateOf(info)}
}

// Info is the device as discovery described it.
func (d *Device) Info() *sunspec.Device { return d.info }

// Nameplate is the device's nameplate, made once.
func (d *Device) Nameplate() *plant.Nameplate { return d.plate }

// Identify sets what the sample says of the device itself: its nameplate
// and the description grid control reads (plant.Sample.Discovered).
func (d *Device) Identify(s *plant.Sample) {
	s.Nameplate, s.Discovered = d.plate, nil
	if d.info != nil {
		s.Discovered = d.info
	}
}

// Fill sets a successful poll of a SunSpec device in s: Identify, the
// channel values the models give (the table in mapping.go), the status
// their state and event points say (status.go) and the models' registers.
// The readings and registers are d's buffers, and the registers alias the
// instances': both are valid until the next Fill.
func (d *Device) Fill(s *plant.Sample, models []*sunspec.Instance) {
	d.Identify(s)
	if d.route == nil || !d.route.matches(d.info.Kind, models) {
		d.route = newRoute(table, states, d.info.Kind, models)
	}
	d.readings = table.extract(&d.ext, models, d.route, d.readings)
	s.Readings = d.readings
	s.Status = states.evaluate(models, d.route)
	d.regs = d.regs[:0]
	for _, m := range models {
		if m != nil && m.Model != nil {
			d.regs = append(d.regs, plant.ModelRegisters{Model: m.Model.ID, Regs: m.Regs})
		}
	}
	s.Registers = d.regs
}

// NameplateOf is a discovered device in the API's words (nil: nil): its
// identity and ratings, whether it can be controlled, and the channels it
// feeds (the rows of the channel table its models have, or the points of
// its template).
func NameplateOf(d *sunspec.Device) *plant.Nameplate {
	if d == nil {
		return nil
	}
	n := &plant.Nameplate{Manufacturer: d.Manufacturer, Model: d.Model, Serial: d.Serial, Version: d.Version,
		Kind: d.Kind, Platform: string(d.Platform), Models: d.ModelIDs(), RatedPowerW: d.RatedPowerW,
		RatedApparentVA: d.RatedApparentVA, RatedReactiveVAr: d.RatedReactiveVAr, RatedCurrentA: d.RatedCurrentA,
		RatedEnergyWh: d.RatedEnergyWh, Template: d.Template}
	for _, c := range d.Capabilities {
		if c == sunspec.CapPowerLimit || c == sunspec.CapStorageControl {
			n.Controllable = true
		}
	}
	if d.Template != "" {
		for _, c := range templateChannels(d.Template) {
			n.Feeds = append(n.Feeds, plant.Feed{Channel: c})
		}
	}
	for _, rs := range channelTable {
		if !slices.ContainsFunc(rs.Models, d.Has) {
			continue
		}
		for _, pr := range rs.Points {
			f := plant.Feed{Kind: rs.Kind, Channel: pr.Channel}
			if !slices.Contains(n.Feeds, f) {
				n.Feeds = append(n.Feeds, f)
			}
		}
	}
	return n
}

// Sample is a successful poll at t of the device configured as id, whose
// models read as given: the plant.Sample the poller would emit, for code
// that reads a device without the poller (tests, tools).
func (d *Device) Sample(id string, t time.Time, models []*sunspec.Instance) plant.Sample {
	s := plant.Sample{Device: id, Time: t, State: plant.StateOnline}
	d.Fill(&s, models)
	return s
}
