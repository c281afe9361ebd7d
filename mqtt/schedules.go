package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
)

// The rules of schedule versions (docs/mqtt.md).
const (
	// maxVersion is the highest version: 2^53−1, the largest integer a
	// JSON number holds exactly everywhere.
	maxVersion = 1<<53 - 1
	// maxVersionAhead bounds how far a version may be ahead of the
	// gateway's clock read as epoch milliseconds: a day, so that counters
	// and epoch milliseconds (from a cloud whose clock is off by less
	// than a day) pass, and a stray huge version cannot lock a plant's
	// schedules (a cloud counting in epoch milliseconds would be answered
	// stale-version until its clock caught up). A last answered version
	// beyond it (written by a plantd before this bound, or while the
	// gateway's clock was ahead) is void: the plant is not stuck.
	maxVersionAhead = 24 * time.Hour
	// maxScheduleSlots bounds the plants whose schedule messages wait for
	// the worker; a message for one more goes through the queue.
	maxScheduleSlots = 1024
	// maxNotes bounds the versions per plant made obsolete between two
	// takes of the worker that are answered; more are dropped and counted
	// (CommandsDropped).
	maxNotes = 4096
	// firstRoundWait bounds how long after the start a schedule waits for
	// the first poll round of its plant's devices.
	firstRoundWait = 2 * time.Minute
	// maxRetryAfter bounds the wait after a rate-limited evaluation.
	maxRetryAfter = time.Minute
)

// schedNote is a schedule version made obsolete before the worker took
// it: by a newer one that came after it (superseded), or because a newer
// one came before it (stale).
type schedNote struct {
	requestID string
	version   int64
	newer     int64
	stale     bool
	retained  bool
}

// schedSlot is a plant's newest schedule message not yet taken by the
// worker, and the versions it made obsolete.
type schedSlot struct {
	in        *inbound
	requestID string
	version   int64
	notes     []schedNote
}

// newerThan is the note that this slot's message is made obsolete by
// version newer.
func (s *schedSlot) newerThan(newer int64) schedNote {
	return schedNote{requestID: s.requestID, version: s.version, newer: newer, retained: s.in.retained}
}

// waitKind is what a kept schedule waits for.
type waitKind int

const (
	waitFirstRound waitKind = iota + 1 // the plant's first poll round
	waitRate                           // the API's rate limit (notBefore)
	waitDevices                        // a device of the plant that answers
)

// pendingSchedule is a schedule version kept to be evaluated again; it
// is not answered for good (no outbox mark), so a restart evaluates the
// retained message again.
type pendingSchedule struct {
	plantID string // of the topic
	rel     string // the topic, relative
	req     scheduleRequest
	wait    waitKind
	// notBefore: waitRate's time.
	notBefore time.Time
	// devicesOf is the plant whose devices decide (the new id of a
	// migrated one); reachable are those that answered at the last
	// evaluation.
	devicesOf string
	reachable map[string]bool
	// acked: the 422 with retrying was sent.
	acked bool
}

// offer puts a schedule message into its plant's slot: the newest
// version stays, an older one is noted to be answered as obsolete, the
// same version again is dropped (a retained message delivered twice). It
// reports false when no slot can be had.
func (u *Uplink) offer(plantID string, in inbound, requestID string, version int64) bool {
	u.schedMu.Lock()
	s := u.schedIn[plantID]
	if s == nil {
		if len(u.schedIn) >= maxScheduleSlots {
			u.schedMu.Unlock()
			return false
		}
		s = &schedSlot{}
		u.schedIn[plantID] = s
	}
	note := func(n schedNote) {
		if len(s.notes) < maxNotes {
			s.notes = append(s.notes, n)
		} else {
			u.dropCommand()
		}
	}
	switch {
	case s.in == nil:
		s.in, s.requestID, s.version = &in, requestID, version
	case version == s.version:
	case version < s.version:
		note(schedNote{requestID: requestID, version: version, newer: s.version, stale: true, retained: in.retained})
	default:
		note(s.newerThan(version))
		s.in, s.requestID, s.version = &in, requestID, version
	}
	u.schedMu.Unlock()
	select {
	case u.schedWake <- struct{}{}:
	default:
	}
	return true
}

