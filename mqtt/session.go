package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/store"
)

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
	// ahead are a backlog stream's rows read and not yet published (seqs
	// above sent, in order); more: the read that gave them was full, so
	// the outbox may hold more.
	ahead []store.OutboxMessage
	more  bool
}

// pubResult is the outcome of one publish.
type pubResult struct {
	stream string
	msg    *inflight
	err    error
}

// pubRequest is a message the session's publisher hands to paho.
type pubRequest struct {
	stream, topic string
	payload       []byte
	msg           *inflight
}

// session is the publishing on one connection, from the online state to
// the disconnect. Everything in it belongs to that connection: a PUBACK
// is counted only by the session whose client carried the message, and
// what is unacknowledged when it ends is sent again by the next one.
// Only the goroutine of Uplink.session changes its fields (the publisher
// and the publish waiters only read done, pubs and send on results).
type session struct {
	u    *Uplink
	c    paho.Client
	lost <-chan error
	// done is closed at teardown: the publish waiters give up.
	done chan struct{}
	// start is when the connection was made (before the producer saw
	// it); rows created before cutoff (start to the store's millisecond)
	// are historical, and live messages made before start are never
	// sent.
	start, cutoff time.Time
	subscribed    bool

	// states are the streams' progress on this connection; active the
	// streams that may have rows to send (notified, or not drained yet).
	states map[string]*sendState
	active map[string]bool
	// pubs carries the messages to the publisher, in order; results
	// receives the publish outcomes; nIn counts the messages in flight
	// (at most Window, so pubs, of that capacity, never blocks).
	pubs    chan pubRequest
	results chan pubResult
	nIn     int
	// bucket caps the backlog streams; rateTimer, when set, ends a wait
	// for it. refill: the next turn of the loop fills the window.
	bucket    *bucket
	rateTimer *time.Timer
	ackTick   *time.Ticker
	refill    bool

	// upTo is flushAcks' map, liveNames fill's list, reused.
	upTo      map[string]uint64
	liveNames []string
}

// session publishes on one connection, made at start, until it is lost
// (its error) or ctx ends (nil, after publishing the offline state).
func (u *Uplink) session(ctx context.Context, c paho.Client, lost <-chan error, start time.Time) error {
	s := newSession(u, c, lost, start)
	go s.publisher()
	defer s.teardown(ctx)
	if err := s.announce(ctx); err != nil {
		return err
	}
	if err := s.subscribe(ctx); err != nil {
		return err
	}
	s.activate(ctx)
	return s.loop(ctx)
}

func newSession(u *Uplink, c paho.Client, lost <-chan error, start time.Time) *session {
	return &session{
		u: u, c: c, lost: lost,
		done:    make(chan struct{}),
		start:   start,
		cutoff:  start.Truncate(time.Millisecond),
		states:  map[string]*sendState{},
		active:  map[string]bool{},
		pubs:    make(chan pubRequest, u.cfg.Window),
		results: make(chan pubResult, u.cfg.Window),
		bucket:  newBucket(u.cfg.BacklogMessagesPerSecond, u.cfg.BacklogBytesPerSecond),
		refill:  true,
		upTo:    map[string]uint64{},
	}
}

// announce publishes the retained online state and waits for its PUBACK.
func (s *session) announce(ctx context.Context) error {
	online, _ := json.Marshal(s.u.state("online", s.start))
	if err := s.u.waitToken(ctx, s.c.Publish(s.u.topics.state(), 1, true, online)); err != nil {
		return fmt.Errorf("publish state: %w", err)
	}
	return nil
}

// subscribe subscribes to down/schedule/+ and down/cmd when remote
// control is on.
func (s *session) subscribe(ctx context.Context) error {
	u := s.u
	if !u.cfg.RemoteControl {
		return nil
	}
	handler := func(_ paho.Client, m paho.Message) {
		// Never block the client: hand over (a schedule coalesced with
		// the newest of its plant) or drop (counted).
		u.receive(inbound{topic: m.Topic(), payload: slices.Clone(m.Payload()), retained: m.Retained()})
	}
	tok := s.c.SubscribeMultiple(map[string]byte{u.topics.scheduleFilter(): 1, u.topics.cmd(): 1}, handler)
	if err := u.waitToken(ctx, tok); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	u.subscribed.Store(true)
	s.subscribed = true
	return nil
}

