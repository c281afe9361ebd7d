package modbus

import (
	"errors"
	"testing"
)

// TestFrameDone checks how an answer's bytes are found complete, short or
// broken as they come in.
func TestFrameDone(t *testing.T) {
	// header: transaction 1, protocol 0, length, unit 1
	frame := func(length uint16, pdu ...byte) []byte {
		return append([]byte{0, 1, 0, 0, byte(length >> 8), byte(length), 1}, pdu...)
	}
	answer := frame(5, 3, 2, 0, 7) // 2 registers' worth: fc, count, one register
	tests := []struct {
		name      string
		got       []byte
		done      bool
		want      int // *want after the call
		malformed bool
	}{
		{name: "nothing yet", got: nil},
		{name: "header cut", got: answer[:6]},
		{name: "header only", got: answer[:7], want: 11},
		{name: "pdu cut", got: answer[:10], want: 11},
		{name: "whole answer", got: answer, done: true, want: 11},
		{name: "bytes after the answer", got: append(append([]byte{}, answer...), 0xde), want: 11, malformed: true},
		{name: "length 0", got: frame(0), malformed: true},
		{name: "length 1: unit id, no pdu", got: frame(1), malformed: true},
		{name: "smallest pdu", got: frame(2, 0x83), done: true, want: 8},
		{name: "largest frame", got: frame(254, make([]byte, 253)...), done: true, want: maxADU},
		{name: "length past the largest frame", got: frame(255), malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := 0
			done, err := frameDone(tt.got, &want)
			if done != tt.done || want != tt.want || errors.Is(err, ErrMalformed) != tt.malformed {
				t.Errorf("frameDone(% x) = %v, want %d, err %v; want %v, %d, malformed %v",
					tt.got, done, want, err, tt.done, tt.want, tt.malformed)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v does not wrap ErrMalformed", err)
			}
		})
	}
}
