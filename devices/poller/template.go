package poller

import (
	"context"
	"fmt"

	"plantd/devices/channels"
	"plantd/devices/template"
	"plantd/plant"
	"plantd/sunspec"
)

// deviceTemplate is a template device's map and read buffers.
type deviceTemplate struct {
	m        *channels.TemplateMap
	regs     template.Registers
	readings []plant.Reading
}

// readTemplate polls a template device: on its first poll of an
// appearance (d.info nil) it reads every block, checks the template's
// identification and builds the device's identity from the nameplate
// points; then, and on every later poll, it reads the poll blocks and
// puts the channel values into s.Readings.
func (d *device) readTemplate(ctx context.Context, s *plant.Sample) error {
	if d.tpl == nil {
		t, ok := template.Lookup(d.cfg.Template)
		if !ok { // checked by checkConfigs
			return fmt.Errorf("unknown template %q", d.cfg.Template)
		}
		m, err := channels.CompileTemplate(t)
		if err != nil {
			return err
		}
		if n := t.PollRequests(); n > d.cfg.MaxRequests {
			return fmt.Errorf("%w: template %s needs %d requests, budget %d", ErrRequestBudget, t.Name, n, d.cfg.MaxRequests)
		}
		d.tpl = &deviceTemplate{m: m}
	}
	t := d.tpl.m.Template()
	if d.info == nil {
		if err := t.Read(ctx, d.client, &d.tpl.regs, true); err != nil {
			return fmt.Errorf("identify: %w", err)
		}
		if err := t.Check(&d.tpl.regs); err != nil {
			return fmt.Errorf("identify: %w", err)
		}
		pl := t.Plate(&d.tpl.regs)
		info := &sunspec.Device{Manufacturer: pl.Manufacturer, Model: pl.Model, Serial: pl.Serial, Version: pl.Version,
			Kind: t.Kind, RatedPowerW: pl.RatedPowerW, Template: t.Name}
		if d.cfg.Kind != "" {
			info.Kind = d.cfg.Kind
		}
		d.info, d.chans = info, channels.NewDevice(info)
		d.log.Info("template device identified", "template", t.Name, "manufacturer", info.Manufacturer,
			"model", info.Model, "serial", info.Serial)
	} else if err := t.Read(ctx, d.client, &d.tpl.regs, false); err != nil {
		return err
	}
	// The readings are the device's sample buffer, refilled by the next
	// poll (plant.Sample.Readings).
	d.tpl.readings = d.tpl.m.Readings(&d.tpl.regs, d.tpl.readings)
	d.chans.Identify(s)
	s.Readings = d.tpl.readings
	return nil
}
