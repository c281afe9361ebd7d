package config

import (
	"fmt"

	"plantd/modbusproxy/proxyconfig"
	"plantd/plant/kind"
)

// The SunSpec Modbus server's section (modbusServer) is
// sunspecserver/serverconfig's and a device's proxy (devices[].proxy)
// proxyconfig.Settings; each checks itself. Here are the rules that
// look at other sections, which config finds and passes to their Validate:
// the server's plant exists, no two proxies
// listen at one address, and a proxy's device has a Modbus connection
// (which config tells the proxy's Validate).

func (v *validator) modbusServer() {
	plants, _ := v.c.ids()
	v.c.ModbusServer.Validate(v.ck.In("modbusServer"), func(id string) bool { return plants[id] })
}

// eebus checks the EEBus section (eebus/eebusconfig) with the plants it
// may name.
func (v *validator) eebus() {
	plants, _ := v.c.ids()
	v.c.EEBus.Validate(v.ck.In("eebus"), func(id string) bool { return plants[id] })
}

// tariffs checks the tariffs' section (tariffs/tariffconfig), when
// given, with the plants it may name.
func (v *validator) tariffs() {
	if v.c.Tariffs == nil {
		return
	}
	plants, _ := v.c.ids()
	v.c.Tariffs.Validate(v.ck.In("tariffs"), func(id string) bool { return plants[id] })
}

// forecast checks the PV forecast's section (forecast/forecastconfig)
// with the plants its service may name and whether they have a location.
func (v *validator) forecast() {
	v.c.Forecast.Validate(v.ck.In("forecast"), func(id string) (known, located bool) {
		for _, p := range v.c.Plants {
			if p.ID == id {
				return true, p.Location.Latitude != nil && p.Location.Longitude != nil
			}
		}
		return false, false
	})
}

// proxies checks the devices' proxies, with what each needs to know of
// the others (an address taken) and of its device (a consumer).
func (v *validator) proxies() {
	seen := map[string]string{}
	for i, d := range v.c.Devices {
		if d.Proxy == nil {
			continue
		}
		d.Proxy.Validate(v.ck.In(fmt.Sprintf("devices[%d].proxy", i)),
			proxyconfig.Others{ListenedBy: seen[d.Proxy.Listen], Consumer: d.Kind == kind.Consumer})
		if d.Proxy.Listen != "" {
			seen[d.Proxy.Listen] = d.ID
		}
	}
}
