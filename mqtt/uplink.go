package mqtt

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"plantd/config"
	"plantd/plant"
	"plantd/store"
)

// Outbox is the durable queue of messages (*store.Store).
type Outbox interface {
	EnqueueBatch(ctx context.Context, msgs []store.OutboxAppend, mark *store.OutboxMark) ([]uint64, error)
	PeekAfter(ctx context.Context, stream string, after uint64, limit int) ([]store.OutboxMessage, error)
	PeekStreams(ctx context.Context, after map[string]uint64, limit int) (map[string][]store.OutboxMessage, error)
	AckBatch(ctx context.Context, upTo map[string]uint64) error
	OutboxStreams(ctx context.Context) ([]store.OutboxStream, error)
	TrimOutbox(ctx context.Context, stream string, maxRows int, olderThan time.Time) (int64, error)
	Mark(ctx context.Context, key string) (int64, bool, error)
	// SyncMark writes a mark synced to the disk (the live seqs'
	// reservation); ReserveSeqs raises a stream's durable floor, the
	// highest seq that may be published, synced likewise; ReleaseSeqs
	// lowers the floors to what was numbered, at a clean stop (floors.go).
	SyncMark(ctx context.Context, key string, value int64) error
	ReserveSeqs(ctx context.Context, stream string, upTo uint64) (uint64, error)
	ReleaseSeqs(ctx context.Context) error
}

// LiveSource is the live state (*plant.Live).
type LiveSource interface {
	Plants() []plant.Plant
	EnergyBalance(plantID string) (plant.Balance, error)
	Devices(plantID string) ([]plant.DeviceLive, error)
}

// EEBusSource is the EEBus door's state of a plant (cmd/plantd's adapter
// of package eebus): an item encoded as JSON with the API's field names;
// ok false for a plant without a control box.
type EEBusSource interface {
	EEBusItem(plantID string) (item any, ok bool)
}

// PlanSource is a plant's tariffs and day-ahead plan (cmd/plantd's
// adapter: the HTTP API's answers of GET /gateway/v1/tariffs and
// /gateway/v1/plan): each item a JSON object with the API's field names,
// and a key that changes exactly when the item says something new (the
// item less what moves with the clock alone); ok false for a plant
// without tariffs.
type PlanSource interface {
	TariffsItem(plantID string) (item json.RawMessage, key []byte, ok bool)
	PlanItem(plantID string) (item json.RawMessage, key []byte, ok bool)
}

// RollupSource gives completed 5-minute rollups (the store, through
// cmd/plantd's adapter).
type RollupSource interface {
	// RolledUpTo is the time up to which rollups are complete.
	RolledUpTo() time.Time
	// Rollups returns a plant's energy-balance rows (the EnergyBalance
	// set's, package plant's) starting in [from, to), oldest first; an
	// item's time is its row's end.
	Rollups(ctx context.Context, plantID string, from, to time.Time) ([]plant.SetRow, error)
}

