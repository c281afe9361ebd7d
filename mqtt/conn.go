package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/backoff"
)

// errPublishTimeout: a PUBACK did not arrive within PublishTimeout.
var errPublishTimeout = errors.New("mqtt: publish not acknowledged in time")

// brokerForLog is a broker URL without user information.
func brokerForLog(broker string) string {
	p, err := url.Parse(broker)
	if err != nil {
		return "(invalid broker URL)"
	}
	p.User = nil
	return p.String()
}

// backoff is the delay before reconnect attempt n (n ≥ 1): exponential
// from BackoffMin, capped at BackoffMax, with jitter in [d/2, d).
func (u *Uplink) backoff(n int) time.Duration {
	return backoff.Exp{First: u.cfg.BackoffMin, Max: u.cfg.BackoffMax, Jitter: 0.5}.Wait(max(n, 1), rand.Float64())
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
// ctx ends. It logs once per change of state, not per attempt. With
// several brokers it starts at a random one and takes the next after
// every failed attempt and every lost connection (a cluster's node that
// died, or a load balancer's), with the same backoff between attempts.
func (u *Uplink) connectLoop(ctx context.Context) {
	brokers := u.cfg.Brokers
	next := rand.IntN(len(brokers))
	failures := 0
	// The kinds of error logged since the last connection, per broker:
	// each is logged once, however often it recurs (its text may hold a
	// new local port each time, and some brokers answer one failure in
	// two ways).
	logged := map[string]bool{}
	for ctx.Err() == nil {
		broker := brokers[next]
		next = (next + 1) % len(brokers)
		shown := brokerForLog(broker)
		u.stMu.Lock()
		u.broker = shown
		u.stMu.Unlock()
		u.attempts.Add(1)
		c, lost, err := u.dial(ctx, broker)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := u.backoff(failures)
			if k := shown + " " + errKind(err); !logged[k] {
				u.log.Warn("mqtt broker unreachable; retrying with backoff", "broker", shown, "err", err)
				logged[k] = true
				u.setState(false, err.Error())
			}
			u.log.Debug("mqtt reconnect", "attempt", failures, "in", wait, "next", brokerForLog(brokers[next]))
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		u.connects.Add(1)
		// The session starts before the producer sees the connection: the
		// live values of its ticks are all after the start.
		start := time.Now()
		u.setState(true, "")
		u.log.Info("mqtt connected", "broker", shown, "clientId", u.cfg.GatewayID)
		clear(logged)
		err = u.session(ctx, c, lost, start)
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
		u.log.Warn("mqtt connection lost; reconnecting with backoff", "broker", shown, "err", err,
			"up", up.Round(time.Millisecond), "next", brokerForLog(brokers[next]))
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

// dial makes a new client and connects it to broker. lost receives the
// reason the connection ends.
func (u *Uplink) dial(ctx context.Context, broker string) (paho.Client, <-chan error, error) {
	lost := make(chan error, 1)
	will, _ := json.Marshal(u.state("offline", time.Time{}))
	o := paho.NewClientOptions().
		AddBroker(broker).
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
