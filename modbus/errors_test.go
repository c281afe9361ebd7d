package modbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	gmodbus "github.com/goburrow/modbus"
)

// TestClassifyErrors feeds classify the errors a request can meet before
// decode: goburrow's packagers' (framer.check) and the link's.
func TestClassifyErrors(t *testing.T) {
	req := []byte{0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1}
	tcp := gmodbus.NewTCPClientHandler("")
	verify := func(resp ...byte) error { return tcp.Verify(req, resp) }
	rtu := gmodbus.NewRTUClientHandler("")
	rtuReq := []byte{1, 3, 0, 0, 0, 1, 0x84, 0x0A}

	tests := []struct {
		name    string
		err     error
		want    error  // sentinel wanted; nil: returned unchanged
		wantMsg string // when set, the classified error's text
	}{
		{name: "transaction id", err: verify(0, 2, 0, 0, 0, 5, 1, 3, 2, 0, 0), want: ErrMismatch,
			wantMsg: "answer does not match request: response transaction id '2' does not match request '1'"},
		{name: "protocol id", err: verify(0, 1, 0, 1, 0, 5, 1, 3, 2, 0, 0), want: ErrMalformed},
		{name: "unit id", err: verify(0, 1, 0, 0, 0, 5, 2, 3, 2, 0, 0), want: ErrMismatch},
		{name: "tcp length", err: func() error { _, err := tcp.Decode([]byte{0, 1, 0, 0, 0, 9, 1, 3, 2, 0, 0}); return err }(), want: ErrMalformed},
		{name: "rtu crc", err: func() error { _, err := rtu.Decode([]byte{1, 3, 2, 0, 0, 0, 0}); return err }(), want: ErrCRC,
			wantMsg: "malformed answer: bad crc: response crc '0' does not match expected '17592'"},
		{name: "rtu slave id", err: rtu.Verify(rtuReq, []byte{2, 3, 2, 0, 0, 0, 0}), want: ErrMismatch},
		{name: "rtu length", err: rtu.Verify(rtuReq, []byte{1, 3, 0}), want: ErrMalformed},
		{name: "read timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: ErrTimeout},
		{name: "dial timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, want: ErrTimeout},
		{name: "truncated", err: io.ErrUnexpectedEOF, want: ErrMalformed},
		{name: "eof", err: io.EOF},
		{name: "already classified", err: fmt.Errorf("%w: length 0 in response header", ErrMalformed)},
		{name: "text of another goburrow function", err: errors.New("modbus: response function code '4' does not match request '3'")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error to classify")
			}
			got := classify(tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("classify(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.want) {
				t.Errorf("classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("classify(%v) = %v lost its cause", tt.err, got)
			}
			if tt.wantMsg != "" && got.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", got.Error(), tt.wantMsg)
			}
		})
	}
	if err := verify(req...); err != nil {
		t.Errorf("Verify of a matching header: %v", err)
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
