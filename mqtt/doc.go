// Package mqtt is plantd's cloud uplink: it publishes the plant's live
// values, 5-minute rollups and log entries to an MQTT broker through the
// store's durable outbox, and takes schedules and commands from the cloud
// (DESIGN §7; every topic and payload is in docs/mqtt.md).
//
// # Job
//
// [New] builds an [Uplink] from a [Config] and its [Deps]; [Uplink.Run]
// runs it until its context ends. The daemon hands it log entries with
// [Uplink.Log] (never blocks); live values it reads itself from the live
// state ([LiveSource]) at Config.LiveInterval, with a plant's control box
// over EEBus ([EEBusSource]) on live/eebus/<plantId>, a plant's tariffs
// and day-ahead plan ([PlanSource]) on live/tariffs/<plantId> and
// live/plan/<plantId> when they change (and once per connection), rollups from a
// [RollupSource] as they complete. /healthz and /metrics read
// [Uplink.Status].
//
// # Delivery
//
// Rollups, log entries and acks are written to the outbox (SQLite)
// before they are published, with a per-stream sequence number that is
// never reused, and deleted only after their PUBACK arrived on the
// connection they were sent on; after a reconnect everything not
// acknowledged is sent again (the backend dedupes on gatewayId, stream,
// seq). Live values are not in the outbox but in memory (live.go): per
// live stream the newest message not yet published (a newer tick
// replaces it) and the count of those in flight, whose PUBACK only frees
// their place. They are made only while connected and never replayed: a
// live message in flight when its connection ends (or plantd stops) is
// given up, counted as dropped and logged, a waiting one made before the
// connection is discarded unnumbered; that is the only gap of a live
// stream. A live message is numbered when published, so live seqs are
// contiguous while connected; the outbox mark "live.seq" reserves them
// in blocks of 65,536 (one synced write per start and per block), so a
// restart numbers above every seq of the run before. A seq of an outbox
// stream is published only under the stream's durable floor (floors.go:
// reserved a block of 65,536 ahead in a commit synced to the disk), so a
// power cut, which loses the outbox's last commits, shows as a gap in
// the stream's seqs, never as a seq handed out again. A kill -9 loses
// the live values in memory (current values, sent again by the next
// tick of the next run) and nothing of the outbox. Live and ack
// streams go first; rollup and log streams drain beside them, oldest
// first, under a message and byte rate cap, several outbox rows batched
// per MQTT message. Per-stream caps by count and age drop the oldest
// rollup and log messages, counted and logged; the ack stream is never
// trimmed, and live rows found in the outbox (left by an older plantd)
// are all dropped, counted.
//
// # Connection
//
// One paho client per connection, with clean session, automatic
// reconnection off and the last will "offline" on the retained state
// topic: plantd's own loop reconnects with exponential backoff and jitter
// (1 s up to 60 s; a connection that lasted less than a minute does not
// reset the backoff, so a broker that accepts and drops is not hammered),
// and subscribes again on every connect. With several brokers
// (Config.Brokers, the nodes of one cluster) it starts at a random one and
// takes the next after every failed attempt or lost connection, with the
// same backoff; Status().Broker names the one in use. A publish token not completed
// within PublishTimeout ends the connection; tokens of an old connection
// never acknowledge anything. Message handlers only hand messages to a
// worker goroutine. Each connection is one session (session.go): the
// online state, the subscriptions, the publish loop with its PUBACKs,
// and the teardown, all of that connection's own.
//
// # Commands
//
// When Config.RemoteControl is set, down/schedule/{plantId} and down/cmd
// are answered on up/ack: each request is run in process through the HTTP
// API's handler (Deps.Commands, which cmd/plantd builds with the role the
// config gives the cloud), so the status and problem-JSON are those of
// HTTP. Schedules (schedules.go) are coalesced per plant, the newest
// version evaluated and the others answered 409; versions are bounded
// (≤ 2^53−1, and at most a day ahead of the gateway's clock in epoch
// milliseconds, 409 version-too-far-ahead) and a lower one is answered
// 409; a last answered version beyond that bound (left by an older
// plantd, or taken while the gateway's clock ran ahead) is void, so no
// plant stays stuck and the owner has nothing to reset; a version counts as answered (the outbox mark
// "schedule/<plant>", written with its ack) only when answered for good:
// one that waits for the plant's first poll round, for the API's rate
// limit, or whose refusal is only of devices not answering yet (422
// with retrying) is kept in memory and evaluated again when that is
// over. A schedule on a migrated plant id follows the API's 308 once and
// says migratedTo in its ack. The body is the API's, so a recurring
// command (repeat, duration, until; httpapi/README.md) comes over MQTT as
// it is, and its refusals are the API's 400 naming the field.
//
// # Import boundary
//
// mqtt imports plant and plant/kind (the domain types it publishes, the
// problem document of its acks), store (the outbox's message types),
// config, internal/backoff (the reconnect wait), internal/jsondup (a
// command message that gives a key twice is answered 400), paho and the standard
// library; never httpapi, devices, poller, modbus or cmd. Nothing imports
// mqtt but cmd/plantd.
//
// Imports: plantd/config, plantd/internal/backoff, plantd/internal/jsondup, plantd/plant, plantd/plant/kind, plantd/store
package mqtt