// takeSchedules answers the obsolete versions of every slot and
// evaluates the newest.
func (u *Uplink) takeSchedules(ctx context.Context) {
	u.schedMu.Lock()
	taken := u.schedIn
	u.schedIn = make(map[string]*schedSlot, len(taken))
	u.schedMu.Unlock()
	for _, plantID := range slices.Sorted(maps.Keys(taken)) {
		s := taken[plantID]
		u.answerNotes(ctx, plantID, s.notes)
		if s.in != nil {
			u.answerSchedule(ctx, plantID, *s.in)
		}
	}
}

// answerNotes answers 409 the versions made obsolete in a slot, but
// those that answerSchedule leaves unanswered: answered before or kept
// (a retained message delivered again), a retained message older than
// the newest answered or kept.
func (u *Uplink) answerNotes(ctx context.Context, plantID string, notes []schedNote) {
	if len(notes) == 0 {
		return
	}
	last := u.lastAnswered(ctx, plantID)
	newest := last
	p := u.pending[plantID]
	if p != nil {
		newest = max(newest, p.req.Version)
	}
	rel := u.topics.relative(u.topics.schedulePrefix() + plantID)
	var acks []ackItem
	for _, n := range notes {
		if n.version == last || (p != nil && n.version == p.req.Version) || (n.retained && n.version < newest) {
			continue
		}
		a := ackItem{RequestID: n.requestID, Topic: rel, Version: n.version, Status: http.StatusConflict}
		if n.stale || n.version < newest {
			n.newer = max(n.newer, newest)
			a.Body = problem(http.StatusConflict, plant.CodeStaleVersion, fmt.Sprintf("version %d is lower than version %d, which came before it", n.version, n.newer), rel)
		} else {
			a.Body = problem(http.StatusConflict, plant.CodeSuperseded, fmt.Sprintf("version %d was superseded by version %d before it was evaluated", n.version, n.newer), rel)
		}
		acks = append(acks, a)
	}
	if len(acks) > 0 {
		u.sendAcks(ctx, nil, acks...)
	}
}

// lastAnswered is the highest version of the plant's topic answered for
// good (0: none). One beyond versionBound is void (0): no version the
// cloud may send now could follow it, so the plant's schedules would be
// stuck; the next version answered for good replaces it.
func (u *Uplink) lastAnswered(ctx context.Context, plantID string) int64 {
	last, ok, err := u.deps.Outbox.Mark(ctx, "schedule/"+plantID)
	if err != nil {
		u.log.Warn("read the last answered schedule version", "plant", plantID, "err", err)
		return 0
	}
	if !ok {
		return 0
	}
	if bound := versionBound(time.Now()); last > bound {
		u.log.Warn("the last answered schedule version is more than a day of epoch milliseconds ahead of the clock: ignored, the next version answered replaces it",
			"plant", plantID, "version", last, "bound", bound)
		return 0
	}
	return last
}

// versionBound is the highest schedule version taken at now: now in
// epoch milliseconds plus maxVersionAhead.
func versionBound(now time.Time) int64 {
	return now.UnixMilli() + maxVersionAhead.Milliseconds()
}

