package modbus

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// The Modbus TCP framing is plantd's own: a request is encoded into the
// endpoint's send buffer and its answer read into the endpoint's receive
// buffer, so a request allocates nothing. (github.com/goburrow/modbus,
// which plantd used before, allocates its receive buffer and two log
// arguments on every Send, and its handler cannot be given a buffer.)

// dial opens the endpoint's socket within timeout, or sooner if ctx ends.
// The caller holds sem.
func (e *Endpoint) dial(ctx context.Context, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", e.cfg.Address)
	if err != nil {
		return err
	}
	e.conn = conn
	return nil
}

// exchange writes the request frame adu and reads one answer frame into
// e.rbuf within timeout. The answer's transaction, protocol and unit id
// must be those of the request. The caller holds sem and has connected.
func (e *Endpoint) exchange(adu []byte, timeout time.Duration) ([]byte, error) {
	if err := e.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := e.conn.Write(adu); err != nil {
		return nil, err
	}
	b := e.rbuf[:]
	if _, err := io.ReadFull(e.conn, b[:mbapSize]); err != nil {
		return nil, err
	}
	// The MBAP length counts the unit id and the PDU.
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n < 2 || mbapSize-1+n > maxADU {
		return nil, &kindError{kind: ErrMalformed, err: fmt.Errorf("length %d in answer header (want 2..%d)", n, maxADU-mbapSize+1)}
	}
	resp := b[:mbapSize-1+n]
	if _, err := io.ReadFull(e.conn, resp[mbapSize:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header came: the frame was cut short
		}
		return nil, err
	}
	return resp, verify(adu, resp)
}

// verify checks that an answer's MBAP header belongs to the request.
func verify(req, resp []byte) error {
	if got, want := binary.BigEndian.Uint16(resp), binary.BigEndian.Uint16(req); got != want {
		return &kindError{kind: ErrMismatch, err: fmt.Errorf("answer transaction id %d, request %d", got, want)}
	}
	if p := binary.BigEndian.Uint16(resp[2:]); p != 0 {
		return &kindError{kind: ErrMalformed, err: fmt.Errorf("protocol id %d in answer, want 0", p)}
	}
	if resp[6] != req[6] {
		return &kindError{kind: ErrMismatch, err: fmt.Errorf("answer unit id %d, request %d", resp[6], req[6])}
	}
	return nil
}
