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
)

const (
	fcReadHoldingRegisters   byte = 3
	fcWriteMultipleRegisters byte = 16

	mbapSize = 7 // transaction id, protocol id, length, unit id
)

// Client is one unit id on an [Endpoint]. Get it from [Endpoint.Unit]. It is
// safe for concurrent use. Its requests take turns with those of the other
// clients of the endpoint.
type Client struct {
	ep      *Endpoint
	unit    byte
	timeout time.Duration
}

// Address returns the endpoint's host:port.
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
	req := request{op: OpRead, fc: fcReadHoldingRegisters, addr: addr, quantity: quantity}
	if quantity < 1 || quantity > MaxReadRegisters || int(addr)+int(quantity) > 0x10000 {
		return dst[:0], c.error(req.op, req, fmt.Errorf("%w: read of %d registers from %d (want 1..%d within 0..65535)",
			ErrInvalid, quantity, addr, MaxReadRegisters))
	}
	return c.ep.do(ctx, c, req, dst[:0])
}

// WriteRegisters writes values (1..123 registers) from addr. It always uses
// function 16 (write multiple registers), even for one register, so a 32-bit
// point is written in one request. On error it returns an [*Error].
func (c *Client) WriteRegisters(ctx context.Context, addr uint16, values []uint16) error {
	req := request{op: OpWrite, fc: fcWriteMultipleRegisters, addr: addr, quantity: uint16(min(len(values), 0xFFFF)), values: values}
	if len(values) < 1 || len(values) > MaxWriteRegisters || int(addr)+len(values) > 0x10000 {
		return c.error(req.op, req, fmt.Errorf("%w: write of %d registers to %d (want 1..%d within 0..65535)",
			ErrInvalid, len(values), addr, MaxWriteRegisters))
	}
	_, err := c.ep.do(ctx, c, req, nil)
	return err
}

func (c *Client) error(op string, req request, err error) *Error {
	return &Error{Op: op, Endpoint: c.ep.cfg.Address, Unit: c.unit, Addr: req.addr, Quantity: req.quantity, Err: err}
}

// request is one Modbus request.
type request struct {
	op       string
	fc       byte
	addr     uint16
	quantity uint16
	values   []uint16 // for writes
}

// do runs one request: wait for the endpoint's turn, connect if needed, send,
// check the answer, and on any failure other than an exception close the
// socket. Registers read are appended to dst.
func (e *Endpoint) do(ctx context.Context, c *Client, req request, dst []uint16) ([]uint16, error) {
	if err := ctx.Err(); err != nil {
		return dst, c.error(req.op, req, err)
	}
	waited, failedBefore, err := e.acquire(ctx)
	if err != nil {
		return dst, c.error(req.op, req, err)
	}
	defer e.release()

	if !e.connected {
		if waited && e.connectFailed.Load() != failedBefore {
			// A connect failed while this request waited: the address
			// cannot be reached now, and trying again at once would make
			// every unit behind a dead gateway wait out a connect of its
			// own. The caller retries at its pace.
			return dst, c.error(OpConnect, req, fmt.Errorf("%w (a connect failed while this request waited for its turn)", e.lastConnectErr))
		}
		if err := e.connect(ctx, c.timeout); err != nil {
			return dst, c.error(OpConnect, req, err)
		}
	}
	if err := e.waitReady(ctx); err != nil {
		return dst, c.error(req.op, req, err)
	}
	timeout, err := requestTimeout(ctx, c.timeout)
	if err != nil {
		return dst, c.error(req.op, req, err)
	}

	adu := e.encode(c.unit, req)
	e.stats.requests.Add(1)
	resp, err := e.roundTrip(adu, timeout)
	if err == nil {
		err = framing.Verify(adu, resp)
	}
	if err == nil {
		dst, err = decode(req, resp, dst)
	}
	if err == nil {
		return dst, nil
	}

	err = classify(err)
	var ex *ExceptionError
	if errors.As(err, &ex) {
		// The device answered: the link is fine.
		e.stats.exceptions.Add(1)
		return dst[:0], c.error(req.op, req, err)
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
		e.stats.malformed.Add(1)
		reason = "malformed"
	default:
		e.stats.ioErrors.Add(1)
		reason = "io"
	}
	// Close the socket so that a late answer can never be read as the answer
	// to the next request. The close error adds nothing to the request's.
	_ = e.disconnect(reason)
	return dst[:0], c.error(req.op, req, err)
}

// encode builds the request's Modbus TCP frame in e.buf. The caller holds sem.
func (e *Endpoint) encode(unit byte, req request) []byte {
	e.txID++
	b := e.buf[:]
	pduLen := 5 // function code, address, quantity
	if req.fc == fcWriteMultipleRegisters {
		pduLen += 1 + 2*len(req.values) // byte count, values
	}
	binary.BigEndian.PutUint16(b[0:], e.txID)
	binary.BigEndian.PutUint16(b[2:], 0) // protocol id
	binary.BigEndian.PutUint16(b[4:], uint16(1+pduLen))
	b[6] = unit
	b[7] = req.fc
	binary.BigEndian.PutUint16(b[8:], req.addr)
	binary.BigEndian.PutUint16(b[10:], req.quantity)
	n := 12
	if req.fc == fcWriteMultipleRegisters {
		b[n] = byte(2 * len(req.values))
		n++
		for _, v := range req.values {
			binary.BigEndian.PutUint16(b[n:], v)
			n += 2
		}
	}
	return b[:n]
}

// decode checks the PDU of a verified answer (transaction, protocol and unit
// id already match) and appends the registers read to dst.
func decode(req request, resp []byte, dst []uint16) ([]uint16, error) {
	if len(resp) < mbapSize+2 {
		return dst, fmt.Errorf("%w: pdu of %d bytes", ErrMalformed, len(resp)-mbapSize)
	}
	fc, body := resp[mbapSize], resp[mbapSize+1:]
	switch fc {
	case req.fc:
	case req.fc | 0x80:
		return dst, &ExceptionError{Function: req.fc, Code: body[0]}
	default:
		return dst, fmt.Errorf("%w: response function code %d, request %d", ErrMismatch, fc, req.fc)
	}
	if req.fc == fcWriteMultipleRegisters {
		if len(body) != 4 {
			return dst, fmt.Errorf("%w: write answer of %d bytes, want 4", ErrMalformed, len(body))
		}
		if a, q := binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:]); a != req.addr || q != req.quantity {
			return dst, fmt.Errorf("%w: write answer echoes %d+%d", ErrMismatch, a, q)
		}
		return dst, nil
	}
	count, data := int(body[0]), body[1:]
	if count != len(data) {
		return dst, fmt.Errorf("%w: byte count %d, but %d data bytes", ErrMalformed, count, len(data))
	}
	if count != 2*int(req.quantity) {
		return dst, fmt.Errorf("%w: byte count %d, want %d for %d registers", ErrMalformed, count, 2*int(req.quantity), req.quantity)
	}
	for i := 0; i < count; i += 2 {
		dst = append(dst, binary.BigEndian.Uint16(data[i:]))
	}
	return dst, nil
}
