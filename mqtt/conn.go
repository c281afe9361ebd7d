package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/store"
)

// errPublishTimeout: a PUBACK did not arrive within PublishTimeout.
var errPublishTimeout = errors.New("mqtt: publish not acknowledged in time")

// brokerForLog is the broker URL without user information.
func (u *Uplink) brokerForLog() string {
	p, err := url.Parse(u.cfg.Broker)
	if err != nil {
		return "(invalid broker URL)"
	}
	p.User = nil
	return p.String()
}

// backoff is the delay before reconnect attempt n (n ≥ 1): exponential
// from BackoffMin, capped at BackoffMax, with jitter in [d/2, d).
func (u *Uplink) backoff(n int) time.Duration {
	d := u.cfg.BackoffMin
	for i := 1; i < n && d < u.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, u.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connectLoop connects, runs a session, and reconnects with backoff until
// ctx ends. It logs once per change of state, not per attempt.
func (u *Uplink) connectLoop(ctx context.Context) {
	failures := 0
	// The kinds of error logged since the last connection: each is logged
	// once, however often it recurs (its text may hold a new local port
	// each time, and some brokers answer one failure in two ways).
	logged := map[string]bool{}
	for ctx.Err() == nil {
		u.attempts.Add(1)
		c, lost, err := u.dial(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := u.backoff(failures)
			if k := errKind(err); !logged[k] {
				u.log.Warn("mqtt broker unreachable; retrying with backoff", "broker", u.brokerForLog(), "err", err)
				logged[k] = true
				u.setState(false, err.Error())
			}
			u.log.Debug("mqtt reconnect", "attempt", failures, "in", wait)
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		u.connects.Add(1)
		u.setState(true, "")
		u.log.Info("mqtt connected", "broker", u.brokerForLog(), "clientId", u.cfg.GatewayID)
		clear(logged)
		start := time.Now()
		err = u.session(ctx, c, lost)
		if ctx.Err() != nil {
			u.setState(false, "")
			u.log.Info("mqtt disconnected")
			return
		}
		msg := fmt.Sprint(err)
		u.setState(false, msg)
		up := time.Since(start)
		if up >= time.Minute {
			failures = 0
		}
		failures++
		u.log.Warn("mqtt connection lost; reconnecting with backoff", "err", err, "up", up.Round(time.Millisecond))
		if !sleep(ctx, u.backoff(failures)) {
			return
		}
	}
}

// errKind is an error without the addresses of a network error (a new
// local port at every attempt), for logging each kind of failure once.
func errKind(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + " " + op.Net + ": " + op.Err.Error()
	}
	return err.Error()
}

// dial makes a new client and connects it. lost receives the reason the
// connection ends.
func (u *Uplink) dial(ctx context.Context) (paho.Client, <-chan error, error) {
	lost := make(chan error, 1)
	will, _ := json.Marshal(u.state("offline", time.Time{}))
	o := paho.NewClientOptions().
		AddBroker(u.cfg.Broker).
		SetClientID(u.cfg.GatewayID).
		SetCleanSession(true).
		SetProtocolVersion(4). // MQTT 3.1.1 only: no second connection with 3.1 after a failed one
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetResumeSubs(false).
		SetOrderMatters(false).
		SetKeepAlive(u.cfg.KeepAlive).
		SetPingTimeout(10*time.Second).
		SetConnectTimeout(u.cfg.ConnectTimeout).
		SetWriteTimeout(u.cfg.PublishTimeout).
		SetBinaryWill(u.topics.state(), will, 1, true).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			select {
			case lost <- err:
			default:
			}
		})
	if u.cfg.Username != "" {
		o.SetUsername(u.cfg.Username).SetPassword(u.cfg.Password)
	}
	if u.tls != nil {
		o.SetTLSConfig(u.tls)
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		c.Disconnect(0)
		return nil, nil, ctx.Err()
	case <-time.After(u.cfg.ConnectTimeout + time.Second):
		c.Disconnect(0)
		return nil, nil, errors.New("mqtt: connect timed out")
	}
	if err := tok.Error(); err != nil {
		c.Disconnect(0)
		return nil, nil, err
	}
	return c, lost, nil
}

