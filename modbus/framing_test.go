package modbus

import (
	"errors"
	"testing"

	gmodbus "github.com/goburrow/modbus"
)

// TestFrameDone checks how an answer's bytes are found complete, short or
// broken as they come in, for both framings.
func TestFrameDone(t *testing.T) {
	// header: transaction 1, protocol 0, length, unit 1
	frame := func(length uint16, pdu ...byte) []byte {
		return append([]byte{0, 1, 0, 0, byte(length >> 8), byte(length), 1}, pdu...)
	}
	answer := frame(5, 3, 2, 0, 7) // fc, count, one register
	// RTU: unit 1, then the PDU, then 2 CRC bytes (not checked here).
	rtu := func(pdu ...byte) []byte { return append(append([]byte{1}, pdu...), 0xAA, 0xBB) }
	rtuRead := rtu(3, 4, 0, 1, 0, 2)
	tests := []struct {
		name      string
		kind      frameKind
		got       []byte
		done      bool
		want      int // frameLength
		malformed bool
	}{
		{name: "tcp nothing yet", got: nil},
		{name: "tcp header cut", got: answer[:6]},
		{name: "tcp header only", got: answer[:7], want: 11},
		{name: "tcp pdu cut", got: answer[:10], want: 11},
		{name: "tcp whole answer", got: answer, done: true, want: 11},
		{name: "tcp bytes after the answer", got: append(append([]byte{}, answer...), 0xde), want: 11, malformed: true},
		{name: "tcp length 0", got: frame(0), malformed: true},
		{name: "tcp length 1: unit id, no pdu", got: frame(1), malformed: true},
		{name: "tcp smallest pdu", got: frame(2, 0x83), done: true, want: 8},
		{name: "tcp largest frame", got: frame(254, make([]byte, 253)...), done: true, want: maxADU},
		{name: "tcp length past the largest frame", got: frame(255), malformed: true},

		{name: "rtu nothing yet", kind: frameRTU},
		{name: "rtu unit only", kind: frameRTU, got: rtuRead[:1]},
		{name: "rtu read without byte count", kind: frameRTU, got: rtuRead[:2]},
		{name: "rtu read cut", kind: frameRTU, got: rtuRead[:5], want: 9},
		{name: "rtu whole read", kind: frameRTU, got: rtuRead, done: true, want: 9},
		{name: "rtu bytes after the read", kind: frameRTU, got: append(append([]byte{}, rtuRead...), 0), want: 9, malformed: true},
		{name: "rtu exception cut", kind: frameRTU, got: []byte{1, 0x83}, want: 5},
		{name: "rtu exception", kind: frameRTU, got: rtu(0x83, 2), done: true, want: 5},
		{name: "rtu write answer", kind: frameRTU, got: rtu(16, 0, 1, 0, 2), done: true, want: 8},
		{name: "rtu coil answer cut", kind: frameRTU, got: rtu(5, 0, 1, 0xFF)[:6], want: 8},
		{name: "rtu largest read", kind: frameRTU, got: rtu(append([]byte{3, 250}, make([]byte, 250)...)...), done: true, want: 255},
		{name: "rtu byte count past 256 bytes", kind: frameRTU, got: []byte{1, 3, 252}, malformed: true},
		{name: "rtu unknown function", kind: frameRTU, got: []byte{1, 7}, malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, lerr := frameLength(tt.kind, tt.got)
			done, err := frameDone(tt.kind, tt.got)
			if done != tt.done || want != tt.want || errors.Is(err, ErrMalformed) != tt.malformed {
				t.Errorf("frameDone(% x) = %v, err %v, frameLength %d (%v); want %v, %d, malformed %v",
					tt.got, done, err, want, lerr, tt.done, tt.want, tt.malformed)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v does not wrap ErrMalformed", err)
			}
		})
	}
}

// TestFramerRoundTrip checks that the framer's frames are goburrow's: an
// encoded request decodes with the other side's packager, and an answer
// built by goburrow checks.
func TestFramerRoundTrip(t *testing.T) {
	for _, tr := range []Transport{TransportTCP, TransportRTUOverTCP, TransportRTU} {
		t.Run(string(tr), func(t *testing.T) {
			f := newFramer(EndpointConfig{Address: "x", Transport: tr}.withDefaults())
			adu, err := f.encode(7, fcReadHoldingRegisters, []byte{0x9C, 0x40, 0, 2})
			if err != nil {
				t.Fatal(err)
			}
			// The server side: the same packager decodes the request and
			// encodes the answer.
			var srv gmodbus.Packager
			if tr == TransportTCP {
				h := gmodbus.NewTCPClientHandler("")
				h.SlaveId = 7
				srv = h
			} else {
				h := gmodbus.NewRTUClientHandler("")
				h.SlaveId = 7
				srv = h
			}
			pdu, err := srv.Decode(adu)
			if err != nil || pdu.FunctionCode != fcReadHoldingRegisters || len(pdu.Data) != 4 {
				t.Fatalf("request decodes as %+v, %v", pdu, err)
			}
			resp, err := srv.Encode(&gmodbus.ProtocolDataUnit{FunctionCode: 3, Data: []byte{4, 0, 1, 0, 2}})
			if err != nil {
				t.Fatal(err)
			}
			if tr == TransportTCP {
				copy(resp, adu[:2]) // the server echoes the transaction id
			}
			fc, data, err := f.check(adu, resp)
			if err != nil || fc != 3 || string(data) != "\x04\x00\x01\x00\x02" {
				t.Errorf("check = %d, % x, %v", fc, data, err)
			}
			if tr != TransportTCP {
				resp[3] ^= 1 // a bit flipped on the line
				_, _, err := f.check(adu, resp)
				if err = classify(err); !errors.Is(err, ErrCRC) || !errors.Is(err, ErrMalformed) {
					t.Errorf("flipped bit: %v, want ErrCRC", err)
				}
			}
		})
	}
}