// Config configures an Uplink. Zero values take the defaults.
type Config struct {
	// Broker is the broker URL (tcp://, mqtt://, ssl://, tls://, mqtts://,
	// ws://, wss://). Brokers are several URLs of one clustered broker
	// (its nodes, or load balancers in front of it): the uplink connects
	// to one, drawn at random, and after every failed attempt or lost
	// connection takes the next one. Give Broker or Brokers, not both.
	Broker  string
	Brokers []string
	// Username and Password authenticate at the broker. They are never
	// logged.
	Username, Password string
	// CAFile verifies the broker's certificate (default: the system's
	// roots); ClientCert and ClientKey authenticate plantd. TLS overrides
	// all three when set.
	CAFile, ClientCert, ClientKey string
	TLS                           *tls.Config
	// GatewayID is the client id and the topics' {gatewayId}; required.
	GatewayID string
	// Version is plantd's version, shown in the state topic.
	Version string
	// TopicPrefix precedes the gateway id (default "plantd/v1").
	TopicPrefix string
	// KeepAlive (default 30 s).
	KeepAlive time.Duration
	// MaxRows and MaxAge cap each rollup and log stream of the outbox
	// (defaults 500000 and 720 h). The ack stream is never trimmed; live
	// streams are not in the outbox (live.go).
	MaxRows int
	MaxAge  time.Duration
	// LiveInterval is how often live values are published (default 10 s).
	LiveInterval time.Duration
	// RollupInterval is how often completed rollups are looked for
	// (default 5 s).
	RollupInterval time.Duration
	// BacklogMessagesPerSecond and BacklogBytesPerSecond cap the drain of
	// the rollup and log streams (defaults 100 and 256 KiB; negative: no
	// cap).
	BacklogMessagesPerSecond float64
	BacklogBytesPerSecond    float64
	// BatchBytes bounds the payload of a batched backlog message (default
	// 4096).
	BatchBytes int
	// Window is the number of messages in flight (default 256).
	Window int
	// BackoffMin and BackoffMax bound the reconnect delay (defaults 1 s
	// and 60 s); ConnectTimeout bounds a connection attempt and
	// PublishTimeout the wait for a PUBACK (defaults 10 s and 30 s).
	BackoffMin, BackoffMax, ConnectTimeout, PublishTimeout time.Duration
	// RemoteControl subscribes to down/schedule/+ and down/cmd.
	RemoteControl bool
	// MaxCommandBytes bounds an incoming message (default 64 KiB; larger
	// ones are answered 413).
	MaxCommandBytes int
}

// Deps are the Uplink's collaborators.
type Deps struct {
	// Outbox is required.
	Outbox Outbox
	// Live is optional (no live topics without it).
	Live LiveSource
	// Rollups is optional (no rollup topics without it).
	Rollups RollupSource
	// EEBus is optional: the grid operator's control box over EEBus, whose
	// state goes up with the live values (up/live/eebus/{plantId}).
	EEBus EEBusSource
	// Plan is optional: the tariffs' price slots and the day-ahead plan,
	// which go up when they change (up/live/tariffs/{plantId},
	// up/live/plan/{plantId}).
	Plan PlanSource
	// Commands answers remote requests (required with RemoteControl): the
	// HTTP API's handler, running requests with the cloud's role.
	Commands http.Handler
}

var gatewayIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Broker != "" && len(c.Brokers) > 0:
		return c, errors.New("mqtt: give Broker or Brokers, not both")
	case c.Broker != "":
		c.Brokers, c.Broker = []string{c.Broker}, ""
	case len(c.Brokers) == 0:
		return c, errors.New("mqtt: broker is empty")
	}
	for i, b := range c.Brokers {
		if b == "" {
			return c, fmt.Errorf("mqtt: broker %d of %d is empty", i+1, len(c.Brokers))
		}
	}
	c.Brokers = slices.Clone(c.Brokers)
	if !gatewayIDPattern.MatchString(c.GatewayID) {
		return c, fmt.Errorf("mqtt: gateway id %q is not letters, digits, '.', '_' and '-' (at most 64)", c.GatewayID)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	// The configurable ones come from the config's defaults, so that a
	// zero Config and an empty plantd.yaml behave alike.
	cd := config.Default().MQTT
	if c.TopicPrefix == "" {
		c.TopicPrefix = cd.TopicPrefix
	}
	def(&c.KeepAlive, cd.KeepAlive)
	defInt(&c.MaxRows, cd.Outbox.MaxRows)
	def(&c.MaxAge, cd.Outbox.MaxAge)
	def(&c.LiveInterval, cd.LiveInterval)
	def(&c.RollupInterval, 5*time.Second)
	if c.BacklogMessagesPerSecond == 0 {
		c.BacklogMessagesPerSecond = cd.Backlog.MessagesPerSecond
	}
	if c.BacklogBytesPerSecond == 0 {
		c.BacklogBytesPerSecond = cd.Backlog.BytesPerSecond
	}
	defInt(&c.BatchBytes, 4096)
	defInt(&c.Window, 256)
	def(&c.BackoffMin, time.Second)
	def(&c.BackoffMax, 60*time.Second)
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.PublishTimeout, 30*time.Second)
	defInt(&c.MaxCommandBytes, 64<<10)
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = c.BackoffMin
	}
	return c, nil
}

