package mqtt

import (
	"bytes"
	"encoding/json"
	"time"
)

// planMessages are the live messages of a plant's tariffs and day-ahead
// plan whose key changed since they were last put in this connection
// (the first tick of a connection puts both), with their keys by stream,
// which the caller records once the messages are put: one item, the
// source's object with "time" (when it was put) first.
func (u *Uplink) planMessages(plantID string, now time.Time) ([]liveMessage, map[string][]byte) {
	if c := u.connects.Load(); c != u.planConn {
		clear(u.lastPlan)
		u.planConn = c
	}
	var out []liveMessage
	keys := map[string][]byte{}
	for _, s := range []struct {
		stream string
		item   func(string) (json.RawMessage, []byte, bool)
	}{{tariffsStream(plantID), u.deps.Plan.TariffsItem}, {planStream(plantID), u.deps.Plan.PlanItem}} {
		item, key, ok := s.item(plantID)
		item = bytes.TrimSpace(item)
		if last, seen := u.lastPlan[s.stream]; !ok || len(item) < 2 || item[0] != '{' || seen && bytes.Equal(key, last) || !json.Valid(item) {
			continue
		}
		keys[s.stream] = key
		payload := make([]byte, 0, len(item)+64)
		payload = append(payload, `[{"time":"`...)
		payload = now.UTC().AppendFormat(payload, time.RFC3339Nano)
		payload = append(payload, '"')
		if rest := bytes.TrimSpace(item[1:]); rest[0] != '}' {
			payload = append(payload, ',')
		}
		payload = append(payload, item[1:]...)
		payload = append(payload, ']')
		out = append(out, liveMessage{stream: s.stream, payload: payload, created: now})
	}
	return out, keys
}
