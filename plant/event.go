package plant

import (
	"fmt"
	"time"
)

// Event is a change of one device that [Live.Apply] found in a poll: its
// communication state changed (State differs from Prev), or, while it
// stays online, its health changed (the operating state or event bits of
// the device say something else now). The daemon logs every event; Code,
// Level and Message are its log entry.
type Event struct {
	// Time is the sample's time.
	Time              time.Time
	PlantID, DeviceID string
	// State is the communication state after the poll, Prev the one
	// before (StateUnknown for the first poll of a device, or its first
	// after [Live.Restarted]).
	State, Prev CommState
	// Health and HealthReason are the device's health after the poll.
	Health       Health
	HealthReason string
	// Err is the poll's error (a device turned stale or offline).
	Err error
	// Nameplate is what discovery learned of the device, as the sample
	// gave it (nil when it gave none).
	Nameplate *Nameplate
}

// StateChanged reports whether the event is a change of the communication
// state (else it is a change of health).
func (e Event) StateChanged() bool { return e.State != e.Prev }

// Code is the event's stable word: DeviceOnline, DeviceStale,
// DeviceOffline, or DeviceHealth followed by the health (DeviceHealthOk,
// DeviceHealthWarning, DeviceHealthError, DeviceHealthOff, ...).
func (e Event) Code() string {
	if !e.StateChanged() {
		return "DeviceHealth" + string(e.Health)
	}
	switch e.State {
	case StateOnline:
		return "DeviceOnline"
	case StateStale:
		return "DeviceStale"
	default:
		return "DeviceOffline"
	}
}

// Level is "info", "warning" or "error": online and a health of Ok (or
// Off, NotAvailable) are info, stale and a Warning health warnings,
// offline and an Error health errors.
func (e Event) Level() string {
	if !e.StateChanged() {
		switch e.Health {
		case HealthWarning:
			return LevelWarning
		case HealthError:
			return LevelError
		}
		return LevelInfo
	}
	switch e.State {
	case StateOnline:
		return LevelInfo
	case StateStale:
		return LevelWarning
	default:
		return LevelError
	}
}

// Message is the event's text: "device inv1 online (Acme X1)", "device
// inv1 stale: <error>", "device inv1 offline: <error>", "device inv1
// health Error: St FAULT".
func (e Event) Message() string {
	if !e.StateChanged() {
		m := fmt.Sprintf("device %s health %s", e.DeviceID, e.Health)
		if e.HealthReason != "" {
			m += ": " + e.HealthReason
		}
		return m
	}
	switch e.State {
	case StateOnline:
		m := fmt.Sprintf("device %s online", e.DeviceID)
		if e.Nameplate != nil {
			m += fmt.Sprintf(" (%s %s)", e.Nameplate.Manufacturer, e.Nameplate.Model)
		}
		return m
	default:
		return fmt.Sprintf("device %s %s: %v", e.DeviceID, e.State, e.Err)
	}
}

// LogEntry is the event as the plant log keeps it.
func (e Event) LogEntry() LogEntry {
	return LogEntry{Time: e.Time, PlantID: e.PlantID, DeviceID: e.DeviceID, Level: e.Level(), Code: e.Code(), Message: e.Message()}
}
