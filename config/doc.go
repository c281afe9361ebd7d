// Package config reads plantd's YAML configuration file
// (/etc/plantd/plantd.yaml): its schema as Go types, the defaults, and
// validation with messages that name the field and the line.
//
// # Reading
//
// [Load] reads a file and [Parse] its contents. A config is at most
// [MaxFileSize] (1 MiB; real ones are a few KiB): [ReadFile], which every
// path that reads the file uses (plantd run at start and at each reload,
// check-config, the commands that edit it), refuses a larger regular file
// from its size before reading it, and stops reading anything else one byte
// past the cap ([ErrTooLarge]); a reload refused so keeps the running config.
// Both decode the YAML through yaml.Node, so every value keeps its line, and
// are strict:
//
//   - a key that is not a field is an error, with a suggestion when it is
//     close to one ("devices[0].prot: unknown field (did you mean "port"?)");
//   - a value of the wrong type is an error ("devices[0].pollInterval: "fast"
//     is not a duration"); integers do not pass as durations, "yes" is not a
//     boolean, and a quoted number is a string;
//   - a key given twice in one mapping is an error; so is a second YAML
//     document in the file.
//
// Ids (plant, device, migrated) are strings; an unquoted number such as
// 7190000 is read as the string "7190000", exactly as written. Anchors,
// aliases and merge keys (<<: *anchor) work, for example to share settings
// between devices. A key without a value (null) keeps the default.
//
// Durations are Go duration strings ("250ms", "5s", "168h"); 0 may be
// written without a unit. Dates are YYYY-MM-DD.
//
// # Defaults
//
// All defaults are set from defaults.go (a component's section's by its
// SetDefaults), on a fresh Config before decoding and
// on every new list element (plant, device) before decoding into it, so a
// value the file gives, even 0 or false, is kept and validated rather than
// replaced. Then the defaults that depend on other values are derived: the
// gateway id from the host name, a device's plant when there is only one
// plant, a device's name from its id. [Default] returns a Config with the
// defaults and nothing else. Each field's doc comment gives its default and
// range.
//
// # Validation
//
// [Config.Validate] checks everything and reports every problem at once, as
// an [*Errors]: a list of [Problem] (file, line, field path, message),
// sorted by line, one line each in its Error text:
//
//	plantd.yaml:4: plants[0].timezone: unknown time zone "Europe/Berln"
//	plantd.yaml:8: devices[0].prot: unknown field (did you mean "port"?)
//	plantd.yaml:11: devices[1].port: 70000 is not a TCP port
//
// Load and Parse return decoding problems and validation problems together;
// a value that could not be decoded is not reported again by validation.
// Problems about one entry (a duplicate id, two enabled devices at the same
// host, port and unit, a device naming an unknown plant, a TLS certificate
// without its key) carry the line of the offending entry or key; a value
// missing from the file gets the line of its enclosing entry.
//
// Validation does not touch the network or the file system (TLS and CA files
// are read by their users when they start), so a config can be checked on
// any machine. Time zones are loaded with time.LoadLocation: a binary that
// must not depend on the system's zoneinfo imports time/tzdata.
//
// # The documented example
//
// packaging/plantd.yaml.example documents every key with a comment. It stays
// in packaging/, where the package build takes it from; go:embed cannot
// reach it from here, so the package offers no copy of it at run time. The
// tests read it from disk and check that it validates with no problem and
// that every field of [Config] appears in it with a comment (keys of
// optional alternatives are written commented out as "#key: value", and the
// test reads those too).
//
// # Editing
//
// [AddToken] and [AddOAuthClient] (plantd token add, plantd client add)
// add one list entry to the file: they splice its lines into the text, so
// every other line stays as written (comments, the commented keys with
// their indentation and so in their sections, blank lines); only a flow
// list over several lines is re-encoded from the YAML tree. The file must
// validate before and after, and [WriteFileKeeping] replaces it.
//
// # Sections of the components
//
// A section that belongs to one component is that component's: its type,
// its defaults (SetDefaults) and its Validate live with it, and Config
// holds it by field: mqtt and local.mqtt (mqtt/mqttconfig), gridControl
// (gridcontrol/gridconfig), an input's contacts and pattern table
// (inputconfig.Settings, inline in [Input]), modbusServer
// (sunspecserver/serverconfig), a device's proxy (proxyconfig.Settings),
// oauthClients (httpapi/oauth2/oauthconfig), ocpp (charger/chargerconfig),
// eebus (eebus/eebusconfig), tariffs (tariffs/tariffconfig, a pointer:
// off when absent), forecast (forecast/forecastconfig),
// a device's consumer settings and a plant's battery priority
// (consumer/consumerconfig, which embeds consumer/drivers.Settings).
// Validate calls each with an internal/confcheck.Checker at the
// section's key, which turns their problems (a field path and a message)
// into [Problem]s with the file and line, and hands them what they need
// of other sections (which plants exist, the address another proxy
// listens at). Config keeps the gateway-wide sections (gateway, http,
// database, log, plants, devices, tokens, migrated) and every rule
// between sections: ids unique, a device's plant or a consumer's meter
// existing, devices sharing a connection or a serial line agreeing.
//
// # Import boundary
//
// This package imports the standard library, go.yaml.in/yaml/v3
// (the maintained continuation of gopkg.in/yaml.v3, which gin's and
// kin-openapi's dependencies still pull in indirectly),
// plantd/plant/kind (the leaf that defines the device kinds, for
// [Device.Kind]), plantd/devices/template (the names of the device
// templates, for [Device.Template]), plantd/modbus/serialline (the serial
// line's standard rates, serialline.StandardBauds, a leaf below the
// transport), plantd/consumer/drivers (the consumer drivers' defaults; it
// reaches Modbus through an interface of its own),
// plantd/internal/confcheck and the components' section packages above
// (mqtt/mqttconfig, gridcontrol/gridconfig, gridinput/inputconfig,
// sunspecserver/serverconfig, modbusproxy/proxyconfig,
// httpapi/oauth2/oauthconfig, charger/chargerconfig,
// consumer/consumerconfig, eebus/eebusconfig, tariffs/tariffconfig,
// forecast/forecastconfig). It must not import any other plantd package
// (a component itself, as mqtt or gridcontrol, which import config):
// every component takes its part of the Config (or values copied from
// it) from cmd/plantd, which alone wires them together. None of these
// imports the Modbus transport (plantd/modbus) or goburrow, directly or
// not, so that neither do the packages that import config (mqtt,
// httpapi, gridcontrol, hass, sunspecserver); internal/layout's test
// holds it.
//
// Imports: plantd/charger/chargerconfig, plantd/consumer/consumerconfig, plantd/consumer/drivers, plantd/devices/template, plantd/eebus/eebusconfig, plantd/forecast/forecastconfig, plantd/gridcontrol/gridconfig, plantd/gridinput/inputconfig, plantd/httpapi/oauth2/oauthconfig, plantd/internal/confcheck, plantd/modbus/serialline, plantd/modbusproxy/proxyconfig, plantd/mqtt/mqttconfig, plantd/plant/kind, plantd/sunspecserver/serverconfig, plantd/tariffs/tariffconfig
package config
