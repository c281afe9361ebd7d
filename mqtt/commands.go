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
type cmdRequest struct {
	RequestID string          `json:"requestId"`
	Command   string          `json:"command"`
	PlantID   string          `json:"plantId,omitempty"`
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
	Time      string          `json:"time"`
}

// problemJSON is an RFC 9457 problem in the HTTP API's shape, for errors
// of the MQTT envelope itself (the HTTP API answers everything else).
type problemJSON struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

func problem(status int, code, detail, instance string) json.RawMessage {
	b, _ := json.Marshal(problemJSON{Type: "https://plantd.dev/problems/" + code, Title: http.StatusText(status),
		Status: status, Detail: detail, Instance: instance, Code: code, Message: detail})
	return b
}

// requestIDPattern: request ids are echoed and passed as X-Request-Id.
var requestIDPattern = regexp.MustCompile(`^[\x21-\x7e]{1,64}$`)

// handleCommands answers incoming messages one after another until ctx
// ends.
func (u *Uplink) handleCommands(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-u.cmds:
			u.answer(ctx, in)
		}
	}
}

// answer runs one incoming message and enqueues its ack.
func (u *Uplink) answer(ctx context.Context, in inbound) {
	rel := u.topics.relative(in.topic)
	ack := ackItem{Topic: rel}
	var mark *store.OutboxMark
	skip := false
	defer func() {
		if skip {
			return
		}
		ack.Time = time.Now().UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal([]ackItem{ack})
		u.commands.Add(1)
		u.enqueue(ctx, []store.OutboxAppend{{Stream: streamAck, Payload: b, Created: time.Now()}}, mark)
	}()
	fail := func(status int, code, detail string) {
		ack.Status, ack.Body = status, problem(status, code, detail, rel)
	}
	if len(in.payload) > u.cfg.MaxCommandBytes {
		fail(http.StatusRequestEntityTooLarge, "body-too-large", fmt.Sprintf("message larger than %d bytes", u.cfg.MaxCommandBytes))
		return
	}
	switch {
	case strings.HasPrefix(in.topic, u.topics.schedulePrefix()):
		plantID := strings.TrimPrefix(in.topic, u.topics.schedulePrefix())
		if len(in.payload) == 0 {
			// The cloud cleared the retained schedule: nothing to answer.
			skip = true
			return
		}
		var req scheduleRequest
		if err := decodeStrict(in.payload, &req); err != nil {
			fail(http.StatusBadRequest, "bad-body", "malformed schedule message: "+err.Error())
			return
		}
		ack.RequestID, ack.Version = req.RequestID, req.Version
		if req.Version < 1 || len(req.Schedule) == 0 || req.RequestID == "" {
			fail(http.StatusBadRequest, "bad-body", "a schedule message needs requestId, version (≥ 1) and schedule")
			return
		}
		key := "schedule/" + plantID
		if last, ok, err := u.deps.Outbox.Mark(ctx, key); err == nil && ok && req.Version <= last {
			// Already answered (a retained schedule delivered again).
			u.log.Debug("schedule version already answered", "plant", plantID, "version", req.Version)
			skip = true
			return
		}
		mark = &store.OutboxMark{Key: key, Value: req.Version}
		path := "/gridcontrol/v1/plants/" + url.PathEscape(plantID) + "/schedules"
		if req.SkipEligibilityCheck {
			path += "?skipEligibilityCheck=true"
		}
		ack.Status, ack.Body = u.do(ctx, http.MethodPost, path, req.RequestID, req.Schedule)
	case in.topic == u.topics.cmd():
		var req cmdRequest
		if err := decodeStrict(in.payload, &req); err != nil {
			fail(http.StatusBadRequest, "bad-body", "malformed command message: "+err.Error())
			return
		}
		ack.RequestID, ack.Command = req.RequestID, req.Command
		if req.RequestID == "" {
			fail(http.StatusBadRequest, "bad-body", "a command needs a requestId")
			return
		}
		switch req.Command {
		case "eligibilityCheck", "eligibleCommands":
			ack.Status, ack.Body = u.do(ctx, http.MethodPost, "/gridcontrol/v1/plants/"+req.Command, req.RequestID, req.Body)
		case "schedules":
			if req.PlantID == "" {
				fail(http.StatusBadRequest, "bad-body", "command schedules needs a plantId")
				return
			}
			ack.Status, ack.Body = u.do(ctx, http.MethodGet, "/gridcontrol/v1/plants/"+url.PathEscape(req.PlantID)+"/schedules", req.RequestID, nil)
		default:
			fail(http.StatusBadRequest, "bad-body", fmt.Sprintf("unknown command %q (eligibilityCheck, eligibleCommands, schedules)", req.Command))
		}
	default:
		fail(http.StatusNotFound, "not-found", "no handler for this topic")
	}
}

// decodeStrict decodes one JSON object, refusing unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
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

// do runs one request through the HTTP handler and returns its status and
// body (the body as JSON when it is JSON, else as a JSON string).
func (u *Uplink) do(ctx context.Context, method, target, requestID string, body []byte) (int, json.RawMessage) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return http.StatusBadRequest, problem(http.StatusBadRequest, "bad-parameter", err.Error(), target)
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
		return w.status, nil
	}
	if !json.Valid(out) {
		out, _ = json.Marshal(string(out))
	}
	return w.status, out
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