// tlsConfig builds the TLS settings of the config (nil: the defaults).
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.TLS != nil {
		return c.TLS, nil
	}
	if c.CAFile == "" && c.ClientCert == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt: ca file %s: no PEM certificate", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("mqtt: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Uplink publishes to the cloud broker and takes commands from it.
type Uplink struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	tls     *tls.Config
	topics  topics
	bootID  string
	started time.Time

	logs chan plant.LogEntry
	cmds chan inbound

	// schedIn holds per plant (of the topic) the newest schedule message
	// not yet taken by the command worker, and the versions it made
	// obsolete; schedWake wakes the worker.
	schedMu   sync.Mutex
	schedIn   map[string]*schedSlot
	schedWake chan struct{}
	// pending are the schedules kept to be evaluated again, by plant of
	// the topic (command worker only).
	pending map[string]*pendingSchedule

	// notify: streams with new outbox rows, and a wake-up for the sender.
	notifyMu sync.Mutex
	notified map[string]bool
	wake     chan struct{}

	connected atomic.Bool
	running   atomic.Bool
	// subscribed: the session's subscriptions to down/ are in place.
	subscribed atomic.Bool

	// lastDevice is the LastUpdate of each device's last live message
	// (producer goroutine only).
	lastDevice map[string]time.Time
	// lastPlan is the key of each tariffs and plan stream's item last put in
	// connection planConn (producer goroutine only; a new connection
	// sends them again: live messages are not replayed).
	lastPlan map[string][]byte
	planConn uint64
	// live holds the live streams (in memory, live.go).
	live *liveQueue
	// floors are the outbox streams' durable floors as this run reserved
	// them (0: not yet), seqBlock how far ahead (floors.go). Sessions'
	// goroutine only (one session at a time).
	floors   map[string]uint64
	seqBlock uint64
	// reservations counts the floors' and the live mark's synced writes.
	reservations atomic.Uint64

	stMu       sync.Mutex
	stateSince time.Time
	lastErr    string
	// broker is the broker URL in use, or last tried (for logs: without
	// user information).
	broker  string
	streams map[string]*streamStats

	published, acked, attempts, connects, logDropped, cmdDropped, commands atomic.Uint64
	publishedBytes                                                         atomic.Uint64
	// burstDropped counts the incoming messages dropped since the last
	// log line about drops (see reportDrops).
	burstDropped atomic.Uint64
}

// streamStats are per-stream counters.
type streamStats struct {
	depth   int
	oldest  time.Time
	dropped uint64
}

// inbound is a message from the broker; retained: sent because plantd
// subscribed (the topic's retained message), not as it was published.
type inbound struct {
	topic    string
	payload  []byte
	retained bool
}

// New validates cfg and deps and builds the Uplink. logger is the
// component's logger (nil discards).
func New(cfg Config, deps Deps, logger *slog.Logger) (*Uplink, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if deps.Outbox == nil {
		return nil, errors.New("mqtt: Deps.Outbox is required")
	}
	if c.RemoteControl && deps.Commands == nil {
		return nil, errors.New("mqtt: remote control needs Deps.Commands")
	}
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Uplink{
		cfg:        c,
		deps:       deps,
		log:        logger,
		tls:        tc,
		topics:     newTopics(c.TopicPrefix, c.GatewayID),
		bootID:     hex.EncodeToString(b[:]),
		started:    time.Now(),
		logs:       make(chan plant.LogEntry, 4096),
		cmds:       make(chan inbound, 64),
		schedIn:    map[string]*schedSlot{},
		schedWake:  make(chan struct{}, 1),
		pending:    map[string]*pendingSchedule{},
		notified:   map[string]bool{},
		wake:       make(chan struct{}, 1),
		lastDevice: map[string]time.Time{},
		lastPlan:   map[string][]byte{},
		live:       newLiveQueue(),
		floors:     map[string]uint64{},
		seqBlock:   seqBlock,
		streams:    map[string]*streamStats{},
	}, nil
}

// BootID identifies this run of plantd in every envelope.
func (u *Uplink) BootID() string { return u.bootID }

