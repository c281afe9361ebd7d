package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"plantd/modbus/serialline"
)

// SerialConfig is a serial line (an RS485 bus) the simulator serves as a
// Modbus RTU slave for some of its devices, each answering to its own
// Unit, on a character device: a USB adapter's /dev/ttyUSB0, or one end of
// a pty pair made by socat (tests).
type SerialConfig struct {
	// Path is the character device, opened by Start. Required, unique.
	Path string
	// Baud is the line's rate (default 9600): one of 1200, 2400, 4800,
	// 9600, 19200, 38400, 57600, 115200. Answers are paced at it, 11 bits
	// per byte (BitsPerChar).
	Baud int
	// Parity is "N" (default), "E" or "O"; StopBits 1 (default) or 2. Both
	// are set on a real serial device; a pty ignores them.
	Parity   string
	StopBits int
	// Devices are the ids of the devices on the line (at least one). They
	// have no TCP endpoint: Device.Addr is "", Device.Bus the Path. Their
	// units must differ; none may set Endpoint, Port or RTUOverTCP.
	Devices []string
}

// DefaultBaud is a serial line's default rate.
const DefaultBaud = 9600

// serialWithDefaults checks the serial lines against the devices (their
// defaults filled) and fills the lines' defaults.
func (c *Config) serialWithDefaults() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	for i, d := range c.Devices {
		field := fmt.Sprintf("devices[%d]", i)
		if d.Baud != 0 && !slices.Contains(serialline.StandardBauds, d.Baud) {
			return bad("%s.baud: %d is not a standard rate (%v)", field, d.Baud, serialline.StandardBauds)
		}
		if d.Baud != 0 && !d.RTUOverTCP {
			return bad("%s.baud: only an RTU over TCP endpoint has a serial line", field)
		}
		for j, o := range c.Devices[:i] {
			if o.endpointName() == d.endpointName() && (o.RTUOverTCP != d.RTUOverTCP || o.Baud != d.Baud) {
				return bad("%s: endpoint %q: rtuOverTCP and baud differ from devices[%d] (%s)", field, d.Endpoint, j, o.ID)
			}
		}
	}
	lines := slices.Clone(c.Serial)
	onLine := map[string]string{}
	for i := range lines {
		s := &lines[i]
		field := fmt.Sprintf("serial[%d]", i)
		if s.Path == "" {
			return bad("%s.path: missing", field)
		}
		for j := range i {
			if lines[j].Path == s.Path {
				return bad("%s.path %q: used twice", field, s.Path)
			}
		}
		if s.Baud == 0 {
			s.Baud = DefaultBaud
		}
		if !slices.Contains(serialline.StandardBauds, s.Baud) {
			return bad("%s.baud: %d is not a standard rate (%v)", field, s.Baud, serialline.StandardBauds)
		}
		switch s.Parity {
		case "":
			s.Parity = "N"
		case "N", "E", "O":
		default:
			return bad("%s.parity %q: want N, E or O", field, s.Parity)
		}
		switch s.StopBits {
		case 0:
			s.StopBits = 1
		case 1, 2:
		default:
			return bad("%s.stopBits %d: want 1 or 2", field, s.StopBits)
		}
		if len(s.Devices) == 0 {
			return bad("%s.devices: none", field)
		}
		units := map[byte]string{}
		for j, id := range s.Devices {
			df := fmt.Sprintf("%s.devices[%d]", field, j)
			k := slices.IndexFunc(c.Devices, func(d DeviceConfig) bool { return d.ID == id })
			if k < 0 {
				return bad("%s %q: no such device", df, id)
			}
			d := c.Devices[k]
			if other, ok := onLine[id]; ok {
				return bad("%s %q: already on serial line %q", df, id, other)
			}
			onLine[id] = s.Path
			if d.Endpoint != "" || d.Port != 0 || d.RTUOverTCP {
				return bad("%s %q: a device on a serial line has no endpoint, port or rtuOverTCP", df, id)
			}
			if other, ok := units[d.Unit]; ok {
				return bad("%s %q: unit %d already answers on the line (%s)", df, id, d.Unit, other)
			}
			units[d.Unit] = id
		}
		s.Devices = slices.Clone(s.Devices)
	}
	c.Serial = lines
	return nil
}

