package plant

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"plantd/modbus"
)

// TestHealthPrecedence checks the order of the health rules.
func TestHealthPrecedence(t *testing.T) {
	fault := DeviceStatus{Op: OpFault, OpReason: "St FAULT"}
	off := DeviceStatus{Op: OpOff, OpReason: "St SLEEPING"}
	warn := DeviceStatus{Op: OpRunning, Event: SeverityWarning, EventReason: "Evt1 OVER_TEMP"}
	ok := DeviceStatus{Op: OpRunning}
	tests := []struct {
		name   string
		active bool
		state  CommState
		ds     DeviceStatus
		want   Health
		v1     HealthV1
	}{
		{"deactivated beats everything", false, StateOnline, fault, HealthOff, HealthInactive},
		{"offline beats fault", true, StateOffline, fault, HealthNotAvailable, HealthInactive},
		{"never polled", true, StateUnknown, DeviceStatus{}, HealthNotAvailable, HealthInactive},
		{"stale fault is still Error", true, StateStale, fault, HealthError, HealthInactive},
		{"stale and off", true, StateStale, off, HealthOff, HealthInactive},
		{"stale running", true, StateStale, ok, HealthWarning, HealthActive},
		{"online warning", true, StateOnline, warn, HealthWarning, HealthActive},
		{"online ok", true, StateOnline, ok, HealthOk, HealthActive},
		{"online without state points", true, StateOnline, DeviceStatus{}, HealthOk, HealthActive},
	}
	for _, tt := range tests {
		got, _ := health(tt.active, tt.state, tt.ds)
		if got != tt.want {
			t.Errorf("%s: health = %s, want %s", tt.name, got, tt.want)
		}
		if got == "" {
			t.Errorf("%s: empty health", tt.name)
		}
		if v1 := got.V1(); v1 != tt.v1 {
			t.Errorf("%s: v1 = %s, want %s", tt.name, v1, tt.v1)
		}
	}
}

func TestCommStatus(t *testing.T) {
	timeout := &modbus.Error{Op: modbus.OpRead, Endpoint: "127.0.0.1:1502", Unit: 1, Addr: 40000, Quantity: 2, Err: modbus.ErrTimeout}
	refused := &modbus.Error{Op: modbus.OpConnect, Endpoint: "127.0.0.1:1502", Unit: 1, Err: syscall.ECONNREFUSED}
	tests := []struct {
		name  string
		state CommState
		err   error
		rate  float64
		polls int
		want  CommStatus
	}{
		{"online", StateOnline, nil, 1, 64, CommOk},
		{"online after an old error", StateOnline, refused, 0.95, 64, CommOk},
		{"online but flaky", StateOnline, refused, 0.5, 64, CommPartial},
		{"online, too few polls to judge", StateOnline, refused, 0.5, 4, CommOk},
		{"stale", StateStale, timeout, 0.9, 20, CommPartial},
		{"offline after a timeout", StateOffline, fmt.Errorf("poll inv1: %w", timeout), 0, 64, CommTimedOut},
		{"offline after a context deadline", StateOffline, fmt.Errorf("poll: %w", context.DeadlineExceeded), 0, 64, CommTimedOut},
		{"offline, refused", StateOffline, refused, 0, 64, CommUnreachable},
		{"offline, exception", StateOffline, &modbus.ExceptionError{}, 0, 64, CommUnreachable},
		{"offline, no error known", StateOffline, nil, 0, 1, CommUnreachable},
		{"never polled", StateUnknown, nil, 0, 0, CommUnreachable},
	}
	for _, tt := range tests {
		if got := commStatus(tt.state, tt.err, tt.rate, tt.polls); got != tt.want {
			t.Errorf("%s: status = %s, want %s", tt.name, got, tt.want)
		}
	}
	if isTimeout(errors.New("timeout")) {
		t.Error("a string that says timeout is not a timeout")
	}
}
