// Package hass puts the plant into Home Assistant over a broker of the
// local network (config local.mqtt; docs/home-assistant.md for what
// appears there): MQTT discovery configs, states, availability, and the
// commands Home Assistant sends back.
//
// # Job
//
// [New] builds a [Link] from a [Config] and its [Deps]; [Link.Run] runs it
// until its context ends. It is independent of the cloud uplink (package
// mqtt): its own paho connection and client id, its own topic prefix, no
// outbox (a state that could not be sent is replaced by the next one),
// nothing of the cloud's topics. paho reconnects on its own (at most a
// minute apart, clean session; the link subscribes and publishes
// everything again on each connection); a first connection that has not
// succeeded after 30 s is logged once, a lost one each time.
//
// # Topics
//
// With P the prefix (default "plantd") and G the gateway id:
//
//   - P/G/availability: "online" (retained) once connected, "offline" as
//     the connection's last will and at a clean stop. Every entity names it
//     as its availability topic, so a killed plantd makes them unavailable.
//   - D/<component>/<node>/<object>/config (D the discovery prefix,
//     default "homeassistant"): one retained JSON config per entity, with
//     a unique_id and the HA device it belongs to (one per plant, one per
//     plant device, the plant device's via_device). node is the gateway id
//     and object the entity's scope, id and key, in the characters Home
//     Assistant allows there ([A-Za-z0-9_-]; any other byte of an id,
//     and '_', is written as '_' and two hex digits, so distinct ids never
//     meet). A config that changes (a device discovered later with its
//     nameplate, a new channel) is published again; an entity of this
//     process that is gone (a device removed by a reload) gets an empty
//     config, which removes it from Home Assistant. At each connection
//     the link also reads the retained configs under its node (a
//     subscription that ends after the first round): one of a plant or
//     device no longer configured, left by an earlier run, is cleared
//     the same way. A configured device's configs stay, published by
//     this run or not (it may not have answered yet; Home Assistant
//     keeps the entity's settings).
//   - P/G/plant/<plantId>/<key> and P/G/device/<deviceId>/<key>: one plain
//     value per entity (retained, QoS 0), no JSON and no templates.
//     Published when it changes (compared every Config.Check) and all of
//     them at least every Config.Interval (default 5 min), and all at every
//     (re)connection.
//   - P/G/plant/<plantId>/feed_in_limit/set, P/G/device/<id>/mode/set and
//     P/G/device/<id>/switch/set: the commands.
//
// # Entities
//
// Per plant: live power sensors (W, device_class power, state_class
// measurement) of the energy balance; lifetime energy sensors (kWh,
// device_class energy, state_class total_increasing) from the store's
// energy balance over the plant's whole history (its 5-minute rollups,
// read again when the rollup watermark moves: they grow as rollups
// complete, and never fall, as Home Assistant's Energy dashboard needs); with a battery its charge, discharge and state
// of charge; and the FeedInLimit number (0..100 %, the limit in force in
// % of the limit-carrying inverters' rating, a limit in W converted, 100
// without one); with a control box over EEBus (Deps.Limit14a) the §14a
// consumption limit in force on the controllable consumers (W, unknown
// without one); with Deps.Plan, the tariffs' plant has its import and
// feed-in price now (EUR/kWh, no device class: HA's monetary class takes
// a currency and no measurement) and the plan's battery action (enum,
// BatteryActions), and a plant the PV forecast runs for its forecast
// energy for the rest of today (kWh, energy, no state class; "None"
// while unknown). Per active device: its health (an enum sensor and a
// problem binary_sensor) and a sensor for every channel it has reported,
// one per input of a per-input channel (key and name end in the API's
// input label: dc_power_input_a, "DC power input A"), lifetime counters
// in kWh as total_increasing.
// Per consumer of the home energy manager: a select (Auto, On, Off) and a
// switch (the output read back; ON and OFF set the mode On and Off). A
// charger's select offers MinPV too, and it has a charging current
// sensor (A) and one of the car's state of charge (%, unknown when the
// charger does not report it).
//
// # Commands
//
// A command goes straight to the part that decides it, through Deps, as
// the HTTP API's handlers call them, with the checks the API applied to
// Home Assistant's requests, in its order: the rate limit of the
// credential (Config.CommandRate and CommandBurst, the API's per
// credential), the role (installer or above, as POST schedules and PUT
// consumer mode need; standard refuses every command), the target (a
// configured plant, a consumer), the value. A FeedInLimit value V is one
// gridcontrol.Order (FeedInLimit, V %, from now for Config.LimitWindow)
// given to Deps.Grid's Submit, grid control's one gate, with the
// eligibility check on, from the Origin {door ha, the client id, the
// configured role, channel "ha:<clientId>"}: createdBy and the plant
// log's ScheduleAccepted name "ha:<clientId> (<role>)"; the window the
// link's previous value made for the plant is then cancelled (one value,
// one window; after a restart the previous one runs to its end). Its own channel
// makes its windows combine with every other origin's by the most
// restrictive limit, so a value from Home Assistant never loosens another
// origin's limit (a grid operator's above all), whatever its role, while
// it replaces Home Assistant's own last one. A mode or a switch is
// Deps.Consumers' SetMode by "ha:<clientId>". Grid control's and the
// consumers' own rules (validation, safety, precedence, guards) apply
// as to any door.
//
// Authorization (DESIGN §6.1): the broker's credentials and ACL are the
// gate of the command topics; plantd sees no publisher's identity.
// Commands act with installer by default; New refuses gridoperator
// unless the connection has a username and a password (config
// validation too).
//
// Bounds: a payload over MaxCommandPayload (64 KiB) is refused in paho's
// handler before it is parsed or copied; every log line of a command
// quotes at most 64 bytes of its payload (and 128 of its topic) with the
// payload's size. Refusals (too large, retained, queue full, rate limit,
// role, target, value, grid control's refusal with its fields as the
// API's problem listed them) are logged per kind of command (the topic
// with its id as "+", command=P/G/device/+/mode/set; P/G/+/+/+/set for
// a topic that names no command) and reason, at once the first time,
// then at most once a minute with the number suppressed since
// (plantd/internal/logthrottle, plantd's one limiter of such lines): a
// publisher makes up ids and topics at will, and MQTT names no
// publisher. Accepted commands are logged per topic (a configured
// plant's or consumer's) the same way, and the configs a previous run
// left per object (at most 32 apart, then as object=other). The counts
// left are logged on the check tick once their minute has passed and
// when Run returns, so a flood of bad
// publishes gives a few lines. A
// command that arrives retained (a broker replays it at every
// connection) is ignored. After a command the entity's state is
// published again once the commands waiting are handled, so Home
// Assistant shows what holds after a refusal too. Handlers only queue
// messages (64 at most); Run handles them one at a time.
//
// # Import boundary
//
// hass imports plant and plant/kind (the live state and the domain's
// types), gridcontrol (the gate's types: Origin, Order, Schedule,
// ValidationError), config (the role names), internal/logthrottle (the
// commands' and left configs' log lines), paho, golang.org/x/time/rate and the standard
// library. It never imports httpapi, store, mqtt,
// consumer, devices, modbus or cmd, and nothing net/http; nothing imports
// it but cmd/plantd.
//
// Imports: plantd/config, plantd/gridcontrol, plantd/internal/logthrottle, plantd/plant, plantd/plant/kind
package hass
