package sim

import (
	"fmt"
	"slices"
	"time"

	"plantd/plant/kind"
)

// MaxUnitsPerGateway is the most devices ScaleConfig puts behind one
// gateway address (unit ids 1..247).
const MaxUnitsPerGateway = 247

// ScaleConfig is a plant of n simulated devices for scale tests: a grid
// meter "meter" and n-1 classic string inverters "inv0002", "inv0003", ...
// With gateways > 0 the devices answer as unit ids 1, 2, ... behind that
// many gateway endpoints ("gw1", "gw2", ..., filled in turn, at most 247
// units each); with gateways 0 each device has an address of its own, as
// unit 1. The plant advances in steps of one simulated second (see
// Config.Resolution), so thousands of reads a second cost one step of the
// physics, not one each.
func ScaleConfig(n, gateways int) (Config, error) {
	if n < 1 {
		return Config{}, fmt.Errorf("%w: %d devices: want at least 1", ErrConfig, n)
	}
	if gateways < 0 || gateways > n {
		return Config{}, fmt.Errorf("%w: %d gateways for %d devices: want 0..%d", ErrConfig, gateways, n, n)
	}
	if gateways > 0 && (n+gateways-1)/gateways > MaxUnitsPerGateway {
		return Config{}, fmt.Errorf("%w: %d devices behind %d gateways: more than %d units each", ErrConfig, n, gateways, MaxUnitsPerGateway)
	}
	cfg := DefaultConfig()
	cfg.Resolution = time.Second
	cfg.Devices = slices.Grow(cfg.Devices[:0], n)
	width := len(fmt.Sprint(n))
	for i := range n {
		dc := DeviceConfig{ID: fmt.Sprintf("inv%0*d", max(width, 4), i+1), Kind: kind.Inverter, Unit: 1}
		if i == 0 {
			dc.ID, dc.Kind = "meter", kind.Meter
		}
		if gateways > 0 {
			dc.Endpoint = fmt.Sprintf("gw%d", i%gateways+1)
			dc.Unit = byte(i/gateways + 1)
		}
		cfg.Devices = append(cfg.Devices, dc)
	}
	return cfg, nil
}

// ReadStats is what the devices were asked since the previous
// TakeReadStats (Config.CountReads).
type ReadStats struct {
	Reads uint64 // read requests answered
	// Polls counts the polls the reads came in: a client reads a device's
	// map in ascending order within a poll, so a read at or below the
	// address of that device's previous read starts a poll.
	Polls uint64
	// Gaps are the times between the starts of consecutive polls of a
	// device, of every device; the spread around the poll interval is the
	// client's poll jitter as the devices see it.
	Gaps []time.Duration
}

// countReadLocked notes a read of d at addr at wall time now.
func (p *Plant) countReadLocked(d *Device, addr uint16, now time.Time) {
	p.reads.Reads++
	first := d.lastRead.IsZero() || addr <= d.lastReadAddr
	d.lastReadAddr = addr
	if first {
		p.reads.Polls++
		if !d.pollStart.IsZero() {
			p.reads.Gaps = append(p.reads.Gaps, now.Sub(d.pollStart))
		}
		d.pollStart = now
	}
	d.lastRead = now
}

// TakeReadStats returns the read statistics gathered since the previous
// call and starts anew; zero unless Config.CountReads is set.
func (p *Plant) TakeReadStats() ReadStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.reads
	p.reads = ReadStats{Gaps: make([]time.Duration, 0, len(s.Gaps))}
	return s
}
