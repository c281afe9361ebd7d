package sim

import "context"

// Registers is an in-process client of a device's holding registers: the
// register model the device's Modbus server answers from, read (function
// 3) and written (function 16) without a socket, for a test that runs the
// plant without Start (a decision test on a stepped clock). Refusals are
// the exceptions the server would answer (modbus.ExceptionError). Faults
// (SetFault) act on the sockets only. A SunSpec or relay device's map; a
// template device answers its holding registers and refuses writes.
type Registers struct{ d *Device }

// Registers returns the device's in-process register client.
func (d *Device) Registers() Registers { return Registers{d} }

// ReadHoldingRegisters reads quantity registers at addr into dst.
func (r Registers) ReadHoldingRegisters(_ context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	var regs []uint16
	var err error
	switch {
	case r.d.tpl != nil:
		regs, err = r.d.plant.readTemplate(r.d, 3, addr, quantity)
	case r.d.relay != nil:
		return nil, errIllegalFunction
	default:
		regs, err = r.d.plant.read(r.d, addr, quantity)
	}
	if err != nil {
		return nil, err
	}
	return append(dst[:0], regs...), nil
}

// WriteRegisters writes values at addr, checked as the server checks them.
func (r Registers) WriteRegisters(_ context.Context, addr uint16, values []uint16) error {
	if r.d.tpl != nil || r.d.relay != nil {
		return errIllegalFunction
	}
	return r.d.plant.write(r.d, addr, values)
}
