package mqtt

import (
	"encoding/json"
	"strings"
)

// Stream names. A stream is one sequence of messages with its own seq
// counter; its topic is {prefix}/{gatewayId}/up/{stream}.
const (
	streamAck        = "ack"
	streamLivePrefix = "live/"
	streamDevPrefix  = "live/devices/"
	streamRollup     = "rollup/"
	streamLog        = "log/"
)

func liveStream(plantID string) string    { return streamLivePrefix + plantID }
func deviceStream(deviceID string) string { return streamDevPrefix + deviceID }

// eebusStream is a plant's control box over EEBus: its state with the
// live values.
func eebusStream(plantID string) string  { return streamLivePrefix + "eebus/" + plantID }
func rollupStream(plantID string) string { return streamRollup + plantID }

// tariffsStream and planStream are a plant's price slots and its
// day-ahead plan: live streams, published when they change.
func tariffsStream(plantID string) string { return streamLivePrefix + "tariffs/" + plantID }
func planStream(plantID string) string    { return streamLivePrefix + "plan/" + plantID }
func logStream(plantID string) string     { return streamLog + plantID }

// streamClass orders streams: acks first, then live, then the backlog
// streams (rollups before logs).
type streamClass int

const (
	classAck streamClass = iota
	classLive
	classRollup
	classLog
)

func classOf(stream string) streamClass {
	switch {
	case stream == streamAck:
		return classAck
	case strings.HasPrefix(stream, streamLivePrefix):
		return classLive
	case strings.HasPrefix(stream, streamRollup):
		return classRollup
	}
	return classLog
}

// backlog reports whether a stream drains under the rate cap.
func (c streamClass) backlog() bool { return c >= classRollup }

// topics are the topics of one gateway.
type topics struct {
	base string // {prefix}/{gatewayId}/
}

func newTopics(prefix, gatewayID string) topics {
	return topics{base: prefix + "/" + gatewayID + "/"}
}

func (t topics) state() string               { return t.base + "state" }
func (t topics) up(stream string) string     { return t.base + "up/" + stream }
func (t topics) scheduleFilter() string      { return t.base + "down/schedule/+" }
func (t topics) schedulePrefix() string      { return t.base + "down/schedule/" }
func (t topics) cmd() string                 { return t.base + "down/cmd" }
func (t topics) relative(full string) string { return strings.TrimPrefix(full, t.base) }

// envelope is the JSON of every up/ message but state (DESIGN §7). A
// message that carries several outbox rows (backlog batching) has seq
// the first and lastSeq the last of a run of consecutive numbers; items
// are the rows' items in order.
type envelope struct {
	GatewayID  string          `json:"gatewayId"`
	BootID     string          `json:"bootId"`
	Stream     string          `json:"stream"`
	Seq        uint64          `json:"seq"`
	LastSeq    uint64          `json:"lastSeq,omitempty"`
	Historical bool            `json:"historical"`
	Items      json.RawMessage `json:"items"`
}

// stateMessage is the retained payload of the state topic: the state,
// since when it holds (absent in the last will, which the broker sends
// when it notices), and which run of which plantd it is about.
type stateMessage struct {
	GatewayID string `json:"gatewayId"`
	BootID    string `json:"bootId"`
	State     string `json:"state"` // online | offline
	Time      string `json:"time,omitempty"`
	Version   string `json:"version,omitempty"`
	StartedAt string `json:"startedAt"`
}

// joinItems concatenates JSON arrays ([a],[b,c] → [a,b,c]); rows that are
// not arrays are taken as one item each.
func joinItems(rows [][]byte) json.RawMessage {
	if len(rows) == 1 && isArray(rows[0]) {
		return rows[0]
	}
	var b []byte
	b = append(b, '[')
	first := true
	for _, r := range rows {
		inner := r
		if isArray(r) {
			inner = trimArray(r)
		}
		if len(strings.TrimSpace(string(inner))) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, inner...)
	}
	return append(b, ']')
}

func isArray(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']'
}

func trimArray(b []byte) []byte {
	s := strings.TrimSpace(string(b))
	return []byte(s[1 : len(s)-1])
}