// state is a message of the state topic; a zero since leaves its time
// out.
func (u *Uplink) state(state string, since time.Time) stateMessage {
	m := stateMessage{GatewayID: u.cfg.GatewayID, BootID: u.bootID, State: state, Version: u.cfg.Version,
		StartedAt: u.started.UTC().Format(time.RFC3339)}
	if !since.IsZero() {
		m.Time = since.UTC().Format(time.RFC3339)
	}
	return m
}

// waitToken waits for a token with the publish timeout.
func (u *Uplink) waitToken(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(u.cfg.PublishTimeout):
		return errPublishTimeout
	}
}

// inflight is one published message awaiting its PUBACK.
type inflight struct {
	first, last uint64
	acked       bool
}

// sendState is a stream's progress on one connection.
type sendState struct {
	sent     uint64 // highest seq published on this connection
	inflight []*inflight
	ackUpTo  uint64 // acknowledged prefix not yet deleted from the outbox
}

// pubResult is the outcome of one publish.
type pubResult struct {
	stream string
	msg    *inflight
	err    error
}

// session publishes on one connection until it is lost (its error) or
// ctx ends (nil, after publishing the offline state).
func (u *Uplink) session(ctx context.Context, c paho.Client, lost <-chan error) error {
	done := make(chan struct{})
	defer close(done)
	defer c.Disconnect(0)
	start := time.Now()

	online, _ := json.Marshal(u.state("online", start))
	if err := u.waitToken(ctx, c.Publish(u.topics.state(), 1, true, online)); err != nil {
		return fmt.Errorf("publish state: %w", err)
	}
	if u.cfg.RemoteControl {
		handler := func(_ paho.Client, m paho.Message) {
			// Never block the client: hand over (a schedule coalesced
			// with the newest of its plant) or drop (counted).
			u.receive(inbound{topic: m.Topic(), payload: slices.Clone(m.Payload()), retained: m.Retained()})
		}
		tok := c.SubscribeMultiple(map[string]byte{u.topics.scheduleFilter(): 1, u.topics.cmd(): 1}, handler)
		if err := u.waitToken(ctx, tok); err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		u.subscribed.Store(true)
		defer u.subscribed.Store(false)
	}

	states := map[string]*sendState{}
	active := map[string]bool{}
	if list, err := u.deps.Outbox.OutboxStreams(ctx); err == nil {
		for _, s := range list {
			active[s.Stream] = true
		}
	}
	for _, s := range u.takeNotified() {
		active[s] = true
	}
	results := make(chan pubResult, u.cfg.Window)
	nIn := 0
	bucket := newBucket(u.cfg.BacklogMessagesPerSecond, u.cfg.BacklogBytesPerSecond)
	ackTick := time.NewTicker(50 * time.Millisecond)
	defer ackTick.Stop()
	var rateTimer *time.Timer
	refill := true

	// flushAcks deletes what the broker acknowledged, every stream in one
	// transaction.
	upTo := map[string]uint64{}
	flushAcks := func(ctx context.Context) {
		clear(upTo)
		for name, st := range states {
			if st.ackUpTo != 0 {
				upTo[name] = st.ackUpTo
			}
		}
		if len(upTo) == 0 {
			return
		}
		if err := u.deps.Outbox.AckBatch(ctx, upTo); err != nil {
			u.log.Warn("outbox ack failed (messages will be sent again)", "streams", len(upTo), "err", err)
			return
		}
		for name := range upTo {
			states[name].ackUpTo = 0
		}
	}
	defer flushAcks(context.WithoutCancel(ctx))

	// dropStaleLive drops the live messages queued before this
	// connection (left by a previous run, or unacknowledged on a
	// connection that died): live values are never replayed, the next
	// tick sends current ones. They are deleted with the next ack flush,
	// counted as dropped per stream and logged; the rest is returned.
	cutoff := start.Truncate(time.Millisecond)
	var staleMsgs, staleStreams int
	dropStaleLive := func(stream string, st *sendState, rows []store.OutboxMessage) []store.OutboxMessage {
		n := 0
		for n < len(rows) && rows[n].Created.Before(cutoff) && len(st.inflight) == 0 {
			n++
		}
		if n == 0 {
			return rows
		}
		st.sent, st.ackUpTo = rows[n-1].Seq, rows[n-1].Seq
		u.stMu.Lock()
		u.streamLocked(stream).dropped += uint64(n)
		u.stMu.Unlock()
		staleMsgs += n
		staleStreams++
		return rows[n:]
	}
	// The drops of one fill are logged in one line.
	logStale := func() {
		if staleMsgs > 0 {
			u.log.Info("live messages queued before this connection dropped: live values are never replayed",
				"dropped", staleMsgs, "streams", staleStreams)
		}
		staleMsgs, staleStreams = 0, 0
	}

	publish := func(stream string, rows []store.OutboxMessage) int {
		items := make([][]byte, len(rows))
		size := 0
		for i, r := range rows {
			items[i] = r.Payload
			size += len(r.Payload)
		}
		env := envelope{GatewayID: u.cfg.GatewayID, BootID: u.bootID, Stream: stream, Seq: rows[0].Seq,
			Historical: rows[0].Created.Before(start), Items: joinItems(items)}
		if len(rows) > 1 {
			env.LastSeq = rows[len(rows)-1].Seq
		}
		payload, _ := json.Marshal(env)
		msg := &inflight{first: rows[0].Seq, last: rows[len(rows)-1].Seq}
		st := states[stream]
		st.inflight = append(st.inflight, msg)
		st.sent = msg.last
		nIn++
		u.published.Add(1)
		u.publishedBytes.Add(uint64(len(payload)))
		tok := c.Publish(u.topics.up(stream), 1, false, payload)
		go func() {
			var err error
			select {
			case <-tok.Done():
				err = tok.Error()
			case <-time.After(u.cfg.PublishTimeout):
				err = errPublishTimeout
			case <-done:
				return
			}
			select {
			case results <- pubResult{stream: stream, msg: msg, err: err}:
			case <-done:
			}
		}()
		return len(payload)
	}

	// fill publishes what the window and the rate cap allow; it returns
	// how long to wait for the rate cap (0: not limited).
	fill := func() (time.Duration, error) {
		defer logStale()
		names := make([]string, 0, len(active))
		for s := range active {
			names = append(names, s)
		}
		slices.SortFunc(names, func(a, b string) int {
			if ca, cb := classOf(a), classOf(b); ca != cb {
				return int(ca) - int(cb)
			}
			return strings.Compare(a, b)
		})
		// The ack and live streams (many, a message or two each) are read
		// in one go, at most a window's worth each.
		after := map[string]uint64{}
		for _, name := range names {
			if states[name] == nil {
				states[name] = &sendState{}
			}
			if !classOf(name).backlog() {
				after[name] = states[name].sent
			}
		}
		var quick map[string][]store.OutboxMessage
		if free := u.cfg.Window - nIn; len(after) > 0 && free > 0 {
			var err error
			if quick, err = u.deps.Outbox.PeekStreams(ctx, after, free); err != nil {
				return 0, fmt.Errorf("read outbox: %w", err)
			}
		}
		var rateWait time.Duration
		for _, name := range names {
			free := u.cfg.Window - nIn
			if free <= 0 {
				break
			}
			st := states[name]
			class := classOf(name)
			limit := free
			var rows []store.OutboxMessage
			if class.backlog() {
				if w := bucket.wait(1); w > 0 {
					rateWait = w
					continue
				}
				limit = min(free*8, 512)
				var err error
				if rows, err = u.deps.Outbox.PeekAfter(ctx, name, st.sent, limit); err != nil {
					return 0, fmt.Errorf("read outbox: %w", err)
				}
			} else if rows = quick[name]; len(rows) > limit {
				rows = rows[:limit] // the rest when the window has room again
			}
			if len(rows) < limit {
				delete(active, name) // drained until notified again
			}
			if class == classLive {
				rows = dropStaleLive(name, st, rows)
			}
			if !class.backlog() {
				for i := range rows {
					publish(name, rows[i:i+1])
				}
				continue
			}
			i := 0
			for i < len(rows) && nIn < u.cfg.Window {
				j, size := i+1, len(rows[i].Payload)
				for j < len(rows) && rows[j].Seq == rows[j-1].Seq+1 && size+len(rows[j].Payload) <= u.cfg.BatchBytes {
					size += len(rows[j].Payload)
					j++
				}
				if w := bucket.wait(float64(size)); w > 0 {
					rateWait = w
					active[name] = true // not drained: the rest waits for the cap
					break
				}
				n := publish(name, rows[i:j])
				bucket.take(float64(n))
				i = j
			}
			if i < len(rows) {
				active[name] = true
			}
		}
		return rateWait, nil
	}

	for {
		if refill {
			wait, err := fill()
			if err != nil {
				return err
			}
			refill = false
			if wait > 0 && rateTimer == nil {
				rateTimer = time.NewTimer(wait)
			}
		}
		var rateC <-chan time.Time
		if rateTimer != nil {
			rateC = rateTimer.C
		}
		select {
		case <-ctx.Done():
			flushAcks(context.WithoutCancel(ctx))
			off, _ := json.Marshal(u.state("offline", time.Now()))
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = u.waitToken(tctx, c.Publish(u.topics.state(), 1, true, off))
			cancel()
			c.Disconnect(250)
			return nil
		case err := <-lost:
			if err == nil {
				err = errors.New("connection closed")
			}
			return err
		case r := <-results:
			if r.err != nil {
				return fmt.Errorf("publish %s seq %d: %w", r.stream, r.msg.first, r.err)
			}
			nIn--
			r.msg.acked = true
			st := states[r.stream]
			n := 0
			for n < len(st.inflight) && st.inflight[n].acked {
				st.ackUpTo = st.inflight[n].last
				u.acked.Add(st.inflight[n].last - st.inflight[n].first + 1)
				n++
			}
			st.inflight = st.inflight[n:]
			if nIn <= u.cfg.Window/2 {
				refill = true
			}
		case <-u.wake:
			for _, s := range u.takeNotified() {
				active[s] = true
			}
			refill = true
		case <-rateC:
			rateTimer = nil
			refill = true
		case <-ackTick.C:
			flushAcks(ctx)
		}
	}
}

