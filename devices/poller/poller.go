package poller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"plantd/devices"
	"plantd/devices/channels"

	"plantd/devices/template"
	"plantd/internal/backoff"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// Interval limits and defaults.
const (
	DefaultInterval = 5 * time.Second
	MinInterval     = 250 * time.Millisecond
	// MaxRetryWait bounds the backoff of a failing device.
	MaxRetryWait = 30 * time.Second
	// DefaultMaxRequests is the request budget of one poll: far more than
	// any device plantd knows needs (a classic inverter with every model
	// takes 2 or 3), far fewer than a hostile model length could ask for.
	DefaultMaxRequests = 16
	// staleAfter is how many intervals without an answer turn a stale
	// device offline.
	staleAfter = 3
	// MinStallAfter is the shortest time a poll may take before Stalled
	// reports its device: a poll is many requests, each bounded by the
	// device's timeout, and devices behind one address wait for each
	// other, so only a poll far beyond that is a hang.
	MinStallAfter = 5 * time.Minute
)

// DeviceConfig is one device to poll.
type DeviceConfig struct {
	ID      string
	Address string // host:port, or a serial line's path (TransportRTU)
	// Transport and Serial say how the endpoint is reached (zero: Modbus
	// TCP); see modbus.EndpointConfig.
	Transport modbus.Transport
	Serial    modbus.SerialConfig
	Unit      byte
	// Kind, when set, overrides the kind discovery derives from the models.
	Kind kind.Kind
	// Bases are the addresses probed for the SunSpec map (nil: 40000, 0,
	// 50000).
	Bases []uint16
	// Interval between polls (default 5 s, at least 250 ms).
	Interval time.Duration
	// Timeout of each request (default 2 s).
	Timeout time.Duration
	// ConnectDelay is waited after connecting, before the first request.
	ConnectDelay time.Duration
	// MaxRequests is the most Modbus requests one poll may make (default
	// DefaultMaxRequests); a device whose poll models need more is not
	// polled, its polls fail with ErrRequestBudget.
	MaxRequests int
	// Template names the device template (plantd/devices/template) of a
	// device that speaks no SunSpec ("sdm630"): instead of discovery, the
	// poller reads the template's blocks and checks its identification
	// once per appearance (a mismatch fails the poll with
	// template.ErrNotIdentified), then reads its poll blocks every poll
	// and emits Sample.Readings. Bases are then unused.
	Template string
}

// ErrRequestBudget is the error of a device whose poll would need more
// requests than its budget (DeviceConfig.MaxRequests).
var ErrRequestBudget = errors.New("poll exceeds the request budget")

// Sink receives every sample. It is called from the device's poll and
// must return quickly.
type Sink func(plant.Sample)

// Poller polls a set of devices. The set may change while it runs
// (Update): a device added starts polling, a device removed stops, and the
// others carry on undisturbed.
type Poller struct {
	log  *slog.Logger
	pool *modbus.Pool
	sink Sink
	now  func() time.Time

	mu      sync.Mutex
	devices []*device // configuration order
	// runCtx is Run's context while it runs (nil before); stopping is set
	// once Run waits for the devices' polls to end; none may start then.
	runCtx   context.Context
	stopping bool
	running  sync.WaitGroup
	// firstRound is closed once every device finished its first poll;
	// pending holds the devices that have not (nil once closed).
	firstRound chan struct{}
	pending    map[*device]bool
	// gates holds, per endpoint address, the token a device takes to
	// discover (gate).
	gates map[string]chan struct{}
}

