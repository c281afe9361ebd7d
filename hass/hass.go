package hass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/time/rate"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/internal/logthrottle"
	"plantd/plant"
)

// Config configures a Link (cmd/plantd maps mqttconfig.Local onto it).
type Config struct {
	// Broker is the broker's URL (tcp://host:port, ssl://, ws://, ...),
	// without credentials (it is logged): Username and Password
	// authenticate at it.
	Broker, Username, Password string
	// ClientID is the MQTT client id; it must differ from the uplink's.
	ClientID string
	// GatewayID names the gateway in the topics; Version is plantd's, shown
	// as the plant devices' software version.
	GatewayID, Version string
	// Prefix of plantd's own topics and Home Assistant's DiscoveryPrefix.
	Prefix, DiscoveryPrefix string
	// Interval is the longest time between two publications of a state
	// (default 5 min); Check how often states are compared with what was
	// published last (default 2 s).
	Interval, Check time.Duration
	// LimitWindow is how long a feed-in limit set from Home Assistant holds
	// (default 24 h).
	LimitWindow time.Duration
	// Role is the role commands act with (config.RoleStandard: none is
	// taken; RoleInstaller, the default; RoleGridOperator, which needs
	// Username and Password: the broker's credentials and ACL are the
	// gate of the command topics).
	Role string
	// CommandRate and CommandBurst bound the commands handled (a token
	// bucket, as the HTTP API's per credential; defaults 20/s and 40):
	// the others are refused.
	CommandRate  float64
	CommandBurst int
}

// Live is what the link reads of the live state (*plant.Live).
type Live interface {
	Plants() []plant.Plant
	Devices(plantID string) ([]plant.DeviceLive, error)
	EnergyBalance(plantID string) (plant.Balance, error)
}

// Energy answers measurement sets (the store): the plants' lifetime
// energy balance, read again when RolledUpTo (the end of the last
// 5-minute rollup) moves.
type Energy interface {
	QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error)
	RolledUpTo() time.Time
}

// Limits gives the feed-in limit in force (*gridcontrol.Controller): in
// % of the rated power of the inverters carrying limits, 100 without one;
// an error when it has no value in % (a limit in W, no rating known yet).
type Limits interface {
	FeedInLimitPct(plantID string) (float64, error)
}

// Limit14a is the §14a consumption limit the grid operator's control box
// sets over EEBus (cmd/plantd's adapter of package eebus):
// ConsumptionLimit14aW answers the limit in force on a plant's
// controllable consumers (on false: none) and ok false for a plant
// without a control box over EEBus.
type Limit14a interface {
	ConsumptionLimit14aW(plantID string) (w float64, on, ok bool)
}

// Plan is a plant's tariffs, PV forecast and day-ahead plan now
// (cmd/plantd's adapter of packages tariffs, forecast and siteplan).
type Plan interface {
	PlanState(plantID string) PlanState
}

// PlanState is what the price, forecast and plan sensors of a plant
// show. Tariffs and Forecast say which the plant has (its sensors exist
// whatever their values); a nil value or an empty action is unknown.
type PlanState struct {
	// Tariffs: the plant is the tariffs' plant. ImportEURPerKWh and
	// FeedInEURPerKWh are the prices of the slot in progress;
	// BatteryAction is the plan's battery action in it (one of
	// BatteryActions), SurplusOnly while control falls back.
	Tariffs                          bool
	ImportEURPerKWh, FeedInEURPerKWh *float64
	BatteryAction                    string
	// Forecast: the PV forecast runs for the plant; ForecastRestOfTodayKWh
	// is its energy from the slot in progress to the plant's midnight.
	Forecast               bool
	ForecastRestOfTodayKWh *float64
}

// SurplusOnly is the battery plan sensor's state while control falls
// back to surplus-only (no plan: prices stale or missing).
const SurplusOnly = "surplus-only"

// BatteryActions are the battery plan sensor's options: the planner's
// actions (plan.BatteryAction's values) and SurplusOnly.
var BatteryActions = []string{"hold", "keepRoom", "chargePV", "chargeGrid", "discharge", SurplusOnly}

