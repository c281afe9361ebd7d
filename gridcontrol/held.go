package gridcontrol

import "slices"

// HeldModels returns the SunSpec models that carry a control of the
// device plantd holds now (a window of a schedule, or the fallback ramp
// after it): the limit's 123 and 704, the connection's 123, a curve
// command's curve models, a battery setpoint's 124 or 802 (both until
// its first write read back). A control is held from the moment plantd claims
// it, before its first write, so that no third-party write slips in while
// that write is read back. A device proxy refuses third-party writes to
// them (plantd/modbusproxy). nil when plantd holds nothing of the device.
func (c *Controller) HeldModels(deviceID string) []uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	dc := c.devs[deviceID]
	if dc == nil {
		return nil
	}
	var out []uint16
	for k, st := range dc.ctl {
		if !st.owned && !st.claimed {
			continue
		}
		if h := dc.held[k]; k == ctlBattery && h != nil {
			// A battery with 124 and 802 is driven by one of them.
			if !slices.Contains(out, h.model) {
				out = append(out, h.model)
			}
			continue
		}
		for _, cmd := range allCommands() {
			if cmd.Control == k {
				for _, m := range cmd.Models {
					if !slices.Contains(out, m) {
						out = append(out, m)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