// answerSchedule checks a schedule message against the version rules
// and evaluates it, or answers why not.
func (u *Uplink) answerSchedule(ctx context.Context, plantID string, in inbound) {
	rel := u.topics.relative(in.topic)
	ack := ackItem{Topic: rel}
	fail := func(status int, code, detail string) {
		ack.Status, ack.Body = status, problem(status, code, detail, rel)
		u.sendAcks(ctx, nil, ack)
	}
	var req scheduleRequest
	if err := decodeStrict(in.payload, &req); err != nil {
		ack.RequestID, ack.Version, _ = readableHead(in.payload)
		fail(http.StatusBadRequest, plant.CodeBadBody, "malformed schedule message: "+err.Error())
		return
	}
	ack.RequestID, ack.Version = req.RequestID, req.Version
	if req.Version < 1 || len(req.Schedule) == 0 || req.RequestID == "" {
		fail(http.StatusBadRequest, plant.CodeBadBody, "a schedule message needs requestId, version (≥ 1) and schedule")
		return
	}
	if req.Version > maxVersion {
		fail(http.StatusBadRequest, plant.CodeBadVersion, fmt.Sprintf("version %d is above 2^53−1", req.Version))
		return
	}
	last := u.lastAnswered(ctx, plantID)
	p := u.pending[plantID]
	newest := last
	if p != nil {
		newest = max(newest, p.req.Version)
	}
	switch {
	case req.Version == last || (p != nil && req.Version == p.req.Version):
		// Answered, or kept to be evaluated again: the retained message
		// delivered again.
		u.log.Debug("schedule version already answered or kept", "plant", plantID, "version", req.Version)
		return
	case req.Version < newest && in.retained:
		// The topic's retained message, older than a version answered
		// since (sent without retain): it was answered when it came.
		u.log.Debug("retained schedule older than the last answered", "plant", plantID, "version", req.Version, "last", newest)
		return
	case req.Version < newest:
		fail(http.StatusConflict, plant.CodeStaleVersion, fmt.Sprintf("version %d is lower than version %d, answered or kept", req.Version, newest))
		return
	case req.Version > versionBound(time.Now()):
		fail(http.StatusConflict, plant.CodeVersionTooFarAhead,
			fmt.Sprintf("version %d is more than a day ahead of the gateway's clock in epoch milliseconds (%d); versions are counters or epoch milliseconds",
				req.Version, time.Now().UnixMilli()))
		return
	}
	np := &pendingSchedule{plantID: plantID, rel: rel, req: req}
	if p != nil {
		delete(u.pending, plantID)
		u.sendAcks(ctx, nil, ackItem{RequestID: p.req.RequestID, Topic: p.rel, Version: p.req.Version, Status: http.StatusConflict,
			Body: problem(http.StatusConflict, plant.CodeSuperseded, fmt.Sprintf("version %d was superseded by version %d before it could be applied", p.req.Version, req.Version), p.rel)})
		if p.wait == waitRate && time.Now().Before(p.notBefore) {
			// The rate limit's wait holds for the newer version too.
			np.wait, np.notBefore = waitRate, p.notBefore
			u.pending[plantID] = np
			return
		}
	}
	u.evaluate(ctx, np, true)
}

// evaluate runs a schedule through the HTTP API and answers it, or keeps
// it: until the plant's first poll round has ended (when firstRound),
// while the API rate-limits, or while its refusal is only of devices not
// answering or not discovered yet (answered 422 with retrying once).
func (u *Uplink) evaluate(ctx context.Context, p *pendingSchedule, firstRound bool) {
	if firstRound && u.firstRoundPending(p.plantID) {
		p.wait = waitFirstRound
		u.pending[p.plantID] = p
		u.log.Debug("schedule waits for the first poll round", "plant", p.plantID, "version", p.req.Version)
		return
	}
	path := "/gridcontrol/v1/plants/" + url.PathEscape(p.plantID) + "/schedules"
	if p.req.SkipEligibilityCheck {
		path += "?skipEligibilityCheck=true"
	}
	status, body, hdr := u.do(ctx, http.MethodPost, path, p.req.RequestID, p.req.Schedule)
	ack := ackItem{RequestID: p.req.RequestID, Topic: p.rel, Version: p.req.Version}
	p.devicesOf = p.plantID
	if status == http.StatusPermanentRedirect {
		// A migrated plant id: the schedule goes to the new one, as the
		// HTTP API corrects a migrated id in a body.
		if target, newID, ok := migratedTarget(hdr.Get("Location")); ok {
			status, body, hdr = u.do(ctx, http.MethodPost, target, p.req.RequestID, p.req.Schedule)
			ack.MigratedTo, p.devicesOf = newID, newID
		}
	}
	ack.Status, ack.Body = status, body
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		p.wait, p.notBefore = waitRate, time.Now().Add(retryAfter(hdr))
		u.pending[p.plantID] = p
		u.log.Debug("schedule rate-limited; evaluated again", "plant", p.plantID, "version", p.req.Version, "at", p.notBefore)
		return
	case status == http.StatusUnprocessableEntity && retryable(body):
		p.wait, p.reachable = waitDevices, u.reachable(p.devicesOf)
		u.pending[p.plantID] = p
		if p.acked {
			return
		}
		p.acked, ack.Retrying = true, true
		u.log.Info("schedule refused while the plant's devices do not answer; evaluated again when they do",
			"plant", p.plantID, "version", p.req.Version)
		u.sendAcks(ctx, nil, ack)
		return
	}
	delete(u.pending, p.plantID)
	if p.acked {
		u.log.Info("kept schedule evaluated", "plant", p.plantID, "version", p.req.Version, "status", status)
	}
	if status == http.StatusNotFound {
		// A plant id plantd does not know (nor as a migrated one): the
		// API's 404, and nothing stored for it (no version mark), so
		// that messages on made-up plant ids cannot grow the database.
		u.sendAcks(ctx, nil, ack)
		return
	}
	u.sendAcks(ctx, &store.OutboxMark{Key: "schedule/" + p.plantID, Value: p.req.Version}, ack)
}

