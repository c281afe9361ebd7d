package sim

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// rtuFront serves an endpoint's public port as RTU over TCP, as a serial
// to Ethernet converter in transparent mode does: RTU frames (unit, PDU,
// CRC) in the TCP stream, no MBAP header, answered by an rtuSlave per
// connection. With a baud
// (DeviceConfig.Baud) the answers are paced as on the converter's serial
// line; without, frames end at a silence of 1.75 ms and answers go out at
// once.
type rtuFront struct {
	ep     *endpoint
	timing lineTiming
	line   lineClock // the converter's one serial line
	stats  busCounters

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	seq    uint64
	closed bool
}

func newRTUFront(ep *endpoint, baud int) *rtuFront {
	return &rtuFront{ep: ep, timing: timingFor(baud), conns: map[net.Conn]struct{}{}}
}

// startRTU binds the endpoint's public port and serves RTU over TCP on it.
func (ep *endpoint) startRTU(host string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(ep.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	ep.ln, ep.addr = ln, ln.Addr().String()
	ep.plant.wg.Add(1)
	ep.mu.Unlock()
	go ep.rtu.acceptLoop(ln)
	return nil
}

func (r *rtuFront) acceptLoop(ln net.Listener) { r.ep.accept(ln, r.serve) }

// serve starts a slave on a new connection. A converter stays reachable
// when its units are dead: FaultOffline makes a unit silent, it does not
// refuse connections.
func (r *rtuFront) serve(c net.Conn) {
	ep := r.ep
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = c.Close()
		return
	}
	if ep.oneClient() {
		for old := range r.conns {
			_ = old.Close()
		}
	}
	r.conns[c] = struct{}{}
	r.seq++
	s := newRTUSlave(ep, r.timing, &r.line, &r.stats, ep.done, true, r.seq)
	ep.plant.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer ep.plant.wg.Done()
		_ = s.serve(c)
		_ = c.Close()
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
	}()
}

// closeConns closes every connection, their slaves then end, and refuses
// new ones.
func (r *rtuFront) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
}

// RTUStats returns what the slaves of the device's RTU over TCP endpoint
// saw since Start, all connections together; false for another transport.
func (d *Device) RTUStats() (BusStats, bool) {
	if b := d.bus(); b != nil {
		return b.stats.snapshot(), true
	}
	if d.ep.rtu != nil {
		return d.ep.rtu.stats.snapshot(), true
	}
	return BusStats{}, false
}