// activate marks every stream with rows in the outbox, and those
// notified since, as active.
func (s *session) activate(ctx context.Context) {
	if list, err := s.u.deps.Outbox.OutboxStreams(ctx); err == nil {
		for _, st := range list {
			s.active[st.Stream] = true
		}
	}
	for _, name := range s.u.takeNotified() {
		s.active[name] = true
	}
}

// loop fills the window and handles PUBACKs, wake-ups and the rate cap
// until the connection is lost or ctx ends.
func (s *session) loop(ctx context.Context) error {
	s.ackTick = time.NewTicker(50 * time.Millisecond)
	for {
		if s.refill {
			wait, err := s.fill(ctx)
			if err != nil {
				return err
			}
			s.refill = false
			if wait > 0 && s.rateTimer == nil {
				s.rateTimer = time.NewTimer(wait)
			}
		}
		var rateC <-chan time.Time
		if s.rateTimer != nil {
			rateC = s.rateTimer.C
		}
		select {
		case <-ctx.Done():
			s.signOff(ctx)
			return nil
		case err := <-s.lost:
			if err == nil {
				err = errors.New("connection closed")
			}
			return err
		case r := <-s.results:
			if err := s.acked(r); err != nil {
				return err
			}
		case <-s.u.wake:
			for _, name := range s.u.takeNotified() {
				s.active[name] = true
			}
			s.refill = true
		case <-rateC:
			s.rateTimer = nil
			s.refill = true
		case <-s.ackTick.C:
			s.flushAcks(ctx)
		}
	}
}

// acked records the outcome of a publish: a PUBACK advances its stream's
// acknowledged prefix (deleted from the outbox at the next flush; of a
// live stream, only freed); an error or a timeout ends the connection.
func (s *session) acked(r pubResult) error {
	if r.err != nil {
		return fmt.Errorf("publish %s seq %d: %w", r.stream, r.msg.first, r.err)
	}
	s.nIn--
	r.msg.acked = true
	st := s.states[r.stream]
	n := 0
	for n < len(st.inflight) && st.inflight[n].acked {
		st.ackUpTo = st.inflight[n].last
		s.u.acked.Add(st.inflight[n].last - st.inflight[n].first + 1)
		n++
	}
	st.inflight = st.inflight[n:]
	if classOf(r.stream) == classLive {
		st.ackUpTo = 0
		s.u.live.release(r.stream, n)
	}
	if s.nIn <= s.u.cfg.Window/2 {
		s.refill = true
	}
	return nil
}

// flushAcks deletes what the broker acknowledged, every stream in one
// transaction.
func (s *session) flushAcks(ctx context.Context) {
	clear(s.upTo)
	for name, st := range s.states {
		if st.ackUpTo != 0 {
			s.upTo[name] = st.ackUpTo
		}
	}
	if len(s.upTo) == 0 {
		return
	}
	if err := s.u.deps.Outbox.AckBatch(ctx, s.upTo); err != nil {
		s.u.log.Warn("outbox ack failed (messages will be sent again)", "streams", len(s.upTo), "err", err)
		return
	}
	for name := range s.upTo {
		s.states[name].ackUpTo = 0
	}
}

// signOff ends the session as ctx ends: the retained state says
// offline, what was acknowledged until its PUBACK is deleted (or, of a
// live stream, freed), the client disconnects cleanly (no last will).
func (s *session) signOff(ctx context.Context) {
	off, _ := json.Marshal(s.u.state("offline", time.Now()))
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	_ = s.u.waitToken(tctx, s.c.Publish(s.u.topics.state(), 1, true, off))
	cancel()
	// The PUBACKs that came before the offline state's are counted (a
	// live message acknowledged is not given up, a backlog message not
	// sent again by the next start).
	for drained := false; !drained; {
		select {
		case r := <-s.results:
			if r.err == nil {
				_ = s.acked(r)
			}
		default:
			drained = true
		}
	}
	s.flushAcks(context.WithoutCancel(ctx))
	s.c.Disconnect(250)
}

// teardown runs whichever way the session ends: the acknowledged prefix
// is deleted, the live messages in flight are given up (dropLive), the
// subscriptions are gone, the client disconnected and the publish
// waiters released (tokens of this connection acknowledge nothing
// after).
func (s *session) teardown(ctx context.Context) {
	s.flushAcks(context.WithoutCancel(ctx))
	s.dropLive()
	if s.ackTick != nil {
		s.ackTick.Stop()
	}
	if s.subscribed {
		s.u.subscribed.Store(false)
	}
	s.c.Disconnect(0)
	close(s.done)
}

