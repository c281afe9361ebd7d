package modbus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Request limits of the Modbus specification.
const (
	// MaxReadRegisters is the most registers one read (function 3) returns.
	MaxReadRegisters = 125
	// MaxWriteRegisters is the most registers one write (function 16) sets.
	MaxWriteRegisters = 123
	// MaxReadBits is the most coils or discrete inputs one read (function
	// 1 or 2) returns.
	MaxReadBits = 2000
	// MaxWriteBits is the most coils one write (function 15) sets.
	MaxWriteBits = 1968
)

// Function codes of the Modbus application protocol specification V1.1b3.
const (
	fcReadCoils              byte = 1
	fcReadDiscreteInputs     byte = 2
	fcReadHoldingRegisters   byte = 3
	fcReadInputRegisters     byte = 4
	fcWriteSingleCoil        byte = 5
	fcWriteMultipleCoils     byte = 15
	fcWriteMultipleRegisters byte = 16

	// coilOn and coilOff are the values function 5 writes.
	coilOn  uint16 = 0xFF00
	coilOff uint16 = 0x0000
)

// Client is one unit id on an [Endpoint]. Get it from [Endpoint.Unit] (or
// [Endpoint.ControlUnit]). It is safe for concurrent use. Its requests
// take turns with those of the other clients of the endpoint.
type Client struct {
	ep      *Endpoint
	unit    byte
	timeout time.Duration
	class   class // its queue for the endpoint's turn
}

// Address returns the endpoint's host:port or serial device path.
func (c *Client) Address() string { return c.ep.cfg.Address }

// UnitID returns the Modbus unit id.
func (c *Client) UnitID() byte { return c.unit }

// Timeout returns the per-request timeout.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Endpoint returns the endpoint the client uses.
func (c *Client) Endpoint() *Endpoint { return c.ep }

// ReadHoldingRegisters reads quantity (1..125) registers from addr with
// function 3. It appends them to dst[:0] and returns the result, so a caller
// that passes the previous result back reads without allocating. On error it
// returns dst[:0] and an [*Error].
func (c *Client) ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	return c.readRegisters(ctx, fcReadHoldingRegisters, addr, quantity, dst)
}

// ReadInputRegisters reads quantity (1..125) input registers from addr
// with function 4, as ReadHoldingRegisters does holding registers.
func (c *Client) ReadInputRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	return c.readRegisters(ctx, fcReadInputRegisters, addr, quantity, dst)
}

func (c *Client) readRegisters(ctx context.Context, fc byte, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	ans := answer{regs: dst[:0]}
	if err := c.run(ctx, &request{op: OpRead, fc: fc, addr: addr, quantity: quantity}, &ans); err != nil {
		return dst[:0], err
	}
	return ans.regs, nil
}

// ReadCoils reads quantity (1..2000) coils from addr with function 1. It
// appends them to dst[:0] (true: on) and returns the result; on error it
// returns dst[:0] and an [*Error].
func (c *Client) ReadCoils(ctx context.Context, addr, quantity uint16, dst []bool) ([]bool, error) {
	return c.readBits(ctx, fcReadCoils, addr, quantity, dst)
}

// ReadDiscreteInputs reads quantity (1..2000) discrete inputs from addr
// with function 2, as ReadCoils does coils.
func (c *Client) ReadDiscreteInputs(ctx context.Context, addr, quantity uint16, dst []bool) ([]bool, error) {
	return c.readBits(ctx, fcReadDiscreteInputs, addr, quantity, dst)
}

func (c *Client) readBits(ctx context.Context, fc byte, addr, quantity uint16, dst []bool) ([]bool, error) {
	ans := answer{bits: dst[:0]}
	if err := c.run(ctx, &request{op: OpRead, fc: fc, addr: addr, quantity: quantity}, &ans); err != nil {
		return dst[:0], err
	}
	return ans.bits, nil
}

