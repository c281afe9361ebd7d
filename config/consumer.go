package config

import (
	"fmt"
	"net"
	"strconv"

	"plantd/consumer/consumerconfig"
	"plantd/consumer/drivers"
	"plantd/plant/kind"
)

// The consumer settings of a device (devices[].consumer) are
// consumer/consumerconfig's, which checks them; here are the rules
// between devices: the kind and the settings belong together, a
// consumer's meter and the consumer it is part of exist, and a coil or a
// charge point id is used once (which config tells the consumer's
// Validate).

// defaultShellyPort replaces Modbus's port 502 for a device driven over
// HTTP.
const defaultShellyPort = 80

// consumers checks the consumer settings of every device (kind and
// settings belong together) and the meters they name.
func (v *validator) consumers() {
	meters := map[string]string{} // meter id -> consumer path
	coils := map[string]string{}  // host:port unit coil -> path
	chargePoints := map[string]string{}
	for i, d := range v.c.Devices {
		path := fmt.Sprintf("devices[%d]", i)
		c := d.Consumer
		switch {
		case d.Kind == kind.Consumer && c == nil:
			v.add(path+".consumer", "required for kind consumer (driver, ratedPower, ...)")
			continue
		case d.Kind != kind.Consumer && c != nil:
			v.add(path+".consumer", "only a device of kind consumer has consumer settings")
			continue
		case c == nil:
			continue
		}
		path += ".consumer"
		var o consumerconfig.Others
		if k, _ := drivers.Lookup(c.Driver); k.Connects == drivers.ConnectsInbound && d.Enabled {
			o.ChargePointID = c.ChargePointID
			if o.ChargePointID == "" {
				o.ChargePointID = d.ID
			}
			if prev, ok := chargePoints[o.ChargePointID]; ok {
				o.ChargePointUsedBy = v.where(prev)
			} else if o.ChargePointID != "" {
				chargePoints[o.ChargePointID] = path
			}
		}
		c.Validate(v.ck.In(path), o)
		if c.Meter != "" {
			v.consumerMeter(path+".meter", c.Meter, d.ID, meters)
		}
		if c.PartOf != "" {
			v.consumerPartOf(path+".partOf", d, c)
		}
		if d.Enabled {
			for _, coil := range c.Coils() {
				key := fmt.Sprintf("%s unit %d coil %d", net.JoinHostPort(canonicalHost(d.Host), strconv.Itoa(d.Port)), d.Unit, coil)
				if prev, ok := coils[key]; ok {
					v.add(path+".coil", "%s is already switched by %s", key, v.where(prev))
				} else {
					coils[key] = path
				}
			}
		}
	}
}

// consumerPartOf checks the consumer a part names: another controllable
// consumer of the same plant that is no part itself.
func (v *validator) consumerPartOf(field string, d Device, c *consumerconfig.Config) {
	if c.Controllable != nil && !*c.Controllable {
		v.add(field, "a part of a §14a device is controllable (remove controllable: false)")
	}
	for _, o := range v.c.Devices {
		if o.ID != c.PartOf {
			continue
		}
		switch {
		case o.ID == d.ID:
			v.add(field, "a consumer is not a part of itself")
		case o.Kind != kind.Consumer || o.Consumer == nil:
			v.add(field, "%q is not a consumer", c.PartOf)
		case o.Consumer.PartOf != "":
			v.add(field, "%q is a part of %q itself: name the whole", c.PartOf, o.Consumer.PartOf)
		case !o.Consumer.IsControllable():
			v.add(field, "%q is not a controllable consumer", c.PartOf)
		case o.Plant != d.Plant:
			v.add(field, "%q is in plant %q, not %q", c.PartOf, o.Plant, d.Plant)
		}
		return
	}
	v.add(field, "no device %q", c.PartOf)
}

// consumerMeter checks the meter a consumer names: a device of kind meter
// (or not yet discovered) in the config, named by one consumer only.
func (v *validator) consumerMeter(field, id, self string, seen map[string]string) {
	if prev, ok := seen[id]; ok {
		v.add(field, "meter %q already measures the consumer of %s", id, v.where(prev))
		return
	}
	seen[id] = field
	for _, d := range v.c.Devices {
		if d.ID != id {
			continue
		}
		if d.Kind != "" && d.Kind != kind.Meter || id == self {
			v.add(field, "%q is not a meter", id)
		}
		return
	}
	v.add(field, "no device %q", id)
}
