package sim

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"plantd/modbus"
)

// Modbus RTU as a slave sees it (Modbus over serial line, V1.02, §2.5.1): a
// frame is the unit id, the PDU (function code, data) and the CRC-16/MODBUS
// of both, low byte first; a silence of 3.5 characters ends it. The same
// slave serves a serial device (serial.go) and the connections of an RTU
// over TCP endpoint (rtutcp.go); the PDU goes to handler, the code the
// Modbus TCP endpoints run, so a read or a write means one thing whatever
// the transport.

// RTU frame sizes.
const (
	rtuMaxFrame = 256 // unit, PDU of at most 253 bytes, CRC
	rtuMinFrame = 4   // unit, function, CRC
	// BitsPerChar is the bits one byte takes on a Modbus serial line:
	// start, 8 data, parity (or a second stop bit), stop. Lines are paced
	// at it whatever their parity and stop bits, so bus figures compare.
	BitsPerChar = 11
	// fastGap is the inter-frame silence above 19200 baud, fixed by the
	// spec, and the one of an unpaced line.
	fastGap = 1750 * time.Microsecond
)

// crc16 is the CRC-16/MODBUS of b (polynomial 0xA001 reflected, initial
// value 0xFFFF).
func crc16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// appendCRC appends the CRC of b to it, low byte first.
func appendCRC(b []byte) []byte {
	c := crc16(b)
	return append(b, byte(c), byte(c>>8))
}

// crcOK reports whether a frame ends with the CRC of what precedes it.
func crcOK(frame []byte) bool {
	if len(frame) < rtuMinFrame {
		return false
	}
	n := len(frame) - 2
	return crc16(frame[:n]) == binary.LittleEndian.Uint16(frame[n:])
}

// lineTiming is how long bytes take on a line and the silence that ends
// a frame.
type lineTiming struct {
	baud int           // 0: unpaced
	gap  time.Duration // 3.5 characters, fastGap above 19200 baud
}

func timingFor(baud int) lineTiming {
	t := lineTiming{baud: baud, gap: fastGap}
	if baud > 0 && baud <= 19200 {
		t.gap = time.Duration(7 * BitsPerChar * int64(time.Second) / int64(2*baud))
	}
	return t
}

// wire is how long n bytes take on the line.
func (t lineTiming) wire(n int) time.Duration {
	if t.baud <= 0 {
		return 0
	}
	return time.Duration(int64(n) * BitsPerChar * int64(time.Second) / int64(t.baud))
}

// BusStats counts what the slave of a line saw and did since Start.
type BusStats struct {
	// Frames is the frames received, delimited by silence.
	Frames uint64
	// BadFrames were too short, too long or failed the CRC (noise, a
	// collision): ignored, as a slave does.
	BadFrames uint64
	// Ignored were for a unit not on the line, or broadcasts (unit 0):
	// not answered.
	Ignored uint64
	// Silent were for a unit whose fault keeps it silent (FaultOffline,
	// FaultDrop).
	Silent uint64
	// Answered counts the answers sent, good or not (exceptions, faults).
	Answered uint64
	// BytesIn and BytesOut are the bytes received and sent, noise
	// included.
	BytesIn, BytesOut uint64
	// Late adds up how much later than the instant their last byte would
	// arrive the answers were written (timer and scheduling latency): the
	// only time the simulator adds to the line's.
	Late time.Duration
}

// busCounters are a line's BusStats, updated atomically.
type busCounters struct {
	frames, badFrames, ignored, silent, answered, bytesIn, bytesOut atomic.Uint64
	late                                                            atomic.Int64
}

func (c *busCounters) snapshot() BusStats {
	return BusStats{
		Frames: c.frames.Load(), BadFrames: c.badFrames.Load(), Ignored: c.ignored.Load(),
		Silent: c.silent.Load(), Answered: c.answered.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), Late: time.Duration(c.late.Load()),
	}
}

// lineConn is the byte stream of a line: a serial device or a TCP
// connection. SetReadDeadline delimits frames by silence.
type lineConn interface {
	io.ReadWriter
	SetReadDeadline(time.Time) error
}

// rtuSlave answers the requests on one line for the units of ep (a
// serial bus's devices, or an RTU over TCP endpoint's). One goroutine
// runs it; its buffers are reused for every frame.
//
// Pacing: the line is modelled on the slave's clock. A request's bytes
// take their wire time from the instant the first one arrives (or the
// line falls silent, if later); the frame ends when nothing followed for
// the gap after its last byte's wire time; the answer then takes its own
// wire time and is written whole at the instant its last byte would
// arrive. So a master that writes its requests at once (a pty has no
// baud) and keeps the gap itself sees the figures of a real line: the
// slave adds the 3.5-character gap and nothing else.
type rtuSlave struct {
	h      handler
	timing lineTiming
	stats  *busCounters
	log    *slog.Logger
	done   <-chan struct{}
	tcp    bool // FaultDrop closes the connection instead of keeping silent
	rng    *rand.Rand
	timer  *time.Timer
	line   *lineClock
	req    modbus.Request // the request being served, reused

	in    [rtuMaxFrame]byte
	out   [rtuMaxFrame + 2]byte
	noise [rtuMaxFrame]byte
}

// lineClock is when a line falls silent: one per serial line, one per
// RTU over TCP endpoint, whose connections share the converter's line.
type lineClock struct {
	mu   sync.Mutex // held while a frame is answered
	free time.Time  // when the last answer left the line
}

func (l *lineClock) freeAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.free
}