// Grid is grid control's one gate (*gridcontrol.Controller): the
// FeedInLimit number's windows, a new value's window ending the one it
// replaces.
type Grid interface {
	Submit(ctx context.Context, plantID string, by gridcontrol.Origin, orders []gridcontrol.Order, opts ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error)
	Cancel(ctx context.Context, plantID, scheduleID string, by gridcontrol.Origin) error
}

// Consumers are the home energy manager's consumers (*consumer.Manager):
// their list, and their mode (an unknown id is an error wrapping
// plant.ErrUnknownDevice; by names who set it, for the plant log).
type Consumers interface {
	Consumers() []plant.ConsumerStatus
	SetMode(ctx context.Context, deviceID string, mode plant.ConsumerMode, by string) (plant.ConsumerStatus, error)
}

// Deps are the link's sources. Live is required; without Energy there
// are no energy sensors, without Limits no feed-in limit state, without
// Grid no feed-in limit command, without Consumers no consumer entities.
type Deps struct {
	Live      Live
	Energy    Energy
	Limits    Limits
	Grid      Grid
	Consumers Consumers
	// Limit14a is optional: the control box's §14a limit as a sensor.
	Limit14a Limit14a
	// Plan is optional: the prices, the PV forecast and the plan's
	// battery action as sensors.
	Plan Plan
}

// Defaults of Config.
const (
	DefaultInterval    = 5 * time.Minute
	DefaultCheck       = 2 * time.Second
	DefaultLimitWindow = 24 * time.Hour
	// DefaultCommandRate and DefaultCommandBurst are the HTTP API's
	// defaults per credential.
	DefaultCommandRate  = 20
	DefaultCommandBurst = 40
	// firstConnectWarn is when a first connection that has not succeeded
	// is logged.
	firstConnectWarn = 30 * time.Second
	// commandTimeout bounds one command's request.
	commandTimeout = 30 * time.Second
	// publishWait bounds the wait for one publication's token.
	publishWait = 10 * time.Second
)

// Link is Home Assistant's link over a LAN broker.
type Link struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	// cmds are the command messages, handed over by paho's handler.
	cmds chan command
	// connected is signalled by paho's connect handler (each connection).
	connected chan struct{}
	// names caches the channels' entity keys and names (Run only).
	names channelNames
	// channels are the readings each device has reported, plain and per
	// input: its sensors (Run only).
	channels map[string][]sensorKey
	// energies are the plants' lifetime energies as of the rollup
	// watermark energiesAt (Run only).
	energies   map[string]map[string]float64
	energiesAt time.Time
	// published holds what the current connection published last: topic
	// to payload, discovery configs and states (Run only).
	published map[string]string
	// held is the FeedInLimit window each plant holds from this link,
	// ended when a new value replaces it (Run only).
	held map[string]string
	// configDevice holds, for each config topic this process published,
	// its HA device as published (Run only): a config whose device
	// changed is published again, one no longer listed is cleared.
	configDevice map[string]string
	// owners are the plants' and devices' object-id prefixes
	// ("device_<escaped id>") as configured when the connection came up:
	// a retained config under the gateway's node that names none of them
	// was left by a run that had that plant or device, and is cleared
	// (paho's handler reads it).
	owners atomic.Pointer[map[string]bool]
	// limiter bounds the commands handled (Config.CommandRate).
	limiter *rate.Limiter
	// refused rate-limits the log lines of refused commands per kind of
	// command and reason, accepted those of accepted commands per topic,
	// left those about configs a previous run left per object.
	refused, accepted, left *logthrottle.Limiter
}

// command is a message on a command topic: its topic, the topic's
// levels, and the payload (at most MaxCommandPayload bytes).
type command struct {
	topic, scope, id, key string
	payload               []byte
}