// bucket is a token bucket of messages and bytes per second (a rate ≤ 0
// is no cap).
type bucket struct {
	msgRate, byteRate float64
	msgs, bytes       float64
	last              time.Time
}

func newBucket(msgRate, byteRate float64) *bucket {
	b := &bucket{msgRate: msgRate, byteRate: byteRate, last: time.Now()}
	// A second's worth to start with.
	b.msgs, b.bytes = max(msgRate, 1), max(byteRate, 1)
	return b
}

func (b *bucket) refill() {
	now := time.Now()
	el := now.Sub(b.last).Seconds()
	b.last = now
	if b.msgRate > 0 {
		b.msgs = min(b.msgs+el*b.msgRate, max(b.msgRate, 1))
	}
	if b.byteRate > 0 {
		b.bytes = min(b.bytes+el*b.byteRate, max(b.byteRate, 1))
	}
}

// wait returns 0 when one message of size bytes may go now, else how long
// until it may.
func (b *bucket) wait(size float64) time.Duration {
	b.refill()
	var w float64
	if b.msgRate > 0 && b.msgs < 1 {
		w = (1 - b.msgs) / b.msgRate
	}
	if b.byteRate > 0 {
		size = min(size, max(b.byteRate, 1)) // a message larger than a second's worth waits for a full bucket
		if b.bytes < size {
			w = max(w, (size-b.bytes)/b.byteRate)
		}
	}
	if w <= 0 {
		return 0
	}
	return max(time.Duration(w*float64(time.Second)), 5*time.Millisecond)
}

// take spends one message of size bytes.
func (b *bucket) take(size float64) {
	if b.msgRate > 0 {
		b.msgs--
	}
	if b.byteRate > 0 {
		b.bytes -= size
	}
}
