package modbus

import (
	"encoding/binary"
	"fmt"
	"time"

	gmodbus "github.com/goburrow/modbus"
)

// Frames. github.com/goburrow/modbus frames every request and checks every
// answer, with the packager of the transport's client handler:
//
//   - Modbus TCP: [gmodbus.NewTCPClientHandler]'s tcpPackager. Encode adds
//     the MBAP header (its own transaction counter, SlaveId as the unit
//     id), Decode checks the header's length against the frame and returns
//     the PDU, Verify checks transaction, protocol and unit id.
//   - RTU and RTU over TCP: [gmodbus.NewRTUClientHandler]'s rtuPackager.
//     Encode puts SlaveId before the PDU and appends the CRC, Decode checks
//     the CRC and returns the PDU, Verify checks the length and the slave
//     id.
//
// Decode runs before Verify (goburrow's own client runs them the other way
// round), so that an RTU frame with a bad CRC counts as a CRC error even when
// the byte that was hit is the slave id. The PDU that Decode returns is
// checked against the request by decode (client.go): function code,
// exception, byte count, write echo.
//
// plantd keeps the I/O: goburrow's transporters (Send) are not used. Where
// an answer ends is found from its header (TCP: the MBAP length) or its
// function code and byte count (RTU), by frameLength.

// frameKind is how an answer's end is found.
type frameKind uint8

const (
	frameTCP frameKind = iota // MBAP header with a length
	frameRTU                  // unit id, PDU, CRC; length from the PDU
)

// Sizes of frames.
const (
	mbapSize      = 7 // transaction id, protocol id, length, unit id
	rtuMaxADU     = 256
	rtuException  = 5 // unit id, function code, exception code, CRC
	rtuWriteReply = 8 // unit id, function code, address, quantity or value, CRC
)

// framer encodes requests and checks answers with goburrow's packager of
// the endpoint's transport. Its handler's transporter is never used; for
// TransportRTU the RTU handler's serial.Config holds the line's settings
// (serial.go). The caller holds the endpoint's turn: SlaveId is set per
// request.
type framer struct {
	kind frameKind
	tcp  *gmodbus.TCPClientHandler
	rtu  *gmodbus.RTUClientHandler
}

func newFramer(cfg EndpointConfig) framer {
	if cfg.Transport == TransportTCP {
		return framer{kind: frameTCP, tcp: gmodbus.NewTCPClientHandler(cfg.Address)}
	}
	h := gmodbus.NewRTUClientHandler(cfg.Address)
	h.BaudRate = cfg.Serial.Baud
	h.DataBits = cfg.Serial.DataBits
	h.Parity = cfg.Serial.Parity
	h.StopBits = cfg.Serial.StopBits
	// Each read of the port waits at most this long; the request's
	// timeout is kept by the loop around it (serial.go).
	h.Timeout = serialPoll
	h.IdleTimeout = 0
	return framer{kind: frameRTU, rtu: h}
}

// encode returns the frame of a request to unit: function code fc, data.
// goburrow allocates the frame.
func (f *framer) encode(unit, fc byte, data []byte) ([]byte, error) {
	pdu := gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: data}
	if f.kind == frameRTU {
		f.rtu.SlaveId = unit
		return f.rtu.Encode(&pdu)
	}
	f.tcp.SlaveId = unit
	return f.tcp.Encode(&pdu)
}

// check verifies a whole answer frame against its request frame and
// returns the answer's function code and data. Its errors are goburrow's,
// for classify.
func (f *framer) check(req, resp []byte) (fc byte, data []byte, err error) {
	var pdu *gmodbus.ProtocolDataUnit
	if f.kind == frameRTU {
		if pdu, err = f.rtu.Decode(resp); err == nil {
			err = f.rtu.Verify(req, resp)
		}
	} else {
		if pdu, err = f.tcp.Decode(resp); err == nil {
			err = f.tcp.Verify(req, resp)
		}
	}
	if err != nil {
		return 0, nil, err
	}
	return pdu.FunctionCode, pdu.Data, nil
}

// frameLength returns the length of the answer frame that got begins, or 0
// while got is too short to tell. An answer whose length cannot be known
// (a bad MBAP length, an RTU function code without a known answer) is
// malformed.
func frameLength(kind frameKind, got []byte) (int, error) {
	if kind == frameTCP {
		if len(got) < mbapSize {
			return 0, nil
		}
		// The MBAP length counts the unit id and the PDU.
		length := int(binary.BigEndian.Uint16(got[4:]))
		if length < 2 || length > maxADU-mbapSize+1 {
			return 0, fmt.Errorf("%w: length %d in response header, want 2..%d", ErrMalformed, length, maxADU-mbapSize+1)
		}
		return mbapSize - 1 + length, nil
	}
	if len(got) < 2 {
		return 0, nil
	}
	fc := got[1]
	switch {
	case fc&0x80 != 0:
		return rtuException, nil
	case fc == fcReadCoils, fc == fcReadDiscreteInputs, fc == fcReadHoldingRegisters, fc == fcReadInputRegisters:
		if len(got) < 3 {
			return 0, nil
		}
		// unit id, function code, byte count, data, CRC
		n := 3 + int(got[2]) + 2
		if n > rtuMaxADU {
			return 0, fmt.Errorf("%w: byte count %d makes a frame longer than %d bytes", ErrMalformed, got[2], rtuMaxADU)
		}
		return n, nil
	case fc == fcWriteSingleCoil, fc == fcWriteMultipleCoils, fc == fcWriteMultipleRegisters:
		return rtuWriteReply, nil
	default:
		return 0, fmt.Errorf("%w: answer with function code %d, whose length is not known", ErrMalformed, fc)
	}
}

// frameDone reports whether got holds one whole answer frame. Bytes past
// the frame are an error: the stream is out of step, and the caller closes
// the socket.
func frameDone(kind frameKind, got []byte) (bool, error) {
	want, err := frameLength(kind, got)
	switch {
	case err != nil || want == 0 || len(got) < want:
		return false, err
	case len(got) > want:
		return false, fmt.Errorf("%w: %d bytes after the %d-byte answer", ErrMalformed, len(got)-want, want)
	}
	return true, nil
}

// received counts m more answer bytes read into x.buf and reports, as
// frameDone does, whether the answer is whole. A read of no bytes changes
// nothing.
func (x *exchange) received(m int) (bool, error) {
	if m <= 0 {
		return false, nil
	}
	x.n += m
	return frameDone(x.kind, x.buf[:x.n])
}

// exchange is one request on a link: the request frame, the answer buffer
// and deadline in, the answer's length out. The Endpoint keeps it, so that
// a request allocates nothing for it.
type exchange struct {
	req      []byte
	buf      []byte // maxADU bytes
	kind     frameKind
	deadline time.Time
	// n is the bytes of the answer read into buf (on failure, so far).
	n int
	// discarded is the bytes read and dropped before the request (a
	// serial line's leftovers after a failure).
	discarded int
}

// link is an endpoint's open socket or serial port.
type link interface {
	// exchange writes x.req and reads one whole answer frame into x.buf
	// before x.deadline.
	exchange(x *exchange) error
	// keep reports whether the link stays open after a failed exchange
	// (err is classified, not an exception). false: the endpoint closes
	// it.
	keep(err error) bool
	close() error
}