// New checks cfg and deps and returns a link.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Link, error) {
	if cfg.Broker == "" || cfg.ClientID == "" || cfg.GatewayID == "" || cfg.Prefix == "" || cfg.DiscoveryPrefix == "" {
		return nil, errors.New("hass: Broker, ClientID, GatewayID, Prefix and DiscoveryPrefix are required")
	}
	if _, err := url.Parse(cfg.Broker); err != nil {
		return nil, fmt.Errorf("hass: broker: %w", err)
	}
	if deps.Live == nil {
		return nil, errors.New("hass: Deps.Live is required")
	}
	switch cfg.Role {
	case "":
		cfg.Role = config.RoleInstaller
	case config.RoleStandard, config.RoleInstaller:
	case config.RoleGridOperator:
		if cfg.Username == "" || cfg.Password == "" {
			return nil, errors.New("hass: role gridoperator needs the broker connection's credentials (Username and Password; local.mqtt.username and local.mqtt.password): " +
				"the broker's credentials and ACL are the only gate of the command topics")
		}
	default:
		return nil, fmt.Errorf("hass: role %q is not one (standard, installer or gridoperator)", cfg.Role)
	}
	if cfg.CommandRate <= 0 {
		cfg.CommandRate = DefaultCommandRate
	}
	if cfg.CommandBurst < 1 {
		cfg.CommandBurst = DefaultCommandBurst
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Check <= 0 {
		cfg.Check = DefaultCheck
	}
	if cfg.LimitWindow <= 0 {
		cfg.LimitWindow = DefaultLimitWindow
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Link{cfg: cfg, deps: deps, log: logger, cmds: make(chan command, 64), connected: make(chan struct{}, 1),
		channels: map[string][]sensorKey{}, names: channelNames{}, published: map[string]string{}, held: map[string]string{}, configDevice: map[string]string{},
		limiter: rate.NewLimiter(rate.Limit(cfg.CommandRate), cfg.CommandBurst), refused: logthrottle.New(logger, "command", 0, 0), accepted: logthrottle.New(logger, "topic", 0, 0),
		left: logthrottle.New(logger, "object", 0, maxLeftLogged)}, nil
}

// Topics.

func (l *Link) base() string              { return l.cfg.Prefix + "/" + l.cfg.GatewayID }
func (l *Link) availabilityTopic() string { return l.base() + "/availability" }
func (l *Link) stateTopic(e *entity) string {
	return l.base() + "/" + e.scope + "/" + e.id + "/" + e.key
}
func (l *Link) configTopic(e *entity) string {
	return l.cfg.DiscoveryPrefix + "/" + e.component + "/" + escapeID(l.cfg.GatewayID) + "/" + e.objectID() + "/config"
}

// commandFilter matches every command topic.
func (l *Link) commandFilter() string { return l.base() + "/+/+/+/set" }

// configFilter matches every discovery config of this gateway.
func (l *Link) configFilter() string {
	return l.cfg.DiscoveryPrefix + "/+/" + escapeID(l.cfg.GatewayID) + "/+/config"
}

// Run connects and serves until ctx ends; then it publishes "offline" and
// disconnects. A broker that cannot be reached is retried (paho's
// reconnection, at most a minute apart) and logged; Run returns nil on
// cancel.
func (l *Link) Run(ctx context.Context) error {
	o := paho.NewClientOptions().
		AddBroker(l.cfg.Broker).
		SetClientID(l.cfg.ClientID).
		SetCleanSession(true).
		SetProtocolVersion(4).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(5*time.Second).
		SetMaxReconnectInterval(time.Minute).
		SetResumeSubs(false).
		SetOrderMatters(false).
		SetKeepAlive(30*time.Second).
		SetWill(l.availabilityTopic(), "offline", 1, true).
		SetOnConnectHandler(func(paho.Client) {
			select {
			case l.connected <- struct{}{}:
			default:
			}
		}).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			l.log.Warn("home assistant broker connection lost; reconnecting", "broker", l.cfg.Broker, "err", err)
		})
	if l.cfg.Username != "" {
		o.SetUsername(l.cfg.Username).SetPassword(l.cfg.Password)
	}
	c := paho.NewClient(o)
	c.Connect() // retried in the background until it succeeds
	defer c.Disconnect(250)
	// The counts of lines not logged yet, once no more come.
	defer l.refused.FlushAll()
	defer l.accepted.FlushAll()
	defer l.left.FlushAll()
	check := time.NewTicker(l.cfg.Check)
	defer check.Stop()
	full := time.NewTicker(l.cfg.Interval)
	defer full.Stop()
	// paho retries the first connection without saying why it failed:
	// say once that it has not succeeded yet.
	slow := time.NewTimer(firstConnectWarn)
	defer slow.Stop()
	up := false
	for {
		select {
		case <-slow.C:
			if !up {
				l.log.Warn("home assistant broker not reachable yet; retrying", "broker", l.cfg.Broker, "after", firstConnectWarn)
			}
		case <-ctx.Done():
			if c.IsConnectionOpen() {
				l.wait(c.Publish(l.availabilityTopic(), 1, true, "offline"))
			}
			return nil
		case <-l.connected:
			up = true
			l.log.Info("home assistant broker connected", "broker", l.cfg.Broker, "clientId", l.cfg.ClientID)
			clear(l.published)
			if err := l.wait(c.Subscribe(l.commandFilter(), 1, l.onMessage)); err != nil {
				l.log.Warn("home assistant: subscribe to the command topics", "err", err)
			}
			// The broker hands over the retained configs on subscribing;
			// those of plants and devices no longer configured are
			// cleared (onConfig). The subscription ends after the first
			// round: the broker sent them before that round's answers.
			l.owners.Store(l.configuredOwners())
			cfgSub := l.wait(c.Subscribe(l.configFilter(), 1, l.onConfig))
			if cfgSub != nil {
				l.log.Warn("home assistant: subscribe to the discovery configs", "err", cfgSub)
			}
			l.wait(c.Publish(l.availabilityTopic(), 1, true, "online"))
			l.round(ctx, c, true, true)
			if cfgSub == nil {
				l.wait(c.Unsubscribe(l.configFilter()))
			}
		case <-check.C:
			l.refused.Flush()
			l.accepted.Flush()
			l.left.Flush()
			if up && c.IsConnectionOpen() {
				l.round(ctx, c, false, false)
			}
		case <-full.C:
			if up && c.IsConnectionOpen() {
				l.round(ctx, c, false, true)
			}
		case m := <-l.cmds:
			l.handle(ctx, m)
			// The entity's state goes out again, changed or not: Home
			// Assistant shows what holds after a refusal too. One round
			// once the commands waiting are handled.
			delete(l.published, l.base()+"/"+m.scope+"/"+m.id+"/"+m.key)
			if up && c.IsConnectionOpen() && len(l.cmds) == 0 {
				l.round(ctx, c, false, false)
			}
		}
	}
}

