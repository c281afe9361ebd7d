package modbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
)

// TestClassifySocketErrors: timeouts and frames cut short get their kind,
// other I/O errors and the framing's own (already kinded) errors pass
// unchanged. The framing faults themselves are driven end to end on real
// sockets by TestFaults.
func TestClassifySocketErrors(t *testing.T) {
	framing := &kindError{kind: ErrMismatch, err: errors.New("answer unit id 2, request 1")}
	tests := []struct {
		name string
		err  error
		want error // sentinel wanted; nil: returned unchanged
	}{
		{name: "read timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: ErrTimeout},
		{name: "dial timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, want: ErrTimeout},
		{name: "truncated", err: io.ErrUnexpectedEOF, want: ErrMalformed},
		{name: "eof", err: io.EOF},
		{name: "framing", err: framing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("classify(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("classify(%v) = %v, want %v wrapping the cause", tt.err, got, tt.want)
			}
		})
	}
}

// TestVerify checks the answer header against the request's.
func TestVerify(t *testing.T) {
	req := []byte{0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1}
	tests := []struct {
		resp []byte
		want error
		msg  string
	}{
		{[]byte{0, 1, 0, 0, 0, 5, 1, 3, 2, 0, 0}, nil, ""},
		{[]byte{0, 2, 0, 0, 0, 5, 1, 3, 2, 0, 0}, ErrMismatch, "answer does not match request: answer transaction id 2, request 1"},
		{[]byte{0, 1, 0, 1, 0, 5, 1, 3, 2, 0, 0}, ErrMalformed, "malformed answer: protocol id 1 in answer, want 0"},
		{[]byte{0, 1, 0, 0, 0, 5, 2, 3, 2, 0, 0}, ErrMismatch, "answer does not match request: answer unit id 2, request 1"},
	}
	for _, tt := range tests {
		err := verify(req, tt.resp)
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("verify(% x) = %v, want %v", tt.resp, err, tt.want)
		}
		if err != nil && tt.msg != "" && err.Error() != tt.msg {
			t.Errorf("verify(% x) message %q, want %q", tt.resp, err.Error(), tt.msg)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return &Error{Op: OpRead, Endpoint: "h:502", Err: err} }
	tests := []struct {
		err   error
		class Class
		retry bool
	}{
		{nil, ClassOK, false},
		{wrap(&kindError{kind: ErrTimeout, err: os.ErrDeadlineExceeded}), ClassLink, true},
		{wrap(fmt.Errorf("%w: x", ErrMismatch)), ClassLink, true},
		{wrap(fmt.Errorf("%w: x", ErrMalformed)), ClassLink, true},
		{wrap(&backoffError{}), ClassLink, true},
		{wrap(io.EOF), ClassLink, true},
		{wrap(ErrClosed), ClassClosed, false},
		{wrap(fmt.Errorf("%w: x", ErrInvalid)), ClassInvalid, false},
		{wrap(context.Canceled), ClassCanceled, false},
		{wrap(context.DeadlineExceeded), ClassCanceled, false},
		{wrap(&ExceptionError{Code: ExceptionServerDeviceBusy}), ClassBusy, true},
		{wrap(&ExceptionError{Code: ExceptionAcknowledge}), ClassBusy, true},
		{wrap(&ExceptionError{Code: ExceptionIllegalDataAddress}), ClassUnsupported, false},
		{wrap(&ExceptionError{Code: ExceptionIllegalFunction}), ClassUnsupported, false},
		{wrap(&ExceptionError{Code: ExceptionIllegalDataValue}), ClassRejected, false},
		{wrap(&ExceptionError{Code: ExceptionServerDeviceFailure}), ClassDeviceFailure, true},
		{wrap(&ExceptionError{Code: 99}), ClassDeviceFailure, true},
		{wrap(&ExceptionError{Code: ExceptionGatewayPathUnavailable}), ClassGateway, true},
		{wrap(&ExceptionError{Code: ExceptionGatewayTargetDeviceFailedToRespond}), ClassGateway, true},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.class {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.class)
		}
		if got := IsRetryable(tt.err); got != tt.retry {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.retry)
		}
	}
	if s := Class(99).String(); s != "Class(99)" {
		t.Errorf("Class(99) = %q", s)
	}
}
