package plant

import "errors"

// Health is the v2 health status of the live device list: Ok, Warning,
// Error, Off or NotAvailable, never empty.
type Health string

// The v2 health words.
const (
	HealthOk           Health = "Ok"
	HealthWarning      Health = "Warning"
	HealthError        Health = "Error"
	HealthOff          Health = "Off"
	HealthNotAvailable Health = "NotAvailable"
)

// HealthV1 is the v1 health status: Active or Inactive.
type HealthV1 string

// The v1 health words.
const (
	HealthActive   HealthV1 = "Active"
	HealthInactive HealthV1 = "Inactive"
)

// V1 maps a v2 word to v1: Ok and Warning are Active (the device works);
// Error, Off and NotAvailable are Inactive (it delivers nothing). The spec
// says Active became Ok and Inactive became Off; the other words are
// plantd's split of those two.
func (h Health) V1() HealthV1 {
	if h == HealthOk || h == HealthWarning {
		return HealthActive
	}
	return HealthInactive
}

// CommStatus is a device's communication status word.
type CommStatus string

// The communication status words.
const (
	// CommOk: the last polls succeeded.
	CommOk CommStatus = "Ok"
	// CommPartial: the device answers, but not reliably: the last poll
	// failed while its values are still fresh (stale), or fewer than
	// partialBelow of the recent polls succeeded.
	CommPartial CommStatus = "Partial"
	// CommTimedOut: the device is offline and its last poll timed out.
	CommTimedOut CommStatus = "TimedOut"
	// CommUnreachable: the device is offline for another reason (refused,
	// reset, exception, garbage), or was never polled.
	CommUnreachable CommStatus = "Unreachable"
)

// partialBelow is the success rate under which an online device counts as
// Partial (once minPollsForRate polls are known).
const (
	partialBelow    = 0.9
	minPollsForRate = 10
)

// commStatus derives the status word.
func commStatus(state CommState, lastErr error, rate float64, polls int) CommStatus {
	switch state {
	case StateOnline:
		if polls >= minPollsForRate && rate < partialBelow {
			return CommPartial
		}
		return CommOk
	case StateStale:
		return CommPartial
	case StateOffline:
		if isTimeout(lastErr) {
			return CommTimedOut
		}
	}
	return CommUnreachable
}

// isTimeout reports whether err is a request that got no answer in time:
// an error in its chain has a method Timeout() that returns true, as
// net.Error's timeouts, os.ErrDeadlineExceeded, context.DeadlineExceeded
// and plantd/modbus's ErrTimeout do. The domain tells a timeout this way,
// by its class, without knowing the transport.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// OpState is what a device's own operating state says (for a SunSpec
// device its state points, read by the device layer), ordered from the
// least to the most severe: the worst state point of a device wins.
type OpState uint8

// The operating states.
const (
	OpUnknown  OpState = iota // no state point implemented
	OpRunning                 // starting, producing, throttled, connected
	OpDegraded                // working with a limitation (SoC protection, storage warning)
	OpOff                     // off, sleeping, standby, shutting down, disconnected
	OpFault                   // the device reports a fault
)

// Severity is what a device's event bits say.
type Severity uint8

// The event severities.
const (
	SeverityNone Severity = iota
	SeverityWarning
	SeverityError
)

// DeviceStatus is what the state and event points of one poll say, in the
// domain's words: the device layer (plantd/devices/channels) reads them
// from the device's models and hands them over in [Sample.Status].
type DeviceStatus struct {
	// Op is the worst operating state; OpReason names the point and
	// symbol that decided it ("St FAULT").
	Op       OpState
	OpReason string
	// Event is the most severe event; EventReason names the first bit of
	// that severity ("Evt1 GROUND_FAULT").
	Event       Severity
	EventReason string
}

// health derives the v2 health word and its reason. Precedence, first
// match wins: not active (deactivated) → Off; no communication (offline,
// never polled) → NotAvailable; fault state or error event → Error; off,
// sleeping, standby → Off; warning event, degraded state or stale
// communication → Warning; else Ok.
func health(active bool, state CommState, ds DeviceStatus) (Health, string) {
	switch {
	case !active:
		return HealthOff, "deactivated"
	case state == StateOffline:
		return HealthNotAvailable, "offline"
	case state == StateUnknown:
		return HealthNotAvailable, "no data yet"
	case ds.Op == OpFault:
		return HealthError, ds.OpReason
	case ds.Event == SeverityError:
		return HealthError, ds.EventReason
	case ds.Op == OpOff:
		return HealthOff, ds.OpReason
	case ds.Event == SeverityWarning:
		return HealthWarning, ds.EventReason
	case ds.Op == OpDegraded:
		return HealthWarning, ds.OpReason
	case state == StateStale:
		return HealthWarning, "stale"
	}
	return HealthOk, ""
}
