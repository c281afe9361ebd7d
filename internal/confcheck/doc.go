// Package confcheck is how a component validates its own section of
// plantd's config file: a [Checker] reports problems by field path, and
// package config, which calls each section's Validate with one, turns
// them into its file:line problems (the line of the field, or of its
// nearest enclosing key or entry the file has). A component's config
// section type, its defaults and its Validate live with the component
// (mqtt/mqttconfig, gridcontrol/gridconfig, gridinput, modbusproxy,
// sunspecserver/serverconfig, httpapi/oauth2/oauthconfig,
// charger/chargerconfig, consumer/consumerconfig); the rules between
// sections (a plant that exists, ids unique across sections) stay in
// config.
//
// It also holds the rules several sections share: durations in range,
// listen addresses, host names, IP allow-lists, and the API's roles
// ([RoleStandard], [RoleInstaller], [RoleGridOperator], [RoleRank]),
// which tokens, OAuth clients, the MQTT uplink, Home Assistant and the
// SunSpec server name.
//
// # Import boundary
//
// It imports only the standard library: every config section package and
// config itself import it.
//
// Imports: none
package confcheck