// fill publishes what the window and the rate cap allow; it returns how
// long to wait for the rate cap (0: not limited). Every fill looks at the
// live streams with a message waiting, not only at those notified: a
// backlog that keeps the loop busy (a fill at every PUBACK) would
// otherwise delay the wake-up, and the next tick would replace the
// waiting values unsent.
func (s *session) fill(ctx context.Context) (time.Duration, error) {
	s.liveNames = s.u.live.waiting(s.liveNames[:0])
	for _, name := range s.liveNames {
		s.active[name] = true
	}
	names := s.activeByClass()
	quick, err := s.peekQuick(ctx, names)
	if err != nil {
		return 0, err
	}
	var rateWait time.Duration
	for _, name := range names {
		if s.u.cfg.Window-s.nIn <= 0 {
			break
		}
		w, err := s.fillStream(ctx, name, quick[name])
		if err != nil {
			return 0, err
		}
		if w > 0 {
			rateWait = w
		}
	}
	return rateWait, nil
}

// activeByClass lists the active streams, ack and live first, and makes
// sure each has a sendState.
func (s *session) activeByClass() []string {
	names := make([]string, 0, len(s.active))
	for name := range s.active {
		names = append(names, name)
		if s.states[name] == nil {
			s.states[name] = &sendState{}
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if ca, cb := classOf(a), classOf(b); ca != cb {
			return int(ca) - int(cb)
		}
		return strings.Compare(a, b)
	})
	return names
}

// peekQuick reads the ack stream among names in one go, at most a
// window's worth (live streams are in memory).
func (s *session) peekQuick(ctx context.Context, names []string) (map[string][]store.OutboxMessage, error) {
	after := map[string]uint64{}
	for _, name := range names {
		if classOf(name) == classAck {
			after[name] = s.states[name].sent
		}
	}
	free := s.u.cfg.Window - s.nIn
	if len(after) == 0 || free <= 0 {
		return nil, nil
	}
	quick, err := s.u.deps.Outbox.PeekStreams(ctx, after, free)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return quick, nil
}

// fillStream publishes a stream's next rows (quick: those peekQuick read
// for the ack stream; a live stream's waiting message) as far as the
// window and the rate cap allow, and returns how long to wait for the
// cap (0: not limited). A stream drained is no longer active until
// notified again.
func (s *session) fillStream(ctx context.Context, name string, quick []store.OutboxMessage) (time.Duration, error) {
	free := s.u.cfg.Window - s.nIn
	st := s.states[name]
	class := classOf(name)
	if class == classLive {
		// One waiting message at most: a newer one replaced any other.
		delete(s.active, name)
		if m, ok := s.u.live.take(name, s.start); ok {
			s.publish(name, []store.OutboxMessage{m})
		}
		return 0, nil // live seqs are covered by the live mark (live.go)
	}
	if class.backlog() {
		return s.fillBacklog(ctx, name, st, free)
	}
	rows := quick
	if len(rows) > free {
		rows = rows[:free] // the rest when the window has room again
	}
	if len(rows) < free {
		delete(s.active, name) // drained until notified again
	}
	if len(rows) > 0 {
		if err := s.u.coverSeqs(ctx, name, rows[len(rows)-1].Seq); err != nil {
			return 0, err
		}
	}
	for i := range rows {
		s.publish(name, rows[i:i+1])
	}
	return 0, nil
}

// fillBacklog publishes a backlog stream's next rows as far as the window
// and the rate cap allow. The rows are read ahead (up to 512) and kept
// until published: under the rate cap a fill publishes a message or two,
// and reading the rows again at every fill (one per PUBACK) kept the loop
// busy enough to delay the live values. (A row the caps trim meanwhile
// may still go out once: delivery is at least once anyway.)
func (s *session) fillBacklog(ctx context.Context, name string, st *sendState, free int) (time.Duration, error) {
	if w := s.bucket.wait(1); w > 0 {
		return w, nil
	}
	read := len(st.ahead) == 0
	if read {
		limit := min(free*8, 512)
		rows, err := s.u.deps.Outbox.PeekAfter(ctx, name, st.sent, limit)
		if err != nil {
			return 0, fmt.Errorf("read outbox: %w", err)
		}
		st.ahead, st.more = rows, len(rows) == limit
	}
	if len(st.ahead) > 0 {
		// Every row read ahead, at once: one reservation covers a read.
		if err := s.u.coverSeqs(ctx, name, st.ahead[len(st.ahead)-1].Seq); err != nil {
			return 0, err
		}
	}
	wait := s.publishBatches(name, st.ahead)
	n := 0
	for n < len(st.ahead) && st.ahead[n].Seq <= st.sent {
		n++
	}
	st.ahead = st.ahead[n:]
	// Drained only by this fill's own read: rows read in an earlier fill
	// say nothing of those queued since, whose wake-up came while the
	// stream was still active (it stalled until the next message then);
	// the next fill reads again.
	if len(st.ahead) == 0 && !st.more && read {
		delete(s.active, name) // drained until notified again
	} else {
		s.active[name] = true
	}
	return wait, nil
}