// Log queues a log entry for the log stream of its plant. It never
// blocks: when the queue is full the entry is dropped and counted.
func (u *Uplink) Log(e plant.LogEntry) bool {
	if e.PlantID == "" {
		return false
	}
	select {
	case u.logs <- e:
		return true
	default:
		u.logDropped.Add(1)
		return false
	}
}

// notify tells the sender that streams have new rows (after the commit).
func (u *Uplink) notify(streams ...string) {
	u.notifyMu.Lock()
	for _, s := range streams {
		u.notified[s] = true
	}
	u.notifyMu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// takeNotified returns and clears the notified streams.
func (u *Uplink) takeNotified() []string {
	u.notifyMu.Lock()
	defer u.notifyMu.Unlock()
	out := make([]string, 0, len(u.notified))
	for s := range u.notified {
		out = append(out, s)
	}
	clear(u.notified)
	return out
}

// Run connects, publishes and answers commands until ctx ends; then it
// publishes the offline state, disconnects and returns nil.
func (u *Uplink) Run(ctx context.Context) error {
	if !u.running.CompareAndSwap(false, true) {
		return errors.New("mqtt: Run called twice")
	}
	u.setState(false, "")
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); u.produce(ctx) }()
	go func() { defer wg.Done(); u.handleCommands(ctx) }()
	go func() { defer wg.Done(); u.connectLoop(ctx) }()
	wg.Wait()
	u.releaseSeqs(ctx)
	return nil
}

// setState records the connection state for Status.
func (u *Uplink) setState(connected bool, errText string) {
	u.connected.Store(connected)
	u.stMu.Lock()
	u.stateSince = time.Now()
	u.lastErr = errText
	u.stMu.Unlock()
}

// Status is the uplink's state for /healthz and /metrics.
type Status struct {
	Connected bool
	Since     time.Time
	LastError string
	// Broker is the broker URL in use while connected, else the one last
	// tried ("" before the first attempt), without user information.
	Broker string
	// Published and Acked count MQTT messages; PublishedBytes their
	// payloads; Attempts connection attempts, Connects successful ones.
	Published, PublishedBytes, Acked, Attempts, Connects uint64
	// LogDropped: log entries refused because the uplink's queue was
	// full; CommandsDropped: incoming messages refused likewise;
	// Commands: requests answered.
	LogDropped, CommandsDropped, Commands uint64
	Streams                               []StreamStatus
}

// StreamStatus is one stream: of the outbox, or a live stream (in
// memory).
type StreamStatus struct {
	Stream string
	// Depth is the number of unacknowledged messages (of a live stream:
	// the one waiting, if any, and those in flight); Oldest the creation
	// time of the oldest in the outbox, or of a live stream's waiting one
	// (zero when none).
	Depth  int
	Oldest time.Time
	// Dropped counts the messages dropped since start: trimmed by the
	// caps, or live messages given up unacknowledged with their
	// connection (or left in the outbox by an older plantd).
	Dropped uint64
}

// Status returns the uplink's state. Stream depths are refreshed every
// few seconds by the uplink, not by this call.
func (u *Uplink) Status() Status {
	st := Status{
		Connected: u.connected.Load(), Published: u.published.Load(), PublishedBytes: u.publishedBytes.Load(),
		Acked: u.acked.Load(), Attempts: u.attempts.Load(), Connects: u.connects.Load(),
		LogDropped: u.logDropped.Load(), CommandsDropped: u.cmdDropped.Load(), Commands: u.commands.Load(),
	}
	u.stMu.Lock()
	defer u.stMu.Unlock()
	st.Since, st.LastError, st.Broker = u.stateSince, u.lastErr, u.broker
	for name, s := range u.streams {
		st.Streams = append(st.Streams, StreamStatus{Stream: name, Depth: s.depth, Oldest: s.oldest, Dropped: s.dropped})
	}
	sortStreams(st.Streams)
	return st
}

// ConnectedState is the status word of the HTTP API's connectedService
// (Connected, Disconnected) and since when it holds.
func (u *Uplink) ConnectedState() (string, time.Time) {
	u.stMu.Lock()
	defer u.stMu.Unlock()
	if u.connected.Load() {
		return "Connected", u.stateSince
	}
	return "Disconnected", u.stateSince
}
