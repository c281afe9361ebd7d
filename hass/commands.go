package hass

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"

	"plantd/plant"
)

// handle runs one command from Home Assistant as a request of the HTTP API
// and logs its outcome.
func (l *Link) handle(ctx context.Context, m command) {
	method, target, body, err := l.request(m)
	if err != nil {
		l.log.Warn("home assistant: command refused", "scope", m.scope, "id", m.id, "key", m.key, "payload", m.payload, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		l.log.Warn("home assistant: command", "target", target, "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "home-assistant"
	w := httptest.NewRecorder()
	l.deps.Commands.ServeHTTP(w, req)
	attrs := []any{"scope", m.scope, "id", m.id, "key", m.key, "value", m.payload, "status", w.Code}
	if w.Code >= 300 {
		l.log.Warn("home assistant: command refused", append(attrs, "problem", problemText(w.Body.Bytes()))...)
		return
	}
	l.log.Info("home assistant: command accepted", attrs...)
}

// request maps a command onto the HTTP API's request.
func (l *Link) request(m command) (method, target string, body []byte, err error) {
	p := strings.TrimSpace(m.payload)
	switch {
	case m.scope == scopePlant && m.key == keyFeedInLimit:
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return "", "", nil, fmt.Errorf("%q is not a number", p)
		}
		body, err = json.Marshal(map[string]any{"commands": []map[string]any{{
			"command": "FeedInLimit", "start": "+0s", "end": "+" + l.cfg.LimitWindow.String(), "value": v, "unit": "%"}}})
		return http.MethodPost, "/gridcontrol/v1/plants/" + url.PathEscape(m.id) + "/schedules", body, err
	case m.scope == scopeDevice && m.key == keyMode:
		mode, ok := plant.ParseConsumerMode(p)
		if !ok {
			return "", "", nil, fmt.Errorf("unknown mode %q (Auto, On or Off)", p)
		}
		body, err = json.Marshal(map[string]string{"mode": string(mode)})
		return http.MethodPut, "/gateway/v1/consumers/" + url.PathEscape(m.id) + "/mode", body, err
	case m.scope == scopeDevice && m.key == keySwitch:
		var mode plant.ConsumerMode
		switch strings.ToUpper(p) {
		case "ON":
			mode = plant.ModeOn
		case "OFF":
			mode = plant.ModeOff
		default:
			return "", "", nil, fmt.Errorf("%q is neither ON nor OFF", p)
		}
		body, err = json.Marshal(map[string]string{"mode": string(mode)})
		return http.MethodPut, "/gateway/v1/consumers/" + url.PathEscape(m.id) + "/mode", body, err
	}
	return "", "", nil, fmt.Errorf("no command %s/%s", m.scope, m.key)
}

// problemText is the detail of an API problem document (its whole body
// when it is none).
func problemText(b []byte) string {
	var pb struct {
		Detail string `json:"detail"`
		Title  string `json:"title"`
		Errors []struct {
			Field, Message string
		} `json:"errors"`
	}
	if json.Unmarshal(b, &pb) != nil || (pb.Detail == "" && pb.Title == "") {
		return strings.TrimSpace(string(b))
	}
	s := pb.Detail
	if s == "" {
		s = pb.Title
	}
	for _, e := range pb.Errors {
		s += "; " + e.Field + ": " + e.Message
	}
	return s
}