// WriteRegisters writes values (1..123 registers) from addr. It always uses
// function 16 (write multiple registers), even for one register, so a 32-bit
// point is written in one request. On error it returns an [*Error].
func (c *Client) WriteRegisters(ctx context.Context, addr uint16, values []uint16) error {
	return c.run(ctx, &request{op: OpWrite, fc: fcWriteMultipleRegisters, addr: addr, quantity: uint16(min(len(values), 0xFFFF)), values: values}, &answer{})
}

// WriteCoil switches one coil with function 5 (write single coil: 0xFF00
// on, 0x0000 off). The device echoes the request; an echo of another coil
// or value fails with [ErrMismatch]. On error it returns an [*Error].
func (c *Client) WriteCoil(ctx context.Context, addr uint16, on bool) error {
	req := request{op: OpWrite, fc: fcWriteSingleCoil, addr: addr, quantity: 1, coil: coilOff}
	if on {
		req.coil = coilOn
	}
	return c.run(ctx, &req, &answer{})
}

// WriteCoils sets values (1..1968 coils) from addr with function 15
// (write multiple coils), packed eight to a byte, the first coil in the
// lowest bit. On error it returns an [*Error].
func (c *Client) WriteCoils(ctx context.Context, addr uint16, values []bool) error {
	return c.run(ctx, &request{op: OpWrite, fc: fcWriteMultipleCoils, addr: addr, quantity: uint16(min(len(values), 0xFFFF)), bits: values}, &answer{})
}

// run checks req's count and address range and runs it on the endpoint.
func (c *Client) run(ctx context.Context, req *request, ans *answer) error {
	if n, limit := req.count(); n < 1 || n > limit || int(req.addr)+n > 0x10000 {
		return c.outOfRange(req, n, limit)
	}
	return c.ep.do(ctx, c, req, ans)
}

// outOfRange is the error of a request whose count or address range is out
// of bounds: [ErrInvalid], nothing sent.
func (c *Client) outOfRange(req *request, n, limit int) error {
	verb, what, prep := "read", "registers", "from"
	switch req.fc {
	case fcReadCoils, fcReadDiscreteInputs:
		what = "bits"
	case fcWriteMultipleRegisters:
		verb, prep = "write", "to"
	case fcWriteMultipleCoils, fcWriteSingleCoil:
		verb, what, prep = "write", "coils", "to"
	}
	return c.error(req.op, req, fmt.Errorf("%w: %s of %d %s %s %d (want 1..%d within 0..65535)",
		ErrInvalid, verb, n, what, prep, req.addr, limit))
}

func (c *Client) error(op string, req *request, err error) *Error {
	return &Error{Op: op, Function: req.fc, Endpoint: c.ep.cfg.Address, Unit: c.unit, Addr: req.addr, Quantity: req.quantity, Err: err}
}

// request is one Modbus request.
type request struct {
	op       string
	fc       byte
	addr     uint16
	quantity uint16
	values   []uint16 // function 16
	bits     []bool   // function 15
	coil     uint16   // function 5: coilOn or coilOff
}

// count returns how many registers or bits req reads or writes, and the
// most its function allows.
func (req *request) count() (n, limit int) {
	switch req.fc {
	case fcReadCoils, fcReadDiscreteInputs:
		return int(req.quantity), MaxReadBits
	case fcWriteMultipleRegisters:
		return len(req.values), MaxWriteRegisters
	case fcWriteMultipleCoils:
		return len(req.bits), MaxWriteBits
	case fcWriteSingleCoil:
		return 1, 1
	}
	return int(req.quantity), MaxReadRegisters
}

// answer receives what a read returns: registers (functions 3 and 4) or
// bits (functions 1 and 2), appended to the slice the caller passed in.
type answer struct {
	regs []uint16
	bits []bool
}