// publishBatches publishes a backlog stream's rows, consecutive ones
// batched up to BatchBytes per message, while the window and the rate cap
// allow; it returns how long to wait for the cap (0: not limited).
func (s *session) publishBatches(name string, rows []store.OutboxMessage) time.Duration {
	var rateWait time.Duration
	i := 0
	for i < len(rows) && s.nIn < s.u.cfg.Window {
		j, size := i+1, len(rows[i].Payload)
		for j < len(rows) && rows[j].Seq == rows[j-1].Seq+1 && size+len(rows[j].Payload) <= s.u.cfg.BatchBytes {
			size += len(rows[j].Payload)
			j++
		}
		if w := s.bucket.wait(float64(size)); w > 0 {
			rateWait = w
			break // not drained: the rest waits for the cap
		}
		n := s.publish(name, rows[i:j])
		s.bucket.take(float64(n))
		i = j
	}
	return rateWait
}

// dropLive gives up the live messages in flight when the connection
// ends: live values are never sent again, so they are counted as dropped
// per stream (the broker may have had some of them: a gap in the
// stream's seqs is at most those) and logged in one line.
func (s *session) dropLive() {
	msgs, streams := 0, 0
	for name, st := range s.states {
		if classOf(name) != classLive || len(st.inflight) == 0 {
			continue
		}
		n := 0
		for _, m := range st.inflight {
			n += int(m.last - m.first + 1)
		}
		s.u.live.release(name, len(st.inflight))
		s.u.countDropped(name, uint64(n))
		st.inflight = nil
		msgs += n
		streams++
	}
	if msgs > 0 {
		s.u.log.Info("live messages unacknowledged when the connection ended dropped: live values are never replayed",
			"dropped", msgs, "streams", streams)
	}
}

// publish publishes rows (consecutive seqs of one stream) as one message
// and returns its payload size; its outcome arrives on results.
func (s *session) publish(stream string, rows []store.OutboxMessage) int {
	u := s.u
	items := make([][]byte, len(rows))
	for i, r := range rows {
		items[i] = r.Payload
	}
	env := envelope{GatewayID: u.cfg.GatewayID, BootID: u.bootID, Stream: stream, Seq: rows[0].Seq,
		Historical: rows[0].Created.Before(s.cutoff), Items: joinItems(items)}
	if len(rows) > 1 {
		env.LastSeq = rows[len(rows)-1].Seq
	}
	payload, _ := json.Marshal(env)
	msg := &inflight{first: rows[0].Seq, last: rows[len(rows)-1].Seq}
	st := s.states[stream]
	st.inflight = append(st.inflight, msg)
	st.sent = msg.last
	s.nIn++
	u.published.Add(1)
	u.publishedBytes.Add(uint64(len(payload)))
	s.pubs <- pubRequest{stream: stream, topic: u.topics.up(stream), payload: payload, msg: msg}
	return len(payload)
}

// publisher hands the session's messages to paho in their order, off the
// session's loop: paho's Publish waits up to its write timeout (the
// publish timeout, 30 s) for its writer when the connection died just
// before, and the loop must see the loss at once. In BenchmarkFleetCluster
// (docs/mqtt.md) a node's death was noticed 30 s late by the gateways
// whose loop was in Publish then. It ends at teardown, or after that
// wait when it was in one.
func (s *session) publisher() {
	for {
		select {
		case p := <-s.pubs:
			go s.await(p.stream, p.msg, s.c.Publish(p.topic, 1, false, p.payload))
		case <-s.done:
			return
		}
	}
}

// await hands a publish's outcome (its PUBACK, an error, or a timeout
// after PublishTimeout) to the session, unless the session ended first.
func (s *session) await(stream string, msg *inflight, tok paho.Token) {
	var err error
	select {
	case <-tok.Done():
		err = tok.Error()
	case <-time.After(s.u.cfg.PublishTimeout):
		err = errPublishTimeout
	case <-s.done:
		return
	}
	select {
	case s.results <- pubResult{stream: stream, msg: msg, err: err}:
	case <-s.done:
	}
}