// onMessage is paho's handler of the command topics: it refuses a
// payload over MaxCommandPayload and a retained command, and queues the
// others.
func (l *Link) onMessage(_ paho.Client, m paho.Message) {
	rest, ok := strings.CutPrefix(m.Topic(), l.base()+"/")
	parts := strings.SplitN(rest, "/", 5)
	if !ok || len(parts) != 4 || parts[3] != "set" {
		return
	}
	cmd := command{topic: m.Topic(), scope: parts[0], id: parts[1], key: parts[2], payload: m.Payload()}
	if n := len(cmd.payload); n > MaxCommandPayload {
		// Refused before it is parsed or copied; the line quotes its
		// first bytes.
		l.refuse(cmd, reasonSize, fmt.Sprintf("a payload of %d bytes, over the %d the command topics take", n, MaxCommandPayload))
		return
	}
	if m.Retained() {
		// A command someone left retained would be applied again at
		// every connection: commands are one-off messages.
		l.refuse(cmd, reasonRetained, "a command that arrives retained is never applied")
		return
	}
	select {
	case l.cmds <- cmd:
	default:
		l.refuse(cmd, reasonBusy, fmt.Sprintf("%d commands wait already", cap(l.cmds)))
	}
}

// configuredOwners returns the object-id prefixes of the configured
// plants, devices and consumers.
func (l *Link) configuredOwners() *map[string]bool {
	owners := map[string]bool{}
	for _, p := range l.deps.Live.Plants() {
		owners[scopePlant+"_"+escapeID(p.ID)] = true
		devs, err := l.deps.Live.Devices(p.ID)
		if err != nil {
			continue
		}
		for _, d := range devs {
			owners[scopeDevice+"_"+escapeID(d.Info.ID)] = true
		}
	}
	if l.deps.Consumers != nil {
		for _, cs := range l.deps.Consumers.Consumers() {
			owners[scopeDevice+"_"+escapeID(cs.DeviceID)] = true
		}
	}
	return &owners
}

// onConfig is paho's handler of the gateway's discovery configs while the
// link looks for those a previous run left: a retained config whose
// object id ("<scope>_<escaped id>__<key>") names no configured plant or
// device gets an empty retained config, which removes its entity from
// Home Assistant. A configured device's entity this run has not (yet)
// published stays: the device may be offline, and Home Assistant keeps
// its entity's settings.
func (l *Link) onConfig(c paho.Client, m paho.Message) {
	if !m.Retained() || len(m.Payload()) == 0 {
		return // this run's own configs, as the broker forwards them
	}
	parts := strings.Split(m.Topic(), "/")
	if len(parts) < 2 {
		return
	}
	owner, _, ok := strings.Cut(parts[len(parts)-2], "__")
	owners := l.owners.Load()
	if !ok || owners == nil || (*owners)[owner] {
		return
	}
	// Anyone the broker lets publish there can leave configs: the lines
	// are limited per object (and maxLeftLogged objects apart).
	l.left.Log(slog.LevelInfo, excerpt([]byte(owner), topicExcerptLen), "left-config",
		"home assistant: clearing the entities a previous run left of a plant or device no longer configured")
	if err := l.wait(c.Publish(m.Topic(), 1, true, "")); err != nil {
		l.left.Log(slog.LevelWarn, excerpt([]byte(owner), topicExcerptLen), "clear-failed", "home assistant: clear a discovery config",
			"topic", excerpt([]byte(m.Topic()), topicExcerptLen), "err", err)
	}
}

// round reads the plant and publishes what changed since the
// connection's last round: configs first (all of them with configsToo),
// then states (all of them with force).
func (l *Link) round(ctx context.Context, c paho.Client, configsToo, force bool) {
	ents := l.entities(l.read(ctx))
	changed, gone := l.changedConfigs(ents, configsToo)
	for _, pc := range changed {
		l.publish(c, pc.topic, 1, pc.payload, true)
	}
	for _, topic := range gone {
		// An entity of this process that is gone: an empty config
		// removes it from Home Assistant.
		l.publish(c, topic, 1, "", true)
	}
	for i := range ents {
		e := &ents[i]
		if e.state != "" {
			l.publish(c, l.stateTopic(e), 0, e.state, force)
		}
	}
}

// topicPayload is a message to publish.
type topicPayload struct{ topic, payload string }

// changedConfigs returns the discovery configs to publish (every one with
// all; else those new on this connection or whose HA device changed, a
// nameplate learned later) and the config topics of this process's
// entities that are gone. An entity's own keys follow from its topic (its
// platform, scope, id and key), so only its device can change: configs
// are encoded only when they are published.
func (l *Link) changedConfigs(ents []entity, all bool) (changed []topicPayload, gone []string) {
	seen := make(map[string]bool, len(ents))
	for i := range ents {
		e := &ents[i]
		topic := l.configTopic(e)
		seen[topic] = true
		fp := e.deviceJSON
		if last, ok := l.configDevice[topic]; ok && last == fp && !all {
			continue
		}
		body, err := json.Marshal(l.configOf(e))
		if err != nil {
			l.log.Warn("home assistant: encode a discovery config", "topic", topic, "err", err)
			continue
		}
		changed = append(changed, topicPayload{topic, string(body)})
		l.configDevice[topic] = fp
	}
	for topic := range l.configDevice {
		if !seen[topic] {
			gone = append(gone, topic)
			delete(l.configDevice, topic)
		}
	}
	return changed, gone
}

