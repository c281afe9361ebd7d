package consumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Guards keeps each consumer's guard state across restarts
// (store.Store's consumer_guard: one row per consumer).
type Guards interface {
	ConsumerGuard(ctx context.Context, id string) ([]byte, bool, error)
	SetConsumerGuard(ctx context.Context, id string, state []byte) error
}

// kept is what a consumer's guards need after a restart: the output
// plantd last commanded and when it switched, the switchings of the last
// hour, the "by" rules' on-time in their periods, the energy counter at
// the start of the day and the estimated counter.
type kept struct {
	has      bool   // plantd had decided an output
	out      Output // that output
	last     time.Time
	switches []time.Time // of the last hour, oldest first
	byRan    []time.Duration
	byEnd    []time.Time
	dayOK    bool
	day      string // plant-local date of dayWh
	dayWh    float64
	estWh    float64
}

// keptVersion is the first byte of the encoding; another is ignored.
const keptVersion = 1

// encode packs k, little endian: version, flags (1 has, 2 on, 4 dayOK),
// the SG-Ready state, the last switch (Unix ms, 0 none), the number of
// switchings and each (Unix ms), the number of "by" rules and each's
// on-time (ms) and period end (Unix ms), the day (yyyymmdd), the day's
// start counter and the estimated counter (float64 Wh): 33 bytes, 8 more
// a switching, 16 more a "by" rule.
func (k *kept) encode() []byte {
	switches, byRan := k.switches, k.byRan
	if len(switches) > math.MaxUint8 {
		switches = switches[len(switches)-math.MaxUint8:] // the newest: the bound of a guard above 255 an hour holds
	}
	if len(byRan) > math.MaxUint8 {
		byRan = nil // not restored: the rules run more, never less
	}
	b := make([]byte, 0, 33+8*len(switches)+16*len(byRan))
	var flags byte
	if k.has {
		flags |= 1
	}
	if k.out.On {
		flags |= 2
	}
	if k.dayOK {
		flags |= 4
	}
	b = append(b, keptVersion, flags, byte(k.out.SGReady))
	b = binary.LittleEndian.AppendUint64(b, uint64(unixMs(k.last)))
	b = append(b, byte(len(switches)))
	for _, t := range switches {
		b = binary.LittleEndian.AppendUint64(b, uint64(unixMs(t)))
	}
	b = append(b, byte(len(byRan)))
	for i := range byRan {
		b = binary.LittleEndian.AppendUint64(b, uint64(k.byRan[i].Milliseconds()))
		b = binary.LittleEndian.AppendUint64(b, uint64(unixMs(k.byEnd[i])))
	}
	var day uint32
	if t, err := time.Parse(time.DateOnly, k.day); err == nil {
		day = uint32(t.Year()*10000 + int(t.Month())*100 + t.Day())
	}
	b = binary.LittleEndian.AppendUint32(b, day)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(k.dayWh))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(k.estWh))
}

var errKept = errors.New("consumer: kept guard state damaged")

// decode unpacks what encode packed.
func (k *kept) decode(b []byte) error {
	r := reader{b: b}
	if v := r.byte(); v != keptVersion {
		return fmt.Errorf("%w: version %d", errKept, v)
	}
	flags := r.byte()
	k.has, k.out.On, k.dayOK = flags&1 != 0, flags&2 != 0, flags&4 != 0
	k.out.SGReady = int(r.byte())
	k.last = fromMs(int64(r.u64()))
	k.switches = make([]time.Time, r.byte())
	for i := range k.switches {
		k.switches[i] = fromMs(int64(r.u64()))
	}
	n := int(r.byte())
	k.byRan, k.byEnd = make([]time.Duration, n), make([]time.Time, n)
	for i := range n {
		k.byRan[i] = time.Duration(r.u64()) * time.Millisecond
		k.byEnd[i] = fromMs(int64(r.u64()))
	}
	if d := r.u32(); d != 0 {
		k.day = fmt.Sprintf("%04d-%02d-%02d", d/10000, d/100%100, d%100)
	}
	k.dayWh = math.Float64frombits(r.u64())
	k.estWh = math.Float64frombits(r.u64())
	if r.short || len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes", errKept, len(b))
	}
	return nil
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// reader takes fixed-size fields off b; short records that b ran out.
type reader struct {
	b     []byte
	short bool
}

func (r *reader) take(n int) []byte {
	if len(r.b) < n {
		r.short, r.b = true, nil
		return make([]byte, n)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) byte() byte  { return r.take(1)[0] }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }
