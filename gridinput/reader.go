package gridinput

import (
	"context"
	"fmt"

	"plantd/modbus"
)

// Bits reads an I/O module's inputs over Modbus: Count discrete inputs
// (function 2) from Addr, or, with Registers, the bits of Count input
// registers (function 4) from Addr, least significant bit first (input
// 16·r+b is bit b of register r).
type Bits struct {
	Client    *modbus.Client
	Addr      uint16
	Count     uint16
	Registers bool
}

// ReadInputs implements Reader.
func (b Bits) ReadInputs(ctx context.Context) ([]bool, error) {
	if !b.Registers {
		bits, err := b.Client.ReadDiscreteInputs(ctx, b.Addr, b.Count, nil)
		if err != nil {
			return nil, fmt.Errorf("read discrete inputs %d+%d: %w", b.Addr, b.Count, err)
		}
		return bits, nil
	}
	regs, err := b.Client.ReadInputRegisters(ctx, b.Addr, b.Count, nil)
	if err != nil {
		return nil, fmt.Errorf("read input registers %d+%d: %w", b.Addr, b.Count, err)
	}
	out := make([]bool, 0, 16*len(regs))
	for _, r := range regs {
		for i := range 16 {
			out = append(out, r&(1<<i) != 0)
		}
	}
	return out, nil
}
