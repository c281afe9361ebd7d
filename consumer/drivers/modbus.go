package drivers

import (
	"context"
	"errors"
)

// ModbusClient is what the relay, SG-Ready and watchdog drivers ask of a
// device's Modbus unit: its coils and holding registers. The daemon's
// pool gives a *modbus.Client (plantd/modbus), which has these methods;
// drivers declares them so that it does not import the transport (and
// config, which imports drivers for Settings, does not either).
type ModbusClient interface {
	ReadCoils(ctx context.Context, addr, quantity uint16, dst []bool) ([]bool, error)
	WriteCoil(ctx context.Context, addr uint16, on bool) error
	WriteCoils(ctx context.Context, addr uint16, values []bool) error
	ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error)
	WriteRegisters(ctx context.Context, addr uint16, values []uint16) error
}

// exceptionIllegalDataAddress is the Modbus exception code 02, ILLEGAL
// DATA ADDRESS: the device has no such coil or register (MODBUS
// Application Protocol Specification V1.1b3, section 7, "MODBUS
// Exception Codes").
const exceptionIllegalDataAddress byte = 2

// exceptionAnswer is a device's Modbus exception answer, told by its
// method as plantd/modbus's ExceptionError has it, without importing the
// transport (sunspec.IsException tells it the same way).
type exceptionAnswer interface {
	error
	ExceptionCode() byte
}

// isIllegalDataAddress reports whether err, or an error it wraps, is the
// device's exception answer "illegal data address".
func isIllegalDataAddress(err error) bool {
	var ex exceptionAnswer
	return errors.As(err, &ex) && ex.ExceptionCode() == exceptionIllegalDataAddress
}