// publish sends a retained message unless the connection sent the same
// payload on the topic last (force sends it anyway).
func (l *Link) publish(c paho.Client, topic string, qos byte, payload string, force bool) {
	if last, ok := l.published[topic]; ok && last == payload && !force {
		return
	}
	tok := c.Publish(topic, qos, true, payload)
	if qos > 0 {
		if err := l.wait(tok); err != nil {
			l.log.Debug("home assistant: publish", "topic", topic, "err", err)
			return
		}
	}
	l.published[topic] = payload
}

// wait waits for a token (at most publishWait) and returns its error.
func (l *Link) wait(tok paho.Token) error {
	if !tok.WaitTimeout(publishWait) {
		return errors.New("hass: no answer from the broker in time")
	}
	return tok.Error()
}

// configOf is an entity's discovery config: its own keys and the common
// ones.
func (l *Link) configOf(e *entity) map[string]any {
	m := make(map[string]any, len(e.config)+8)
	for k, v := range e.config {
		m[k] = v
	}
	m["unique_id"] = "plantd_" + escapeID(l.cfg.GatewayID) + "_" + e.objectID()
	m["name"] = e.name
	m["availability_topic"] = l.availabilityTopic()
	m["device"] = e.device
	m["state_topic"] = l.stateTopic(e)
	if e.command {
		m["command_topic"] = l.stateTopic(e) + "/set"
		m["qos"] = 1
	}
	return m
}

// read takes the round's snapshot of the plant.
func (l *Link) read(ctx context.Context) *snapshot {
	s := &snapshot{plants: l.deps.Live.Plants(), devices: map[string][]plant.DeviceLive{}, balances: map[string]plant.Balance{},
		limits: map[string]string{}, limit14a: map[string]string{}, plans: map[string]PlanState{}, consumers: map[string]plant.ConsumerStatus{}, channels: l.channels}
	var upTo time.Time
	if l.deps.Energy != nil {
		upTo = l.deps.Energy.RolledUpTo()
	}
	refresh := l.deps.Energy != nil && (l.energies == nil || !upTo.Equal(l.energiesAt))
	fresh, failed := map[string]map[string]float64{}, false
	for _, p := range s.plants {
		devs, err := l.deps.Live.Devices(p.ID)
		if err != nil {
			continue
		}
		s.devices[p.ID] = devs
		for _, d := range devs {
			for _, r := range d.Readings {
				if k := keyOf(r); !slices.Contains(l.channels[d.Info.ID], k) {
					l.channels[d.Info.ID] = append(l.channels[d.Info.ID], k)
				}
			}
		}
		if b, err := l.deps.Live.EnergyBalance(p.ID); err == nil {
			s.balances[p.ID] = b
		}
		if refresh {
			e, err := lifetimeEnergy(ctx, l.deps.Energy, p.ID)
			if err != nil {
				l.log.Warn("home assistant: read the lifetime energy balance", "plant", p.ID, "err", err)
				failed = true
			} else {
				fresh[p.ID] = e
			}
		}
		if l.deps.Limit14a != nil {
			if w, on, ok := l.deps.Limit14a.ConsumptionLimit14aW(p.ID); ok {
				s.limit14a[p.ID] = "None" // no limit: Home Assistant's unknown
				if on {
					s.limit14a[p.ID] = fmtNum(w, 0)
				}
			}
		}
		if l.deps.Plan != nil {
			s.plans[p.ID] = l.deps.Plan.PlanState(p.ID)
		}
		if l.deps.Limits != nil {
			s.limits[p.ID] = "None" // unknown
			if pct, err := l.deps.Limits.FeedInLimitPct(p.ID); err == nil {
				s.limits[p.ID] = fmtNum(pct, 1)
			}
		}
	}
	switch {
	case refresh && failed:
		// The values read before stay; the next round reads again.
		l.energiesAt = time.Time{}
		if l.energies == nil {
			l.energies = fresh
		}
	case refresh:
		l.energies, l.energiesAt = fresh, upTo
	}
	s.energies = l.energies
	if l.deps.Consumers != nil {
		for _, cs := range l.deps.Consumers.Consumers() {
			s.consumers[cs.DeviceID] = cs
		}
	}
	return s
}
