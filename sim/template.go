package sim

import (
	"fmt"
	"maps"
	"math"
	"strings"

	"plantd/devices/template"
	"plantd/plant/kind"
)

// tplDevice is a template device (DeviceConfig.Template): a register
// image built from a device template of plantd/devices/template, with a
// plausible value for every point. Meters mirror the plant's grid
// connection, inverters make power from the sim's weather (their power
// does not enter the plant's balance), the battery follows the plant's
// surplus within its rating (nor does its). Guarded by Plant.mu.
type tplDevice struct {
	t      *template.Template
	blocks [][]uint16 // the image, one slice per template block
	// values and texts are what the image holds, as a decoder reads it
	// (template.Value and Text): the base unit and the template's sign.
	values map[string]float64
	texts  map[string]string
	// State integrated by advanceLocked.
	impWh, expWh, genWh float64
	socPct              float64
	batW, acW, dcW      float64
	// hybrid: an inverter template with battery channels.
	hybrid bool
}

func newTemplateDevice(d *Device) (*tplDevice, error) {
	t, ok := template.Lookup(d.cfg.Template)
	if !ok {
		return nil, fmt.Errorf("unknown template %q", d.cfg.Template)
	}
	h := float64(idHash(d.cfg.ID) % 10000)
	td := &tplDevice{t: t, values: map[string]float64{}, texts: map[string]string{},
		impWh: 3.1e6 + h, expWh: 5.3e6 + h, genWh: 2.2e7 + h, socPct: 55}
	for _, b := range t.Blocks {
		td.blocks = append(td.blocks, make([]uint16, b.Count))
	}
	for _, pt := range t.Points {
		for _, c := range []string{pt.Channel, pt.Positive, pt.Negative} {
			if strings.HasPrefix(c, "battery") {
				td.hybrid = t.Kind == kind.Inverter
			}
		}
	}
	for i := range t.Points {
		p := &t.Points[i]
		if p.Numeric() {
			continue
		}
		s := "SIM"
		switch p.Nameplate {
		case template.PlateManufacturer:
			s = t.Vendor
		case template.PlateModel:
			s = t.Model
		case template.PlateSerial:
			s = serialOf(d.cfg.ID)
		case template.PlateVersion:
			s = "SIM 1.0"
		}
		if _, prefix, ok := t.Example(p.Name); ok && prefix != "" {
			s = prefix + "-SIM"
		}
		p.EncodeText(s, td.words(i))
		td.texts[p.Name] = s
	}
	return td, nil
}

// words returns the image registers of point i.
func (td *tplDevice) words(i int) []uint16 {
	p := &td.t.Points[i]
	bi := td.t.BlockOf(i)
	off := int(p.Address - td.t.Blocks[bi].Address)
	return td.blocks[bi][off : off+p.Size()]
}

// flows sets the device's powers from the plant's state at p.t.
func (td *tplDevice) flows(d *Device, p *Plant) {
	// A battery, or the battery of a hybrid inverter, takes the plant's
	// surplus and covers its deficit within its rating (discharging
	// positive).
	batW := func(rated float64) float64 {
		w := math.Max(-rated, math.Min(rated, p.bal.LoadW-p.bal.PVW))
		if w > 0 && td.socPct <= 5 || w < 0 && td.socPct >= 95 {
			w = 0
		}
		return w
	}
	switch td.t.Kind {
	case kind.Inverter:
		pv := d.cfg.RatedW * math.Min(1, math.Max(0, p.env.ghi/1000*0.85))
		td.dcW = pv / 0.97
		td.batW = 0
		if td.hybrid {
			td.batW = batW(d.cfg.RatedW / 2)
		}
		td.acW = pv + td.batW
	case kind.Battery:
		td.batW = batW(d.cfg.RatedW)
	}
}

// integrate adds the energy of hours at the current powers.
func (td *tplDevice) integrate(d *Device, p *Plant, hours float64) {
	td.flows(d, p)
	switch td.t.Kind {
	case kind.Meter:
		if g := p.bal.GridW; g > 0 {
			td.impWh += g * hours
		} else {
			td.expWh -= g * hours
		}
	case kind.Inverter:
		td.genWh += td.acW * hours
	}
	if td.t.Kind == kind.Battery || td.hybrid {
		if c := max(d.cfg.CapacityWh, defaultBatteryWh); c > 0 {
			td.socPct = math.Max(0, math.Min(100, td.socPct-td.batW*hours/c*100))
		}
	}
}

// render writes every numeric point's value into the image.
func (td *tplDevice) render(d *Device, p *Plant) {
	td.flows(d, p)
	for i := range td.t.Points {
		pt := &td.t.Points[i]
		if !pt.Numeric() {
			continue
		}
		td.values[pt.Name] = pt.Encode(td.value(d, p, pt), td.words(i))
	}
}

