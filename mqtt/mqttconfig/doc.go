// Package mqttconfig is the MQTT sections of plantd's config file: the
// cloud uplink (mqtt: [Config], with its [Outbox] and [Backlog]) and Home
// Assistant's link on the local network (local.mqtt: [Local]), their
// defaults and their Validate, which package config calls with the
// file's lines. A broker URL and a topic prefix have one rule for both
// ([CheckBrokerURL], [CheckTopicPrefix]); an MQTT client id (the gateway
// id is the uplink's) has [ValidClientID].
//
// It is a leaf apart from package mqtt, which stores and publishes (and
// imports the store): config imports this package, not mqtt.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package mqttconfig