// serialBus is one serial line: an endpoint that never listens, only a
// unit table for handler, and the slave serving it on the device.
type serialBus struct {
	plant *Plant
	cfg   SerialConfig
	ep    *endpoint
	log   *slog.Logger
	done  chan struct{}
	stats busCounters

	mu     sync.Mutex
	f      *os.File
	closed bool
}

func newSerialBus(p *Plant, cfg SerialConfig) *serialBus {
	ep := newEndpoint(p, "serial:"+cfg.Path)
	return &serialBus{plant: p, cfg: cfg, ep: ep, log: p.log.With("serial", cfg.Path), done: make(chan struct{})}
}

// Reopening a lost line.
const (
	reopenMin = 50 * time.Millisecond
	reopenMax = 2 * time.Second
)

// start opens the device (an error names it) and serves it until close;
// a line lost later (a pty's other end gone, an adapter unplugged) is
// reopened with backoff until it comes back.
func (b *serialBus) start() error {
	f, err := openSerial(b.cfg)
	if err != nil {
		return fmt.Errorf("sim: serial line %s: %w", b.cfg.Path, err)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = f.Close()
		return ErrClosed
	}
	b.f = f
	b.plant.wg.Add(1)
	b.mu.Unlock()
	go b.run(f)
	return nil
}

func (b *serialBus) run(f *os.File) {
	defer b.plant.wg.Done()
	s := newRTUSlave(b.ep, timingFor(b.cfg.Baud), &lineClock{}, &b.stats, b.done, false, uint64(len(b.cfg.Path)))
	s.log = b.log
	backoff := reopenMin
	for {
		err := s.serve(f)
		_ = f.Close()
		if b.isClosed() {
			return
		}
		b.log.Warn("serial line lost, reopening", "err", err)
		for {
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-b.done:
				t.Stop()
				return
			}
			backoff = min(2*backoff, reopenMax)
			var oerr error
			if f, oerr = openSerial(b.cfg); oerr == nil {
				break
			}
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			_ = f.Close()
			return
		}
		b.f = f
		b.mu.Unlock()
		backoff = reopenMin
		b.log.Info("serial line reopened")
	}
}

func (b *serialBus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// close stops the slave: closing the device ends its read.
func (b *serialBus) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
	if b.f != nil {
		_ = b.f.Close()
	}
}

// newSerialBuses makes the configured lines and maps each device id on
// one to its line.
func (p *Plant) newSerialBuses() map[string]*serialBus {
	on := map[string]*serialBus{}
	for _, sc := range p.cfg.Serial {
		b := newSerialBus(p, sc)
		p.buses = append(p.buses, b)
		for _, id := range sc.Devices {
			on[id] = b
		}
	}
	return on
}

// startSerial opens every serial line; on an error it closes those it
// opened.
func (p *Plant) startSerial() error {
	for i, b := range p.buses {
		if err := b.start(); err != nil {
			for _, o := range p.buses[:i] {
				o.close()
			}
			return err
		}
	}
	return nil
}

// closeSerial stops every serial line.
func (p *Plant) closeSerial() {
	for _, b := range p.buses {
		b.close()
	}
}

// SerialStats returns what the slave of the serial line at path saw since
// Start; false when there is no such line.
func (p *Plant) SerialStats(path string) (BusStats, bool) {
	for _, b := range p.buses {
		if b.cfg.Path == path {
			return b.stats.snapshot(), true
		}
	}
	return BusStats{}, false
}

// Bus returns the path of the serial line the device answers on, "" when
// it has a TCP endpoint.
func (d *Device) Bus() string {
	if b := d.bus(); b != nil {
		return b.cfg.Path
	}
	return ""
}

func (d *Device) bus() *serialBus {
	for _, b := range d.plant.buses {
		if b.ep == d.ep {
			return b
		}
	}
	return nil
}

// Transport is how the device is served, in the words of the modbus
// package's endpoint transports: "tcp", "rtu-over-tcp" or "rtu".
func (d *Device) Transport() string {
	switch {
	case d.bus() != nil:
		return "rtu"
	case d.ep.rtu != nil:
		return "rtu-over-tcp"
	}
	return "tcp"
}

// errNotTTY says a serial line's path is no terminal device.
var errNotTTY = errors.New("not a terminal (serial) device")
