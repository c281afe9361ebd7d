package plant

import "time"

// LogEntry is one plant or device log message. It is the one shape of a
// log entry: grid control and cmd/plantd make it, the store keeps it, the
// HTTP API lists it and the MQTT uplink publishes it. Its JSON is the
// uplink's log item (the HTTP API's field names; the plant is the topic's,
// not a field).
type LogEntry struct {
	// Time is when it happened; zero means now.
	Time time.Time `json:"time"`
	// Level is LevelInfo, LevelWarning or LevelError; "" means info.
	Level string `json:"level"`
	// Code is a stable machine-readable word ("DeviceOffline",
	// "FeedInLimitApplied", ...), Message the human text.
	Code    string `json:"code"`
	Message string `json:"message"`
	// PlantID is required; DeviceID is "" for a plant-level entry.
	PlantID  string `json:"-"`
	DeviceID string `json:"deviceId,omitempty"`
}

// Log levels.
const (
	LevelInfo    = "info"
	LevelWarning = "warning"
	LevelError   = "error"
)

// LogQuery selects log entries: of a plant (its devices' entries
// included) or of a device, in [From, To) (zero: open), newest first.
// Cursor is the next value of the previous page ("" for the first); Limit
// is the page size (0: the store's default).
type LogQuery struct {
	PlantID  string
	DeviceID string // "" = the whole plant
	From, To time.Time
	Cursor   string
	Limit    int
}
