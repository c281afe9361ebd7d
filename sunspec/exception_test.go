package sunspec_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"plantd/modbus"
	"plantd/sunspec"
)

// TestIsException ties sunspec's view of an exception answer to the
// transport's error type: if modbus.ExceptionError lost its ExceptionCode
// method, grid control would take every refusal for a link fault.
func TestIsException(t *testing.T) {
	ex := &modbus.ExceptionError{Function: 16, Code: modbus.ExceptionIllegalDataValue}
	tests := []struct {
		name     string
		err      error
		wantCode byte
		wantOK   bool
	}{
		{"exception", ex, modbus.ExceptionIllegalDataValue, true},
		{"wrapped exception", fmt.Errorf("write model 123: %w", ex), modbus.ExceptionIllegalDataValue, true},
		{"timeout", modbus.ErrTimeout, 0, false},
		{"canceled", context.Canceled, 0, false},
		{"other", errors.New("connection reset"), 0, false},
		{"nil", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, ok := sunspec.IsException(tt.err)
			if code != tt.wantCode || ok != tt.wantOK {
				t.Errorf("IsException(%v) = %d, %v; want %d, %v", tt.err, code, ok, tt.wantCode, tt.wantOK)
			}
		})
	}
}
