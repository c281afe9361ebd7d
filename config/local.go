package config

import "plantd/mqtt/mqttconfig"

// Local configures integrations on the local network, apart from the cloud
// uplink (mqtt): today Home Assistant over a LAN broker (local.mqtt,
// mqtt/mqttconfig.Local).
type Local struct {
	MQTT mqttconfig.Local `yaml:"mqtt"`
}

// local checks the local section: the link's own settings, and that its
// client id is not the uplink's (the gateway id) while the uplink is on.
func (v *validator) local() {
	uplink := ""
	if len(v.c.MQTT.BrokerURLs()) > 0 {
		uplink = v.c.Gateway.ID
	}
	v.c.Local.MQTT.Validate(v.ck.In("local.mqtt"), uplink)
}