// New checks the device list and returns a poller. The pool is shared with
// other users of the same endpoints (grid control writes); sink gets the
// samples.
func New(cfgs []DeviceConfig, pool *modbus.Pool, sink Sink, logger *slog.Logger) (*Poller, error) {
	if pool == nil || sink == nil {
		return nil, errors.New("poller: pool and sink are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfgs, err := checkConfigs(cfgs)
	if err != nil {
		return nil, err
	}
	p := &Poller{log: logger, pool: pool, sink: sink, now: time.Now, firstRound: make(chan struct{}), pending: map[*device]bool{}, gates: map[string]chan struct{}{}}
	for _, c := range cfgs {
		d := p.newDevice(c)
		p.devices = append(p.devices, d)
		p.pending[d] = true
	}
	setPhases(p.devices, p.pending)
	p.firstRoundDone()
	return p, nil
}

// checkConfigs validates a device list and returns it with the defaults
// filled in.
func checkConfigs(cfgs []DeviceConfig) ([]DeviceConfig, error) {
	out := make([]DeviceConfig, 0, len(cfgs))
	seen := map[string]bool{}
	for _, c := range cfgs {
		if c.ID == "" {
			return nil, errors.New("poller: device without id")
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("poller: device %s listed twice", c.ID)
		}
		seen[c.ID] = true
		if c.Interval == 0 {
			c.Interval = DefaultInterval
		}
		if c.Interval < MinInterval {
			return nil, fmt.Errorf("poller: device %s: interval %v below %v", c.ID, c.Interval, MinInterval)
		}
		if c.Timeout == 0 {
			c.Timeout = modbus.DefaultTimeout
		}
		if c.MaxRequests == 0 {
			c.MaxRequests = DefaultMaxRequests
		}
		if c.MaxRequests < 0 {
			return nil, fmt.Errorf("poller: device %s: negative request budget", c.ID)
		}
		if c.Template != "" {
			t, ok := template.Lookup(c.Template)
			if !ok {
				return nil, fmt.Errorf("poller: device %s: unknown template %q (known: %s)", c.ID, c.Template, strings.Join(template.Names(), ", "))
			}
			if _, err := channels.CompileTemplate(t); err != nil {
				return nil, fmt.Errorf("poller: device %s: %w", c.ID, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// newDevice makes the state of a device; p.mu held or p not yet shared.
func (p *Poller) newDevice(c DeviceConfig) *device {
	ep := p.pool.Endpoint(modbus.EndpointConfig{Address: c.Address, Transport: c.Transport, Serial: c.Serial, Timeout: c.Timeout, ConnectDelay: c.ConnectDelay})
	gate := p.gates[c.Address]
	if gate == nil {
		gate = make(chan struct{}, 1)
		p.gates[c.Address] = gate
	}
	return &device{
		cfg:    c,
		client: ep.Unit(c.Unit, c.Timeout),
		gate:   gate,
		log:    p.log.With("device", c.ID),
		stats:  DeviceStats{ID: c.ID},
	}
}

// equal reports whether two (checked) configs poll a device the same way.
func (c DeviceConfig) equal(o DeviceConfig) bool {
	return c.ID == o.ID && c.Address == o.Address && c.Unit == o.Unit && c.Kind == o.Kind &&
		slices.Equal(c.Bases, o.Bases) && c.Interval == o.Interval && c.Timeout == o.Timeout && c.ConnectDelay == o.ConnectDelay &&
		c.MaxRequests == o.MaxRequests && c.Template == o.Template
}

// firstRoundDone closes firstRound when no device is pending; p.mu held
// or not yet shared.
func (p *Poller) firstRoundDone() {
	if p.pending != nil && len(p.pending) == 0 {
		close(p.firstRound)
		p.pending = nil
	}
}

// FirstRound is closed once every device finished its first poll (online
// or not); at once without devices. A device removed before its first
// poll counts as done; one added before the round ended is waited for.
func (p *Poller) FirstRound() <-chan struct{} { return p.firstRound }

// list returns the devices in configuration order.
func (p *Poller) list() []*device {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.devices)
}

// Stalled lists the devices whose poll has been running for longer than
// their stall bound (MinStallAfter, or 50 times the device's timeout and
// connect delay if that is longer) at now: a hang, not a slow device. The
// other devices carry on regardless; Stalled is what a watchdog asks.
func (p *Poller) Stalled(now time.Time) []string {
	var out []string
	for _, d := range p.list() {
		d.mu.Lock()
		since := d.busySince
		d.mu.Unlock()
		if !since.IsZero() && now.Sub(since) > d.stallAfter() {
			out = append(out, d.cfg.ID)
		}
	}
	return out
}

// Run polls until ctx ends, then returns nil once every device's poll
// has ended.
func (p *Poller) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.runCtx != nil {
		p.mu.Unlock()
		return errors.New("poller: Run called twice")
	}
	p.runCtx = ctx
	for _, d := range p.devices {
		p.startLocked(d)
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	p.running.Wait()
	return nil
}

// startLocked starts polling d under Run's context; p.mu held. A device
// has no goroutine of its own between polls: a timer starts one for each
// poll (time.AfterFunc), which schedules the next and ends. Between polls
// a device costs a timer, not a parked goroutine and its stack (4-8 KB
// each, 8.7 MB at 1,000 devices).
func (p *Poller) startLocked(d *device) {
	if p.runCtx == nil || p.stopping || d.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(p.runCtx)
	d.cancel, d.done = cancel, make(chan struct{})
	p.running.Add(1)
	finish := func() {
		cancel()
		close(d.done)
		p.running.Done()
	}
	d.next = p.now()
	d.timerMu.Lock() // the first poll may end before AfterFunc returns
	defer d.timerMu.Unlock()
	d.timer = time.AfterFunc(0, func() {
		wait, ok := d.step(ctx, p)
		d.timerMu.Lock()
		defer d.timerMu.Unlock()
		if !ok || d.stopped {
			finish()
			return
		}
		d.timer.Reset(wait)
	})
	// Stopping: a timer that had not fired will not; a poll running now
	// sees stopped when it ends (the one that finishes is whichever sees
	// the other's mark first, under timerMu).
	context.AfterFunc(ctx, func() {
		d.timerMu.Lock()
		defer d.timerMu.Unlock()
		d.stopped = true
		if d.timer.Stop() {
			finish()
		}
	})
}

// Changes says what an Update did, by device id.
type Changes struct {
	Added, Removed, Changed []string
}

// Update replaces the device list while the poller runs (or before Run):
// devices no longer listed stop polling, and Update returns once their
// polls have ended, so that no sample of theirs follows; new devices
// start; a device whose config changed is stopped and started anew (and
// discovered again). Devices whose config is the same keep polling on
// their schedule, untouched. An invalid list changes nothing.
func (p *Poller) Update(cfgs []DeviceConfig) (Changes, error) {
	cfgs, err := checkConfigs(cfgs)
	if err != nil {
		return Changes{}, err
	}
	var ch Changes
	p.mu.Lock()
	old := map[string]*device{}
	for _, d := range p.devices {
		old[d.cfg.ID] = d
	}
	var next, fresh, stop []*device
	for _, c := range cfgs {
		d := old[c.ID]
		delete(old, c.ID)
		switch {
		case d == nil:
			ch.Added = append(ch.Added, c.ID)
		case !d.cfg.equal(c):
			ch.Changed = append(ch.Changed, c.ID)
			stop = append(stop, d)
		default:
			next = append(next, d)
			continue
		}
		d = p.newDevice(c)
		fresh = append(fresh, d)
		next = append(next, d)
	}
	for _, d := range p.devices {
		if old[d.cfg.ID] == d {
			ch.Removed = append(ch.Removed, d.cfg.ID)
			stop = append(stop, d)
		}
	}
	p.devices = next
	freshSet := map[*device]bool{}
	for _, d := range fresh {
		freshSet[d] = true
	}
	setPhases(next, freshSet)
	type goroutine struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	var ending []goroutine
	for _, d := range stop {
		if d.cancel != nil {
			ending = append(ending, goroutine{d.cancel, d.done})
		}
	}
	if p.pending != nil {
		for _, d := range stop {
			delete(p.pending, d)
		}
		for _, d := range fresh {
			p.pending[d] = true
		}
		p.firstRoundDone()
	}
	p.mu.Unlock()

	// The replaced devices' polls end before their successors start: one
	// device id is never polled twice at once.
	for _, g := range ending {
		g.cancel()
		<-g.done
	}
	p.mu.Lock()
	for _, d := range fresh {
		if slices.Contains(p.devices, d) { // not replaced by a later Update
			p.startLocked(d)
		}
	}
	p.mu.Unlock()
	return ch, nil
}

// Stats returns the poll counters of every device, in configuration order.
func (p *Poller) Stats() []DeviceStats {
	devs := p.list()
	out := make([]DeviceStats, len(devs))
	for i, d := range devs {
		d.mu.Lock()
		out[i] = d.stats
		d.mu.Unlock()
	}
	return out
}

// DeviceStats counts one device's polls (the domain's plant.PollStats,
// which the consumers' polls report too).
type DeviceStats = plant.PollStats

// device is the state of one polled device; only its running poll writes
// it, Stats reads under mu.
type device struct {
	cfg    DeviceConfig
	client *modbus.Client
	// gate is shared by the devices at one address: a poll that will
	// discover its device holds it (step), so that the units behind a
	// gateway discover one after the other, as its connection serves them
	// anyway, and the others wait at the top of their poll with a small
	// stack. At start every device discovers at once: 1,000 units behind
	// 50 addresses had 1,000 goroutines waiting deep in the Modbus client
	// for their gateway's connection, 8.7 MB of stacks (scripts/scale
	// 1000 50, runtime.MemStats.StackInuse 1 s after start); a poll's
	// goroutine that has not begun its poll keeps the starting stack.
	gate chan struct{}
	log  *slog.Logger

	info     *sunspec.Device
	chans    *channels.Device // info in the domain's words; nil when info is
	plan     *devices.ReadPlan
	tpl      *deviceTemplate // a template device's map and buffers; nil for SunSpec
	lastOK   time.Time
	failures int
	state    plant.CommState

	// cancel and done are set when polling starts (under the poller's
	// mu): cancel stops it, done is closed once its last poll ended.
	cancel context.CancelFunc
	done   chan struct{}
	// timer starts each poll; stopped is set once the device's context
	// ended (both under timerMu). next is when the next poll is due (only
	// the running poll touches it).
	timerMu sync.Mutex
	timer   *time.Timer
	stopped bool
	next    time.Time

	mu        sync.Mutex
	stats     DeviceStats
	busySince time.Time // start of the poll running now (wall clock); zero between polls
	polled    bool      // the first poll finished (only the device's polls)
	// phase shifts the device's polls after the first (set before its
	// polling starts; see setPhases).
	phase time.Duration
}

// slotsPerSecond bounds how often per second of a device's interval the
// poller wakes for a new slot, and slotDevices is how many devices at
// addresses of their own share a slot before another is used (setPhases).
const (
	slotsPerSecond = 20
	slotDevices    = 50
)

// setPhases spreads the polls of devs over their intervals: the units
// behind one address take turns on its connection, so polling them all at
// the same instant makes the last wait for all the others (1,000 devices
// behind 50 addresses at 1 s: 54 ms per poll on average, and as the
// devices saw it a jitter p99 of 35 ms). The k-th of n units of an address
// is shifted by k/n of its interval, and the e-th of E addresses by a
// further e/E of one unit's share, so that devices with addresses of
// their own are spread too. Phases are rounded down to slots of the
// interval, so that the poller wakes a few times per interval and not
// once per device (1,000 phases of their own cost 18 % of a core in
// wake-ups): as many slots as an address has units, or one per
// slotDevices devices, at most slotsPerSecond per second of the interval
// (20 at 1 s, 100 at 5 s); the devices sharing a slot are
// polled together, on connections of their own or not at the same
// address. A small plant of devices at addresses of their own keeps one
// slot: all polled at once, as before. Only the
// devices in set get a phase (the others already run with theirs); the
// first poll of every device is immediate, the phase applies from the
// second on.
func setPhases(devs []*device, set map[*device]bool) {
	var addrs []string
	units := map[string][]*device{}
	for _, d := range devs {
		a := d.cfg.Address
		if units[a] == nil {
			addrs = append(addrs, a)
		}
		units[a] = append(units[a], d)
	}
	slots := (len(devs) + slotDevices - 1) / slotDevices
	for _, us := range units {
		slots = max(slots, len(us))
	}
	for e, a := range addrs {
		us := units[a]
		for k, d := range us {
			if set[d] {
				// (k + e/E) / n of the interval, in integers: no float
				// rounding below a slot's edge.
				E, n := int64(len(addrs)), int64(len(us))
				most := max(1, int(d.cfg.Interval*slotsPerSecond/time.Second))
				slot := d.cfg.Interval / time.Duration(min(max(slots, 1), most))
				d.phase = time.Duration(int64(d.cfg.Interval)*(int64(k)*E+int64(e))/(n*E)) / slot * slot
			}
		}
	}
}

func (d *device) stallAfter() time.Duration {
	return max(MinStallAfter, 50*(d.cfg.Timeout+d.cfg.ConnectDelay))
}

// step polls d once and returns the wait until its next poll; ok is false
// when ctx ended (a poll cut short by shutdown is not a device failure).
// Steps of one device never overlap: the next is scheduled when one ends.
func (d *device) step(ctx context.Context, p *Poller) (wait time.Duration, ok bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	gated := d.info == nil && d.cfg.Template == ""
	if gated {
		select {
		case d.gate <- struct{}{}:
		case <-ctx.Done():
			return 0, false
		}
	}
	start := p.now()
	began := time.Now()
	d.mu.Lock()
	d.busySince = began
	d.mu.Unlock()
	s := d.poll(ctx, p)
	if gated {
		<-d.gate
	}
	if ctx.Err() != nil {
		return 0, false
	}
	s.Duration = time.Since(began)
	d.record(s, p.now().Sub(start))
	p.sink(s)
	d.mu.Lock()
	d.busySince = time.Time{} // a sink that hangs is a hang of the poller too
	d.mu.Unlock()
	first := !d.polled
	if first {
		d.polled = true
		p.mu.Lock()
		if p.pending != nil {
			delete(p.pending, d)
			p.firstRoundDone()
		}
		p.mu.Unlock()
	}

	wait = d.cfg.Interval
	if s.Err != nil {
		wait = d.retryWait()
	}
	if first {
		wait += d.phase // from now on at the device's place in the interval
	}
	// Keep a fixed rate: the next poll is due one interval after the
	// previous one was due, not after this one ended; polls that could
	// not keep up are skipped, not bunched.
	d.next = d.next.Add(wait)
	now := p.now()
	if d.next.Before(now) {
		d.next = now
	}
	return d.next.Sub(now), true
}

// retryWait is the wait after a failed poll: the interval for the first
// failures (a single lost answer is common), then doubling up to
// MaxRetryWait, never below the interval. It has no jitter: the wait keeps
// the device at its phase in the interval (setPhases).
func (d *device) retryWait() time.Duration {
	b := backoff.Exp{First: d.cfg.Interval, Max: max(d.cfg.Interval, MaxRetryWait)}
	return max(d.cfg.Interval, b.Wait(d.failures-1, 0))
}

// poll discovers the device when needed and reads its poll models.
func (d *device) poll(ctx context.Context, p *Poller) plant.Sample {
	s := plant.Sample{Device: d.cfg.ID}
	err := d.read(ctx, &s)
	if err != nil && d.state == plant.StateOnline && connectionLost(err) && ctx.Err() == nil {
		// The device, or another client of a device that keeps only one,
		// closed a connection that was fine a poll ago. The next request
		// reconnects: try once more at once instead of losing the poll.
		err = d.read(ctx, &s)
	}
	s.Time = p.now().UTC()
	if d.chans != nil {
		d.chans.Identify(&s)
	}
	if err == nil {
		d.failures = 0
		d.lastOK = s.Time
		d.state = plant.StateOnline
		s.State = d.state
		return s
	}
	s.Err = err
	s.Readings, s.Registers, s.Status = nil, nil, plant.DeviceStatus{}
	d.failures++
	if d.state == plant.StateOnline && s.Time.Sub(d.lastOK) < staleAfter*d.cfg.Interval {
		d.state = plant.StateStale
	} else {
		d.state = plant.StateOffline
		// A device that comes back may have been replaced or reconfigured:
		// discover it again.
		d.info, d.chans, d.plan = nil, nil, nil
	}
	s.State = d.state
	return s
}

func (d *device) read(ctx context.Context, s *plant.Sample) error {
	if d.cfg.Template != "" {
		return d.readTemplate(ctx, s)
	}
	if d.info == nil {
		bases := d.cfg.Bases
		if bases == nil {
			bases = devices.Bases
		}
		info, err := devices.DiscoverAt(ctx, d.client, bases)
		if err != nil {
			return fmt.Errorf("discover: %w", err)
		}
		if d.cfg.Kind != "" {
			info.Kind = d.cfg.Kind
		}
		plan, err := devices.NewReadPlan(info, info.PollModels())
		if err != nil {
			return err
		}
		for _, m := range plan.Capped() {
			d.log.Warn("model longer than its definition: reading the defined length",
				"model", m.ID, "addr", m.Addr, "claims", m.Len, "reading", sunspec.ModelByID(m.ID).MaxLen())
		}
		if n := plan.Requests(); n > d.cfg.MaxRequests {
			return fmt.Errorf("%w: models %s need %d requests, budget %d", ErrRequestBudget, modelList(info), n, d.cfg.MaxRequests)
		}
		d.info, d.chans, d.plan = info, channels.NewDevice(info), plan
	}
	insts, err := d.plan.Read(ctx, d.client)
	if err != nil {
		return err
	}
	// The plan's instances and their registers, and the readings made of
	// them, are the device's sample buffers, refilled by the next poll:
	// the sink reads them during its call and copies what it keeps.
	d.chans.Fill(s, insts)
	return nil
}

// connectionLost reports whether err says the peer closed or reset an
// established connection (not a timeout or a bad answer).
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (d *device) record(s plant.Sample, took time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Polls++
	d.stats.State = s.State
	d.stats.LastPoll = s.Time
	d.stats.LastDuration = took
	if s.Err == nil {
		d.stats.Successes++
		d.stats.LastError = ""
	} else {
		d.stats.LastError = s.Err.Error()
	}
}

func modelList(info *sunspec.Device) string {
	ids := make([]string, len(info.Models))
	for i, m := range info.Models {
		ids[i] = strconv.Itoa(int(m.ID))
	}
	return strings.Join(ids, ",")
}