// value is the point's value in its base unit with the template's sign:
// the value of the channel it feeds (signed for a split point).
func (td *tplDevice) value(d *Device, p *Plant, pt *template.Point) float64 {
	if pt.Nameplate == template.PlateRatedPowerW {
		return d.cfg.RatedW
	}
	ch := pt.Channel
	if ch == "" {
		ch = pt.Positive
	}
	if ch == "" {
		ch = pt.Negative
	}
	if v, _, ok := td.t.Example(pt.Name); ok && ch == "" {
		return v // an identification point that feeds no channel
	}
	env := &p.env
	var w, q float64 // the device's active and reactive power
	switch td.t.Kind {
	case kind.Meter:
		w, q = p.bal.GridW, 0.2*p.bal.LoadW
	case kind.Inverter:
		w = td.acW
	case kind.Battery:
		w = td.batW
	}
	s := math.Hypot(w, q)
	phases := 3.0
	if td.t.Point("voltageL2") == nil && td.t.Point("voltageB") == nil {
		phases = 1 // a single-phase device
	}
	phase := func(c string) int { return int(c[len(c)-1] - 'A') }
	switch ch {
	case "activePower":
		return w
	case "gridConsumption", "gridFeedIn":
		if pt.Channel == ch { // a register of its own: the one direction
			if ch == "gridConsumption" {
				return math.Max(0, w)
			}
			return math.Max(0, -w)
		}
		return w // a signed power split by the template
	case "batteryDischarging", "batteryCharging":
		return td.batW
	case "activePowerPhaseA", "activePowerPhaseB", "activePowerPhaseC":
		return w / phases
	case "reactivePower":
		return q
	case "reactivePowerPhaseA", "reactivePowerPhaseB", "reactivePowerPhaseC":
		return q / phases
	case "apparentPower":
		return s
	case "apparentPowerPhaseA", "apparentPowerPhaseB", "apparentPowerPhaseC":
		return s / phases
	case "voltagePhaseA", "voltagePhaseB", "voltagePhaseC":
		return env.phaseV[phase(ch)]
	case "voltagePhaseA2B":
		return lineV(env.phaseV[0], env.phaseV[1])
	case "voltagePhaseB2C":
		return lineV(env.phaseV[1], env.phaseV[2])
	case "voltagePhaseC2A":
		return lineV(env.phaseV[2], env.phaseV[0])
	case "currentPhaseA", "currentPhaseB", "currentPhaseC":
		return s / phases / env.phaseV[phase(ch)]
	case "gridFrequency":
		return env.hz
	case "displacementPowerFactor":
		if s < 1 {
			return 1
		}
		return w / s
	case "gridConsumptionTotal":
		return math.Floor(td.impWh)
	case "gridFeedInTotal":
		return math.Floor(td.expWh)
	case "pvGeneration":
		return td.dcW
	case "pvGenerationTotal":
		return math.Floor(td.genWh)
	case "dcVoltageInput":
		return 580 + 20*float64(pt.Index)
	case "dcCurrentInput":
		return td.dcW / 2 / (580 + 20*float64(pt.Index))
	case "isolationResistance":
		return 2.5e6
	case "batteryStateOfCharge":
		return td.socPct
	case "batteryStateOfHealth":
		return 97
	case "batteryVoltage":
		return 400
	case "batteryTemperature":
		return 24
	}
	return 0
}

// readTemplate answers a read of function fn (3 or 4) from a template
// device's image: it must lie within one of the template's blocks.
func (p *Plant) readTemplate(d *Device, fn byte, addr, quantity uint16) ([]uint16, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	td := d.tpl
	for i, b := range td.t.Blocks {
		if b.Function != fn || addr < b.Address || int(addr)+int(quantity) > int(b.Address)+int(b.Count) {
			continue
		}
		p.advanceLocked(p.simNow())
		p.renderLocked(d)
		off := int(addr - b.Address)
		out := make([]uint16, quantity)
		copy(out, td.blocks[i][off:])
		if fn == 4 {
			// The vendor's registers no point holds (eastron.go).
			out, _ = td.readEastron(d, p, addr, quantity, out)
		}
		return out, nil
	}
	if fn == 4 {
		// A register of the vendor's full map (eastron.go).
		p.advanceLocked(p.simNow())
		p.renderLocked(d)
		if out, ok := td.readEastron(d, p, addr, quantity, nil); ok {
			return out, nil
		}
	}
	return nil, errIllegalAddress
}

// TemplateValues returns what a template device's image holds now, by
// point name, as plantd's template decoder reads it: numbers in the
// point's base unit with the template's sign, and texts. ok is false for
// a device without a template.
func (d *Device) TemplateValues() (values map[string]float64, texts map[string]string, ok bool) {
	if d.tpl == nil {
		return nil, nil, false
	}
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	p.renderLocked(d)
	return maps.Clone(d.tpl.values), maps.Clone(d.tpl.texts), true
}
