package modbus

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	gmodbus "github.com/goburrow/modbus"
)

// rtuBus is a test fixture: the units of an RS485 bus answering RTU frames,
// served on a loopback TCP listener (a converter in transparent mode) or on
// one end of a pty pair (a serial line). It checks each request's CRC with
// goburrow's RTU packager and builds its answers with it. Register r of
// unit u reads as u*1000+r until written; coil c reads as c%3 == 0 until
// written. Units not live never answer, as a dead device on the bus.
type rtuBus struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu         sync.Mutex
	live       map[byte]bool
	regs       map[byte]map[uint16]uint16
	coils      map[byte]map[uint16]bool
	exceptions map[uint16]byte // register address → exception code
	badCRC     map[byte]int    // unit → answers still to send with a bad CRC
	delay      map[byte]time.Duration
	requests   map[byte]int // unit → requests seen with a good CRC
	badReqs    int          // requests with a bad CRC
	seen       []rtuSeen
	closers    []io.Closer
}

// rtuSeen is one request as the bus saw it.
type rtuSeen struct {
	unit, fc byte
	at       time.Time // its last byte read
	answered time.Time // its answer written (zero: none)
}

func newRTUBus(tb testing.TB, live ...byte) *rtuBus {
	b := &rtuBus{
		done:       make(chan struct{}),
		live:       make(map[byte]bool),
		regs:       make(map[byte]map[uint16]uint16),
		coils:      make(map[byte]map[uint16]bool),
		exceptions: make(map[uint16]byte),
		badCRC:     make(map[byte]int),
		delay:      make(map[byte]time.Duration),
		requests:   make(map[byte]int),
	}
	for _, u := range live {
		b.live[u] = true
	}
	tb.Cleanup(b.close)
	return b
}

// listen serves the bus on 127.0.0.1:0, one connection at a time as a
// converter does, and returns the address.
func (b *rtuBus) listen(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	b.mu.Lock()
	b.closers = append(b.closers, ln)
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !b.track(c) {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer c.Close()
				b.serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// serveLine serves the bus on rw (a pty's end) until it fails or the bus
// closes.
func (b *rtuBus) serveLine(rw io.ReadWriteCloser) {
	if !b.track(rw) {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.serve(rw)
	}()
}

// track registers c to be closed with the bus; false if it is closed.
func (b *rtuBus) track(c io.Closer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
		_ = c.Close()
		return false
	default:
	}
	b.closers = append(b.closers, c)
	return true
}

func (b *rtuBus) close() {
	select {
	case <-b.done:
		return
	default:
	}
	close(b.done)
	b.mu.Lock()
	for _, c := range b.closers {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *rtuBus) setLive(unit byte, live bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live[unit] = live
}

func (b *rtuBus) setException(addr uint16, code byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.exceptions[addr] = code
}

// corrupt makes unit's next n answers carry a bad CRC.
func (b *rtuBus) corrupt(unit byte, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.badCRC[unit] = n
}

// setDelay makes unit answer d after each request.
func (b *rtuBus) setDelay(unit byte, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.delay[unit] = d
}

func (b *rtuBus) requestCount(unit byte) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests[unit]
}

func (b *rtuBus) log() []rtuSeen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]rtuSeen(nil), b.seen...)
}

// serve reads requests from rw and answers them until rw fails.
func (b *rtuBus) serve(rw io.ReadWriter) {
	var buf [rtuMaxADU]byte
	for {
		frame, err := readRTURequest(rw, buf[:])
		if err != nil {
			return
		}
		at := time.Now()
		p := gmodbus.NewRTUClientHandler("")
		pdu, err := p.Decode(frame)
		b.mu.Lock()
		if err != nil { // a bad CRC: a device ignores the frame
			b.badReqs++
			b.mu.Unlock()
			continue
		}
		unit := frame[0]
		b.requests[unit]++
		b.seen = append(b.seen, rtuSeen{unit: unit, fc: pdu.FunctionCode, at: at})
		idx := len(b.seen) - 1
		if !b.live[unit] {
			b.mu.Unlock()
			continue
		}
		answer := b.answer(unit, pdu)
		bad := b.badCRC[unit] > 0
		if bad {
			b.badCRC[unit]--
		}
		delay := b.delay[unit]
		b.mu.Unlock()

		p.SlaveId = unit
		out, err := p.Encode(answer)
		if err != nil {
			return
		}
		if bad {
			out[len(out)-1] ^= 0xFF
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-b.done:
				return
			}
		}
		if _, err := rw.Write(out); err != nil {
			return
		}
		b.mu.Lock()
		b.seen[idx].answered = time.Now()
		b.mu.Unlock()
	}
}

// readRTURequest reads one RTU request frame: its length follows from the
// function code (and, for functions 15 and 16, the byte count).
func readRTURequest(r io.Reader, buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		return nil, err
	}
	n, have := 8, 2
	switch buf[1] {
	case 1, 2, 3, 4, 5, 6:
	case 15, 16:
		if _, err := io.ReadFull(r, buf[2:7]); err != nil {
			return nil, err
		}
		n, have = 7+int(buf[6])+2, 7
	default:
		return nil, errors.New("rtu bus: unknown function code")
	}
	if _, err := io.ReadFull(r, buf[have:n]); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// answer builds the answer PDU to a request. The caller holds mu.
func (b *rtuBus) answer(unit byte, req *gmodbus.ProtocolDataUnit) *gmodbus.ProtocolDataUnit {
	fc, d := req.FunctionCode, req.Data
	addr, qty := binary.BigEndian.Uint16(d), binary.BigEndian.Uint16(d[2:])
	if code, ok := b.exceptions[addr]; ok {
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc | 0x80, Data: []byte{code}}
	}
	regs, coils := b.regs[unit], b.coils[unit]
	if regs == nil {
		regs, coils = make(map[uint16]uint16), make(map[uint16]bool)
		b.regs[unit], b.coils[unit] = regs, coils
	}
	switch fc {
	case fcReadHoldingRegisters, fcReadInputRegisters:
		out := []byte{byte(2 * qty)}
		for i := range qty {
			v, ok := regs[addr+i]
			if !ok {
				v = regValue(unit, addr+i)
			}
			out = binary.BigEndian.AppendUint16(out, v)
		}
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: out}
	case fcReadCoils, fcReadDiscreteInputs:
		out := make([]byte, 1+bitBytes(int(qty)))
		out[0] = byte(len(out) - 1)
		for i := range int(qty) {
			a := addr + uint16(i)
			on, ok := coils[a]
			if !ok {
				on = a%3 == 0
			}
			if on {
				out[1+i/8] |= 1 << (i % 8)
			}
		}
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: out}
	case fcWriteSingleCoil:
		coils[addr] = qty == coilOn
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: d[:4]}
	case fcWriteMultipleCoils:
		for i := range int(qty) {
			coils[addr+uint16(i)] = d[5+i/8]&(1<<(i%8)) != 0
		}
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: d[:4]}
	case fcWriteMultipleRegisters:
		for i := range qty {
			regs[addr+i] = binary.BigEndian.Uint16(d[5+2*i:])
		}
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc, Data: d[:4]}
	default:
		return &gmodbus.ProtocolDataUnit{FunctionCode: fc | 0x80, Data: []byte{ExceptionIllegalFunction}}
	}
}