func newRTUSlave(ep *endpoint, timing lineTiming, line *lineClock, stats *busCounters, done <-chan struct{}, tcp bool, seed uint64) *rtuSlave {
	return &rtuSlave{
		h: handler{ep: ep}, timing: timing, line: line, stats: stats, log: ep.log, done: done, tcp: tcp,
		rng: rand.New(rand.NewPCG(seed, 0x7274752d73696d)),
	}
}

// serve answers frames from c until reading fails (closed, lost) or a
// fault drops the connection; it returns that error (nil for a drop).
func (s *rtuSlave) serve(c lineConn) error {
	for {
		frame, end, err := s.readFrame(c)
		if err != nil {
			return err
		}
		if !s.answer(c, frame, end) {
			return nil
		}
	}
}

// readFrame reads bytes until the line stays silent for the gap after
// the last one's wire time. It returns the frame (nil when longer than
// any frame: noise) and the instant the silence ended, on the slave's
// clock.
func (s *rtuSlave) readFrame(c lineConn) ([]byte, time.Time, error) {
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, time.Time{}, err
	}
	n, err := c.Read(s.in[:])
	if n == 0 && err == nil {
		return nil, time.Time{}, io.ErrNoProgress
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	wireEnd := time.Now()
	if free := s.line.freeAt(); free.After(wireEnd) {
		wireEnd = free
	}
	wireEnd = wireEnd.Add(s.timing.wire(n))
	total := n
	for {
		if err := c.SetReadDeadline(wireEnd.Add(s.timing.gap)); err != nil {
			return nil, time.Time{}, err
		}
		var m int
		if n < len(s.in) {
			m, err = c.Read(s.in[n:])
			n += m
		} else {
			m, err = c.Read(s.noise[:]) // too long: counted, not kept
		}
		if m > 0 {
			total += m
			if now := time.Now(); now.After(wireEnd) {
				wireEnd = now
			}
			wireEnd = wireEnd.Add(s.timing.wire(m))
		}
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, time.Time{}, err
			}
			break
		}
	}
	s.stats.frames.Add(1)
	s.stats.bytesIn.Add(uint64(total))
	end := wireEnd.Add(s.timing.gap)
	if total > len(s.in) {
		return nil, end, nil
	}
	return s.in[:n], end, nil
}

// answer handles one frame that ended at end: ignored (noise, another
// unit, a broadcast), kept silent (a dead unit) or answered with the
// unit's fault applied. It returns false when the line must be closed (a
// drop on TCP, or Close).
func (s *rtuSlave) answer(c lineConn, frame []byte, end time.Time) bool {
	if !crcOK(frame) {
		s.stats.badFrames.Add(1)
		return true
	}
	unit := frame[0]
	d := s.h.ep.units[unit]
	if unit == 0 || d == nil {
		s.stats.ignored.Add(1)
		return true
	}
	// The line is this frame's until it is answered; a frame that came
	// in on another connection while it was busy goes out after it.
	s.line.mu.Lock()
	defer s.line.mu.Unlock()
	if e := s.line.free.Add(s.timing.wire(len(frame)) + s.timing.gap); e.After(end) {
		end = e
	}
	pdu := frame[1 : len(frame)-2]
	f := d.fault.Load()
	kind := FaultNone
	if f != nil {
		kind = f.Kind
	}
	out := append(s.out[:0], unit)
	switch kind {
	case FaultOffline:
		s.stats.silent.Add(1)
		return true
	case FaultDrop:
		s.stats.silent.Add(1)
		return !s.tcp
	case FaultException:
		out = appendCRC(append(out, pdu[0]|0x80, f.Code))
	case FaultGarbage:
		out = s.garbage(out[:0])
	default:
		s.req.Unit = unit
		out = appendCRC(modbus.ServePDU(&s.h, &s.req, pdu, out))
	}
	if kind == FaultBadCRC {
		i := 1 + s.rng.IntN(len(out)-1) // never the unit id: a CRC error, not another unit's answer
		out[i] ^= 1 << s.rng.IntN(8)
	}
	start := end
	if kind == FaultSlow {
		start = start.Add(f.Delay)
	}
	if kind == FaultCollision {
		// Another master's frame, right after the request.
		noise := s.garbage(s.noise[:0])
		if !s.send(c, noise, start) {
			return false
		}
		start = start.Add(s.timing.wire(len(noise)) + s.timing.gap)
	}
	if !s.send(c, out, start) {
		return false
	}
	s.stats.answered.Add(1)
	return true
}

// garbage appends 3..30 random bytes that are no valid frame.
func (s *rtuSlave) garbage(b []byte) []byte {
	n := 3 + s.rng.IntN(28)
	for range n {
		b = append(b, byte(s.rng.Uint32()))
	}
	if crcOK(b) {
		b[len(b)-1] ^= 0x55
	}
	return b
}

// send puts b on the line from start on: it is written whole at start +
// its wire time, when its last byte would arrive.
func (s *rtuSlave) send(c lineConn, b []byte, start time.Time) bool {
	at := start.Add(s.timing.wire(len(b)))
	if !s.waitUntil(at) {
		return false
	}
	late := time.Since(at)
	if _, err := c.Write(b); err != nil {
		s.log.Debug("write failed", "err", err)
		return false
	}
	if late > 0 {
		s.stats.late.Add(int64(late))
	}
	s.line.free = at
	s.stats.bytesOut.Add(uint64(len(b)))
	return true
}

// waitUntil waits for the instant t, or until the line is closed (false).
func (s *rtuSlave) waitUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-s.done:
			return false
		default:
			return true
		}
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-s.timer.C:
		return true
	case <-s.done:
		s.timer.Stop()
		return false
	}
}