// do runs one request: wait for the endpoint's turn, connect if needed,
// keep the frame gap, send, check the answer, and on any failure other than
// an exception close the socket (a serial port: see [link.keep]). What a
// read returns is appended to ans.
func (e *Endpoint) do(ctx context.Context, c *Client, req *request, ans *answer) error {
	if e.invalid != nil {
		return c.error(req.op, req, e.invalid)
	}
	if err := ctx.Err(); err != nil {
		return c.error(req.op, req, err)
	}
	waited, failedBefore, err := e.acquire(ctx, c.class)
	if err != nil {
		return c.error(req.op, req, err)
	}
	defer e.release()

	if !e.connected {
		if err := e.connectFor(ctx, c.timeout, waited, failedBefore); err != nil {
			return c.error(OpConnect, req, err)
		}
	}
	if err := e.waitReady(ctx); err != nil {
		return c.error(req.op, req, err)
	}
	if e.gap > 0 {
		// The line's silence between frames: a few milliseconds at most
		// on a serial line, so a plain sleep.
		if d := time.Until(e.idleSince.Add(e.gap)); d > 0 {
			time.Sleep(d)
		}
	}
	timeout, err := requestTimeout(ctx, c.timeout)
	if err != nil {
		return c.error(req.op, req, err)
	}
	adu, err := e.framer.encode(c.unit, req.fc, e.requestData(req))
	if err != nil {
		return c.error(req.op, req, fmt.Errorf("%w: %w", ErrInvalid, err))
	}
	start := time.Now()
	x := &e.x
	x.req, x.buf, x.kind, x.deadline, x.n, x.discarded = adu, e.rbuf[:], e.framer.kind, start.Add(timeout), 0, 0
	e.stats.requests.Add(1)
	err = e.link.exchange(x)
	e.idleSince = time.Now()
	e.stats.busy.Add(int64(e.idleSince.Sub(start)))
	e.stats.written.Add(uint64(len(adu)))
	e.stats.read.Add(uint64(x.n + x.discarded))
	if err == nil {
		var fc byte
		var data []byte
		fc, data, err = e.framer.check(adu, x.buf[:x.n])
		if err == nil {
			err = decode(req, fc, data, ans)
		}
	}
	if err != nil {
		return e.failed(c, req, err)
	}
	return nil
}

// connectFor connects before a request (the caller holds the turn). waited
// and failedBefore are acquire's: a connect that failed while this request
// waited for its turn is not tried again at once.
func (e *Endpoint) connectFor(ctx context.Context, timeout time.Duration, waited bool, failedBefore uint64) error {
	if waited && e.connectFailed.Load() != failedBefore {
		// A connect failed while this request waited: the address
		// cannot be reached now, and trying again at once would make
		// every unit behind a dead gateway wait out a connect of its
		// own. The caller retries at its pace.
		return fmt.Errorf("%w (a connect failed while this request waited for its turn)", e.lastConnectErr)
	}
	return e.connect(ctx, timeout)
}

// failed counts a failed request by its class and, unless the device
// answered with an exception or the link keeps its state (a serial port),
// closes the link. It is off do's path so that do's stack frame stays
// small: the pollers' goroutines would otherwise grow their stacks on
// every poll after the garbage collector shrank them (measured in doc.go).
func (e *Endpoint) failed(c *Client, req *request, err error) error {
	err = classify(err)
	var ex *ExceptionError
	if errors.As(err, &ex) {
		// The device answered: the link is fine.
		e.stats.exceptions.Add(1)
		return c.error(req.op, req, err)
	}
	var reason string
	switch {
	case errors.Is(err, ErrTimeout):
		e.stats.timeouts.Add(1)
		reason = "timeout"
	case errors.Is(err, ErrMismatch):
		e.stats.mismatches.Add(1)
		reason = "mismatch"
	case errors.Is(err, ErrMalformed):
		if errors.Is(err, ErrCRC) {
			e.stats.crcErrors.Add(1)
		}
		e.stats.malformed.Add(1)
		reason = "malformed"
	default:
		e.stats.ioErrors.Add(1)
		reason = "io"
	}
	if !e.link.keep(err) {
		// Close the socket so that a late answer can never be read as the
		// answer to the next request. The close error adds nothing to the
		// request's.
		_ = e.disconnect(reason)
	}
	return c.error(req.op, req, err)
}

