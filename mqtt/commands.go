package mqtt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"plantd/internal/jsondup"
	"plantd/plant"
	"plantd/store"
)

// commandTimeout bounds one request through the HTTP handler.
const commandTimeout = 30 * time.Second

// scheduleRequest is the payload of down/schedule/{plantId}: a version
// (the gateway answers each version once; a retained schedule delivered
// again on reconnect is not applied twice) and the body of the HTTP POST.
type scheduleRequest struct {
	RequestID            string          `json:"requestId"`
	Version              int64           `json:"version"`
	SkipEligibilityCheck bool            `json:"skipEligibilityCheck,omitempty"`
	Schedule             json.RawMessage `json:"schedule"`
}

// cmdRequest is the payload of down/cmd.
// cmdNames lists the commands of down/cmd, for the refusal of another.
const cmdNames = "eligibilityCheck, eligibleCommands, schedules, consumers, consumerMode"

type cmdRequest struct {
	RequestID string          `json:"requestId"`
	Command   string          `json:"command"`
	PlantID   string          `json:"plantId,omitempty"`
	DeviceID  string          `json:"deviceId,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
}

// ackItem is the answer on up/ack: the request id, the topic it came on
// (relative to the gateway), the HTTP status and the HTTP body.
type ackItem struct {
	RequestID string          `json:"requestId,omitempty"`
	Topic     string          `json:"topic"`
	Command   string          `json:"command,omitempty"`
	Version   int64           `json:"version,omitempty"`
	Status    int             `json:"status"`
	Body      json.RawMessage `json:"body,omitempty"`
	// Retrying: the schedule was refused only because the plant's
	// devices do not answer or are not discovered yet; plantd keeps it
	// and evaluates it again when they answer (a further ack follows).
	Retrying bool `json:"retrying,omitempty"`
	// MigratedTo is the plant a schedule sent on a migrated plant id was
	// applied to.
	MigratedTo string `json:"migratedTo,omitempty"`
	Time       string `json:"time"`
}

// problem is the problem document (package plant's, as the HTTP API
// answers) of an error of the MQTT envelope itself (the HTTP API answers
// everything else), about the topic instance.
func problem(status int, code, detail, instance string) json.RawMessage {
	b, _ := json.Marshal(plant.NewProblem(status, code, detail, instance))
	return b
}

// requestIDPattern: request ids are echoed and passed as X-Request-Id.
var requestIDPattern = regexp.MustCompile(`^[\x21-\x7e]{1,64}$`)

// handleCommands answers incoming messages one after another until ctx
// ends, and evaluates the schedules kept for later when their time has
// come.
func (u *Uplink) handleCommands(ctx context.Context) {
	tick := time.NewTicker(min(u.cfg.LiveInterval, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			u.reportDrops(true)
			return
		case in := <-u.cmds:
			u.answer(ctx, in)
		case <-u.schedWake:
			u.takeSchedules(ctx)
		case <-tick.C:
			u.retryPending(ctx)
		}
		u.reportDrops(false)
	}
}

// dropCommand counts an incoming message dropped for want of room.
func (u *Uplink) dropCommand() {
	u.cmdDropped.Add(1)
	u.burstDropped.Add(1)
}

// reportDrops logs the incoming messages dropped since its last line, in
// one line with their count, once the queue has room again (emptied:
// the burst is over), or at the end (final). So a burst of drops is one
// line, however many it dropped, and no drop goes unsaid.
func (u *Uplink) reportDrops(final bool) {
	if !final && len(u.cmds) > 0 {
		return
	}
	n := u.burstDropped.Swap(0)
	if n == 0 {
		return
	}
	u.log.Warn("mqtt: incoming messages dropped, the command queue was full", "dropped", n,
		"queue", cap(u.cmds), "dropped_total", u.cmdDropped.Load())
}

// receive hands a message from the broker to the command worker without
// blocking: a schedule whose version can be read into its plant's slot
// (the newest version wins, see offer), anything else into the queue,
// dropped and counted when the queue is full.
func (u *Uplink) receive(in inbound) {
	if plantID, ok := strings.CutPrefix(in.topic, u.topics.schedulePrefix()); ok && len(in.payload) > 0 && len(in.payload) <= u.cfg.MaxCommandBytes {
		var head struct {
			RequestID string `json:"requestId"`
			Version   int64  `json:"version"`
		}
		// A version beyond the bound goes through the queue to its
		// refusal: in the slot it would make the good ones obsolete.
		if json.Unmarshal(in.payload, &head) == nil && head.Version >= 1 && head.Version <= versionBound(time.Now()) &&
			u.offer(plantID, in, head.RequestID, head.Version) {
			return
		}
	}
	select {
	case u.cmds <- in:
	default:
		u.dropCommand()
	}
}

// readableHead reads what it can of a message's request id, version and
// command, for the answer to a message refused as malformed.
func readableHead(b []byte) (requestID string, version int64, command string) {
	var h struct {
		RequestID json.RawMessage `json:"requestId"`
		Version   json.RawMessage `json:"version"`
		Command   json.RawMessage `json:"command"`
	}
	if json.Unmarshal(b, &h) != nil {
		return "", 0, ""
	}
	_ = json.Unmarshal(h.RequestID, &requestID)
	_ = json.Unmarshal(h.Version, &version)
	_ = json.Unmarshal(h.Command, &command)
	return requestID, version, command
}

// sendAcks enqueues acks, one outbox message each, in one transaction
// with mark (nil: none).
func (u *Uplink) sendAcks(ctx context.Context, mark *store.OutboxMark, acks ...ackItem) {
	now := time.Now()
	msgs := make([]store.OutboxAppend, len(acks))
	for i := range acks {
		acks[i].Time = now.UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal([]ackItem{acks[i]})
		msgs[i] = store.OutboxAppend{Stream: streamAck, Payload: b, Created: now}
	}
	u.commands.Add(uint64(len(acks)))
	u.enqueue(ctx, msgs, mark)
}

// answer runs one message of the queue and enqueues its ack. Schedules
// come here only when their slot could not take them (unreadable,
// oversized, or too many plants waiting).
func (u *Uplink) answer(ctx context.Context, in inbound) {
	rel := u.topics.relative(in.topic)
	plantID, isSchedule := strings.CutPrefix(in.topic, u.topics.schedulePrefix())
	if isSchedule && len(in.payload) == 0 {
		// The cloud cleared the retained schedule: nothing to answer.
		return
	}
	ack := ackItem{Topic: rel}
	fail := func(status int, code, detail string) {
		ack.Status, ack.Body = status, problem(status, code, detail, rel)
		u.sendAcks(ctx, nil, ack)
	}
	if len(in.payload) > u.cfg.MaxCommandBytes {
		ack.RequestID, ack.Version, ack.Command = readableHead(in.payload)
		if isSchedule {
			ack.Command = ""
		} else {
			ack.Version = 0
		}
		fail(http.StatusRequestEntityTooLarge, plant.CodeTooLarge, fmt.Sprintf("message larger than %d bytes", u.cfg.MaxCommandBytes))
		return
	}
	switch {
	case isSchedule:
		u.answerSchedule(ctx, plantID, in)
	case in.topic == u.topics.cmd():
		var req cmdRequest
		if err := decodeStrict(in.payload, &req); err != nil {
			ack.RequestID, _, ack.Command = readableHead(in.payload)
			fail(http.StatusBadRequest, plant.CodeBadBody, "malformed command message: "+err.Error())
			return
		}
		ack.RequestID, ack.Command = req.RequestID, req.Command
		if req.RequestID == "" {
			fail(http.StatusBadRequest, plant.CodeBadBody, "a command needs a requestId")
			return
		}
		switch req.Command {
		case "eligibilityCheck", "eligibleCommands":
			ack.Status, ack.Body, _ = u.do(ctx, http.MethodPost, "/gridcontrol/v1/plants/"+req.Command, req.RequestID, req.Body)
		case "schedules":
			if req.PlantID == "" {
				fail(http.StatusBadRequest, plant.CodeBadBody, "command schedules needs a plantId")
				return
			}
			ack.Status, ack.Body, _ = u.do(ctx, http.MethodGet, "/gridcontrol/v1/plants/"+url.PathEscape(req.PlantID)+"/schedules", req.RequestID, nil)
		case "consumers":
			target := "/gateway/v1/consumers"
			if req.PlantID != "" {
				target += "?plantId=" + url.QueryEscape(req.PlantID)
			}
			ack.Status, ack.Body, _ = u.do(ctx, http.MethodGet, target, req.RequestID, nil)
		case "consumerMode":
			if req.DeviceID == "" || req.Body == nil {
				fail(http.StatusBadRequest, plant.CodeBadBody, `command consumerMode needs a deviceId and a body {"mode": "Auto"|"On"|"Off"}`)
				return
			}
			ack.Status, ack.Body, _ = u.do(ctx, http.MethodPut, "/gateway/v1/consumers/"+url.PathEscape(req.DeviceID)+"/mode", req.RequestID, req.Body)
		default:
			fail(http.StatusBadRequest, plant.CodeBadBody, fmt.Sprintf("unknown command %q (%s)", req.Command, cmdNames))
			return
		}
		u.sendAcks(ctx, nil, ack)
	default:
		fail(http.StatusNotFound, plant.CodeNotFound, "no handler for this topic")
	}
}

// decodeStrict decodes one JSON object, refusing a key given twice (at
// any depth), unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	if err := jsondup.Check(b); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// do runs one request through the HTTP handler and returns its status,
// body (as JSON when it is JSON, else as a JSON string) and header.
func (u *Uplink) do(ctx context.Context, method, target, requestID string, body []byte) (int, json.RawMessage, http.Header) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return http.StatusBadRequest, problem(http.StatusBadRequest, "bad-parameter", err.Error(), target), nil
	}
	req.RemoteAddr = "mqtt"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if requestIDPattern.MatchString(requestID) {
		req.Header.Set("X-Request-Id", requestID)
	}
	w := &recorder{header: http.Header{}}
	u.deps.Commands.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	out := bytes.TrimSpace(w.body.Bytes())
	if len(out) == 0 {
		return w.status, nil, w.header
	}
	if !json.Valid(out) {
		out, _ = json.Marshal(string(out))
	}
	return w.status, out, w.header
}

// recorder is a minimal http.ResponseWriter that keeps what was written.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
