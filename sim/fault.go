package sim

import (
	"fmt"
	"time"
)

// FaultKind is a way a real device misbehaves (DESIGN §2.1). The simulator
// applies it per device, at runtime, without a restart.
type FaultKind uint8

// The fault kinds. Frame-level faults are applied by the TCP front of the
// endpoint, so they work whatever the Modbus server library does; see the
// package documentation for how each one behaves on the wire.
const (
	// FaultNone answers normally.
	FaultNone FaultKind = iota
	// FaultSlow answers each request after Fault.Delay (1 s when 0).
	FaultSlow
	// FaultDrop closes the TCP connection when a request for the unit
	// arrives, instead of answering.
	FaultDrop
	// FaultGarbage answers with a frame of random bytes: a broken header,
	// a length that does not match, or a nonsense PDU.
	FaultGarbage
	// FaultWrongTID answers one request behind: each request gets the
	// answer to the one before it, with that request's transaction id, as
	// a late answer after a client timeout would (the first gets its own
	// answer under another transaction id).
	FaultWrongTID
	// FaultException answers every request with Modbus exception
	// Fault.Code (4, server device failure, when 0).
	FaultException
	// FaultNotImplemented reports every measured value as not implemented
	// (0x8000, 0xFFFF, NaN), as a device on standby does, whatever the sun.
	FaultNotImplemented
	// FaultOneClient makes the endpoint keep a single client connection:
	// a new connection closes the ones before it.
	FaultOneClient
	// FaultOffline makes the device dead: connections to its endpoint are
	// reset at once and open ones are closed. On an endpoint shared with
	// live devices, its requests are answered with exception 0x0B
	// (gateway target device failed to respond) instead. On an RTU line
	// the unit never answers.
	FaultOffline
	// FaultBadCRC (RTU only: serial lines and RTU over TCP) answers with
	// one bit flipped after the unit id, the CRC left as it was: a CRC
	// error. Modbus TCP answers normally.
	FaultBadCRC
	// FaultCollision (RTU only) puts a second master's frame, random bytes
	// without a valid CRC, on the line right after each request for the
	// unit, then the unit's answer after the inter-frame gap. Modbus TCP
	// answers normally.
	FaultCollision
)

var faultNames = [...]string{
	FaultNone:           "none",
	FaultSlow:           "slow",
	FaultDrop:           "drop",
	FaultGarbage:        "garbage",
	FaultWrongTID:       "wrong-tid",
	FaultException:      "exception",
	FaultNotImplemented: "not-implemented",
	FaultOneClient:      "one-client",
	FaultOffline:        "offline",
	FaultBadCRC:         "bad-crc",
	FaultCollision:      "collision",
}

// String returns the name of the fault kind ("slow", "wrong-tid", ...).
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// ParseFaultKind maps a name as returned by String to its kind.
func ParseFaultKind(s string) (FaultKind, error) {
	for i, n := range faultNames {
		if n == s {
			return FaultKind(i), nil
		}
	}
	return FaultNone, fmt.Errorf("sim: unknown fault kind %q", s)
}

// Fault is the misbehaviour injected into one device.
type Fault struct {
	Kind FaultKind
	// Delay is how late FaultSlow answers (default 1 s).
	Delay time.Duration
	// Code is the exception code of FaultException (default 4).
	Code byte
}

// Defaults for the fault parameters left zero.
const (
	defaultSlowDelay     = time.Second
	defaultExceptionCode = 4 // server device failure
	exGatewayTarget      = 0x0B
)

// normalized fills in the defaults of f.
func (f Fault) normalized() Fault {
	switch f.Kind {
	case FaultSlow:
		if f.Delay <= 0 {
			f.Delay = defaultSlowDelay
		}
	case FaultException:
		if f.Code == 0 {
			f.Code = defaultExceptionCode
		}
	}
	return f
}

// String describes the fault, e.g. "slow 1.5s" or "exception 6".
func (f Fault) String() string {
	switch f.Kind {
	case FaultSlow:
		return fmt.Sprintf("%s %s", f.Kind, f.Delay)
	case FaultException:
		return fmt.Sprintf("%s %d", f.Kind, f.Code)
	}
	return f.Kind.String()
}