// requestData builds the request's PDU data (what follows the function
// code) in e.rbuf, which holds no answer until the exchange: goburrow's
// Encode copies it into the request frame first. The caller holds sem.
func (e *Endpoint) requestData(req *request) []byte {
	b := e.rbuf[:]
	binary.BigEndian.PutUint16(b, req.addr)
	n := 2
	switch req.fc {
	case fcWriteSingleCoil:
		binary.BigEndian.PutUint16(b[n:], req.coil)
		n += 2
	case fcWriteMultipleCoils:
		binary.BigEndian.PutUint16(b[n:], req.quantity)
		nb := bitBytes(len(req.bits))
		b[n+2] = byte(nb)
		n += 3
		clear(b[n : n+nb])
		for i, on := range req.bits {
			if on {
				b[n+i/8] |= 1 << (i % 8)
			}
		}
		n += nb
	case fcWriteMultipleRegisters:
		binary.BigEndian.PutUint16(b[n:], req.quantity)
		b[n+2] = byte(2 * len(req.values))
		n += 3
		for _, v := range req.values {
			binary.BigEndian.PutUint16(b[n:], v)
			n += 2
		}
	default: // reads: the quantity
		binary.BigEndian.PutUint16(b[n:], req.quantity)
		n += 2
	}
	return b[:n]
}

// bitBytes is the number of bytes n bits take, packed eight to a byte.
func bitBytes(n int) int { return (n + 7) / 8 }

// decode checks the PDU of a verified answer (function code fc, data body;
// transaction and unit id, CRC already checked) against the request and
// appends what a read returns to ans.
func decode(req *request, fc byte, body []byte, ans *answer) error {
	if len(body) == 0 {
		return fmt.Errorf("%w: pdu of function %d without data", ErrMalformed, fc)
	}
	switch fc {
	case req.fc:
	case req.fc | 0x80:
		return &ExceptionError{Function: req.fc, Code: body[0]}
	default:
		return fmt.Errorf("%w: response function code %d, request %d", ErrMismatch, fc, req.fc)
	}
	switch req.fc {
	case fcWriteMultipleRegisters, fcWriteMultipleCoils, fcWriteSingleCoil:
		if len(body) != 4 {
			return fmt.Errorf("%w: write answer of %d bytes, want 4", ErrMalformed, len(body))
		}
		a, v := binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:])
		if req.fc == fcWriteSingleCoil {
			if a != req.addr || v != req.coil {
				return fmt.Errorf("%w: write answer echoes coil %d = %#04x, want %d = %#04x", ErrMismatch, a, v, req.addr, req.coil)
			}
			return nil
		}
		if a != req.addr || v != req.quantity {
			return fmt.Errorf("%w: write answer echoes %d+%d", ErrMismatch, a, v)
		}
		return nil
	}
	count, data := int(body[0]), body[1:]
	if count != len(data) {
		return fmt.Errorf("%w: byte count %d, but %d data bytes", ErrMalformed, count, len(data))
	}
	if req.fc == fcReadCoils || req.fc == fcReadDiscreteInputs {
		if want := bitBytes(int(req.quantity)); count != want {
			return fmt.Errorf("%w: byte count %d, want %d for %d bits", ErrMalformed, count, want, req.quantity)
		}
		for i := range int(req.quantity) {
			ans.bits = append(ans.bits, data[i/8]&(1<<(i%8)) != 0)
		}
		return nil
	}
	if count != 2*int(req.quantity) {
		return fmt.Errorf("%w: byte count %d, want %d for %d registers", ErrMalformed, count, 2*int(req.quantity), req.quantity)
	}
	for i := 0; i < count; i += 2 {
		ans.regs = append(ans.regs, binary.BigEndian.Uint16(data[i:]))
	}
	return nil
}