// retryPending evaluates the kept schedules whose wait is over: the
// first poll round ended, the rate limit's time passed, or a device of
// the plant answers that did not at the last evaluation.
func (u *Uplink) retryPending(ctx context.Context) {
	now := time.Now()
	for _, plantID := range slices.Sorted(maps.Keys(u.pending)) {
		p := u.pending[plantID]
		switch p.wait {
		case waitFirstRound:
			if u.firstRoundPending(p.plantID) {
				continue
			}
		case waitRate:
			if now.Before(p.notBefore) {
				continue
			}
		case waitDevices:
			r := u.reachable(p.devicesOf)
			if !slices.ContainsFunc(slices.Collect(maps.Keys(r)), func(id string) bool { return !p.reachable[id] }) {
				// Forget those that went away: their return counts.
				p.reachable = r
				continue
			}
		}
		u.evaluate(ctx, p, false)
	}
}

// polled reports whether a device takes part in the plant's poll rounds
// (active, not plantd itself).
func polled(d plant.DeviceLive) bool {
	return d.Info.Active() && d.Info.Kind != kind.Gateway
}

// firstRoundPending reports whether a device of the plant has not been
// polled yet since the start (for at most firstRoundWait).
func (u *Uplink) firstRoundPending(plantID string) bool {
	if u.deps.Live == nil || time.Since(u.started) > firstRoundWait {
		return false
	}
	devs, err := u.deps.Live.Devices(plantID)
	if err != nil {
		return false // an unknown plant: the API answers
	}
	return slices.ContainsFunc(devs, func(d plant.DeviceLive) bool {
		return polled(d) && d.Comm.LastPoll.IsZero() && d.LastUpdate.IsZero()
	})
}

// reachable returns the devices of the plant that answer now.
func (u *Uplink) reachable(plantID string) map[string]bool {
	out := map[string]bool{}
	if u.deps.Live == nil {
		return out
	}
	devs, _ := u.deps.Live.Devices(plantID)
	for _, d := range devs {
		if polled(d) && (d.Comm.Status == plant.CommOk || d.Comm.Status == plant.CommPartial) {
			out[d.Info.ID] = true
		}
	}
	return out
}

// retryable reports whether a 422 body is the HTTP API's refusal of a
// schedule only because devices do not answer or are not discovered yet.
func retryable(body json.RawMessage) bool {
	var p plant.Problem
	return json.Unmarshal(body, &p) == nil && p.Code == "not-eligible" && p.Retryable
}

// retryAfter is the wait a rate-limited answer asks for (1 s when it
// does not say; at most maxRetryAfter).
func retryAfter(h http.Header) time.Duration {
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || secs < 1 {
		return time.Second
	}
	return min(time.Duration(secs)*time.Second, maxRetryAfter)
}

// migratedTarget reads the Location of a 308 for a migrated plant's
// schedules: the new target (query kept) and the new plant id.
func migratedTarget(loc string) (target, plantID string, ok bool) {
	l, err := url.Parse(loc)
	if err != nil || l.IsAbs() || l.Host != "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(l.EscapedPath(), "/gridcontrol/v1/plants/")
	if !ok {
		return "", "", false
	}
	esc, ok := strings.CutSuffix(rest, "/schedules")
	if !ok || esc == "" || strings.Contains(esc, "/") {
		return "", "", false
	}
	id, err := url.PathUnescape(esc)
	if err != nil {
		return "", "", false
	}
	return loc, id, true
}
