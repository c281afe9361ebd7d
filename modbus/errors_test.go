package modbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	gmodbus "github.com/goburrow/modbus"
)

// TestClassifyGoburrowErrors feeds classify the errors goburrow v0.1.0 makes:
// real ones from its Verify and Decode, and its fmt.Errorf texts for the rest.
func TestClassifyGoburrowErrors(t *testing.T) {
	h := gmodbus.NewTCPClientHandler("127.0.0.1:1")
	req := []byte{0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1}
	verify := func(resp ...byte) error { return h.Verify(req, resp) }
	decode := func(adu ...byte) error { _, err := h.Decode(adu); return err }

	tests := []struct {
		name    string
		err     error
		fc      byte
		want    error  // sentinel wanted; nil: returned unchanged
		wantMsg string // when set, the classified error's text
	}{
		{name: "verify transaction id", err: verify(0, 2, 0, 0, 0, 5, 1, 3, 2, 0, 0), fc: 3, want: ErrMismatch,
			wantMsg: "answer does not match request: response transaction id '2' does not match request '1'"},
		{name: "verify protocol id", err: verify(0, 1, 0, 1, 0, 5, 1, 3, 2, 0, 0), fc: 3, want: ErrMalformed},
		{name: "verify unit id", err: verify(0, 1, 0, 0, 0, 5, 2, 3, 2, 0, 0), fc: 3, want: ErrMismatch},
		{name: "decode length", err: decode(0, 1, 0, 0, 0, 1, 1), fc: 3, want: ErrMalformed},
		{name: "send zero length", err: fmt.Errorf("modbus: length in response header '%v' must not be zero", 0), want: ErrMalformed},
		{name: "send length too big", err: fmt.Errorf("modbus: length in response header '%v' must not greater than '%v'", 300, 254), want: ErrMalformed},
		{name: "function code", err: fmt.Errorf("modbus: response function code '%v' does not match request '%v'", 4, 3), want: ErrMismatch},
		{name: "byte count", err: fmt.Errorf("modbus: response data size '%v' does not match count '%v'", 3, 4), want: ErrMalformed},
		{name: "write size", err: fmt.Errorf("modbus: response data size '%v' does not match expected '%v'", 2, 4), want: ErrMalformed},
		{name: "empty data", err: fmt.Errorf("modbus: response data is empty"), want: ErrMalformed},
		{name: "write address", err: fmt.Errorf("modbus: response address '%v' does not match request '%v'", 1, 2), want: ErrMismatch},
		{name: "write quantity", err: fmt.Errorf("modbus: response quantity '%v' does not match request '%v'", 1, 2), want: ErrMismatch},
		{name: "other function's exception", err: &gmodbus.ModbusError{FunctionCode: 0x90, ExceptionCode: 2}, fc: 3, want: ErrMismatch,
			wantMsg: "answer does not match request: response function code 144 does not match request 3"},
		{name: "other function", err: &gmodbus.ModbusError{FunctionCode: 4, ExceptionCode: 8}, fc: 3, want: ErrMismatch},
		{name: "read timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: ErrTimeout},
		{name: "dial timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, want: ErrTimeout},
		{name: "truncated", err: io.ErrUnexpectedEOF, want: ErrMalformed},
		{name: "eof", err: io.EOF},
		{name: "quantity", err: fmt.Errorf("modbus: quantity '%v' must be between '%v' and '%v',", 0, 1, 125)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("goburrow returned no error")
			}
			got := classify(tt.err, tt.fc)
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

	t.Run("exception", func(t *testing.T) {
		got := classify(&gmodbus.ModbusError{FunctionCode: 0x83, ExceptionCode: 2}, 3)
		var ex *ExceptionError
		if !errors.As(got, &ex) || *ex != (ExceptionError{Function: 3, Code: 2}) {
			t.Errorf("got %v, want exception 2 on function 3", got)
		}
	})
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestGoburrowFunctionCodeMismatch documents that goburrow's own client
// reports an answer with another function code as a *ModbusError, not as
// a string error, and that classify turns it into ErrMismatch.
func TestGoburrowFunctionCodeMismatch(t *testing.T) {
	srv := startFaultServer(t, fault{kind: faultWrongFunc})
	h := gmodbus.NewTCPClientHandler(srv.addr())
	h.Timeout = time.Second
	defer h.Close()
	_, err := gmodbus.NewClient(h).ReadHoldingRegisters(10, 2)
	var mbErr *gmodbus.ModbusError
	if !errors.As(err, &mbErr) || mbErr.FunctionCode != 4 {
		t.Fatalf("goburrow err = %v, want a *ModbusError with function 4", err)
	}
	if got := classify(err, 3); !errors.Is(got, ErrMismatch) {
		t.Errorf("classify = %v, want ErrMismatch", got)
	}
}

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
