package modbus

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// rtuOverTCP returns an RTU-over-TCP endpoint on a new bus with the live
// units.
func rtuOverTCP(t *testing.T, cfg EndpointConfig, live ...byte) (*rtuBus, *Endpoint) {
	t.Helper()
	bus := newRTUBus(t, live...)
	cfg.Address, cfg.Transport = bus.listen(t), TransportRTUOverTCP
	return bus, newTestPool(t).Endpoint(cfg)
}

// TestRTUOverTCPFunctions runs every function of the Client over RTU frames.
func TestRTUOverTCPFunctions(t *testing.T) {
	_, ep := rtuOverTCP(t, EndpointConfig{}, 1, 2)
	ctx := t.Context()
	c := ep.Unit(2, 0)
	tests := []struct {
		name string
		do   func() (any, error)
		want any
	}{
		{"read holding registers", func() (any, error) { return c.ReadHoldingRegisters(ctx, 40000, 125, nil) }, seqRegs(40000, 125, 2)},
		{"read input registers", func() (any, error) { return c.ReadInputRegisters(ctx, 30000, 3, nil) }, seqRegs(30000, 3, 2)},
		{"read coils", func() (any, error) { return c.ReadCoils(ctx, 0, 10, nil) },
			[]bool{true, false, false, true, false, false, true, false, false, true}},
		{"read discrete inputs", func() (any, error) { return c.ReadDiscreteInputs(ctx, 1, 3, nil) }, []bool{false, false, true}},
		{"write registers then read", func() (any, error) {
			if err := c.WriteRegisters(ctx, 100, []uint16{7, 8}); err != nil {
				return nil, err
			}
			return c.ReadHoldingRegisters(ctx, 99, 4, nil)
		}, []uint16{regValue(2, 99), 7, 8, regValue(2, 102)}},
		{"write coil then read", func() (any, error) {
			if err := c.WriteCoil(ctx, 1, true); err != nil {
				return nil, err
			}
			return c.ReadCoils(ctx, 0, 3, nil)
		}, []bool{true, true, false}},
		{"write coils then read", func() (any, error) {
			if err := c.WriteCoils(ctx, 8, []bool{true, true, false, true, true, true, true, true, true}); err != nil {
				return nil, err
			}
			return c.ReadCoils(ctx, 8, 9, nil)
		}, []bool{true, true, false, true, true, true, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.do()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	st := ep.Stats()
	if st.Connects != 1 || st.Failures != 0 || st.Transport != TransportRTUOverTCP {
		t.Errorf("stats %+v: want one connection, no failures", st)
	}
	// Read of 125 registers: 8 bytes out, 5+250 back.
	if st.BytesWritten == 0 || st.BytesRead < 255 || st.Busy <= 0 {
		t.Errorf("stats %+v: want the bytes and busy time counted", st)
	}
}

// TestRTUOverTCPFaults checks a bad CRC, an exception and a dead unit over
// RTU frames, and that the next request is answered.
func TestRTUOverTCPFaults(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*rtuBus)
		unit    byte
		wantIs  error
		wantEx  byte
		connect uint64 // connects after the next good request
		stats   func(EndpointStats) bool
	}{
		{name: "bad crc", setup: func(b *rtuBus) { b.corrupt(1, 1) }, unit: 1, wantIs: ErrCRC, connect: 2,
			stats: func(s EndpointStats) bool { return s.CRCErrors == 1 && s.Malformed == 1 && s.Failures == 1 }},
		{name: "exception", setup: func(b *rtuBus) { b.setException(10, ExceptionIllegalDataAddress) }, unit: 1,
			wantEx: ExceptionIllegalDataAddress, connect: 1,
			stats: func(s EndpointStats) bool { return s.Exceptions == 1 && s.Failures == 0 }},
		{name: "dead unit", unit: 9, wantIs: ErrTimeout, connect: 2,
			stats: func(s EndpointStats) bool { return s.Timeouts == 1 && s.Failures == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus, ep := rtuOverTCP(t, EndpointConfig{Timeout: 200 * time.Millisecond}, 1)
			if tt.setup != nil {
				tt.setup(bus)
			}
			_, err := ep.Unit(tt.unit, 0).ReadHoldingRegisters(t.Context(), 10, 2, nil)
			var ex *ExceptionError
			switch {
			case tt.wantEx != 0:
				if !errors.As(err, &ex) || ex.Code != tt.wantEx {
					t.Fatalf("err = %v, want exception %d", err, tt.wantEx)
				}
			case !errors.Is(err, tt.wantIs):
				t.Fatalf("err = %v, want %v", err, tt.wantIs)
			}
			got, err := ep.Unit(1, 0).ReadHoldingRegisters(t.Context(), 20, 2, nil)
			if err != nil || !slices.Equal(got, seqRegs(20, 2, 1)) {
				t.Fatalf("next request: %v, %v", got, err)
			}
			if st := ep.Stats(); !tt.stats(st) || st.Connects != tt.connect {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// openBus returns an endpoint on a new RTU bus with the live units.
type openBus func(t *testing.T, cfg EndpointConfig, live ...byte) (*rtuBus, *Endpoint)

// TestRTUBusDeadUnit checks that a dead unit on a bus costs the live units
// no more than its own timeout per request: each live request completes,
// and waits for its turn at most one dead request's timeout.
func TestRTUBusDeadUnit(t *testing.T) { testBusDeadUnit(t, rtuOverTCP) }

func testBusDeadUnit(t *testing.T, open openBus) {
	const deadTimeout, liveTimeout = 100 * time.Millisecond, time.Second
	_, ep := open(t, EndpointConfig{}, 1)
	ctx := t.Context()
	const rounds = 5
	var wg sync.WaitGroup
	deadErrs := make(chan error, rounds)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			_, err := ep.Unit(2, deadTimeout).ReadHoldingRegisters(ctx, 0, 1, nil)
			deadErrs <- err
		}
	}()
	live := ep.Unit(1, liveTimeout)
	for i := range rounds {
		start := time.Now()
		got, err := live.ReadHoldingRegisters(ctx, uint16(i), 4, nil)
		if err != nil || !slices.Equal(got, seqRegs(uint16(i), 4, 1)) {
			t.Fatalf("live read %d: %v, %v", i, got, err)
		}
		// Its turn came after at most one dead request; generous for -race.
		if d := time.Since(start); d > deadTimeout+liveTimeout {
			t.Errorf("live read %d took %v", i, d)
		}
	}
	wg.Wait()
	close(deadErrs)
	for err := range deadErrs {
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("dead unit: err = %v, want ErrTimeout", err)
		}
	}
	if st := ep.Stats(); st.Timeouts != rounds || st.Failures != rounds || st.Requests != 2*rounds {
		t.Errorf("stats %+v: want %d timeouts of %d requests", st, rounds, 2*rounds)
	}
}

// TestRTUBusOfEight polls a bus of 8 units from 8 goroutines: each gets
// its own answers, in turn, on one connection.
func TestRTUBusOfEight(t *testing.T) { testBusOfEight(t, rtuOverTCP) }

func testBusOfEight(t *testing.T, open openBus) {
	units := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	bus, ep := open(t, EndpointConfig{}, units...)
	const reads = 20
	var wg sync.WaitGroup
	errs := make(chan error, len(units))
	for _, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ep.Unit(u, 0)
			var buf []uint16
			for i := range reads {
				addr, qty := uint16(100*int(u)+i), uint16(1+(i*7+int(u))%125)
				var err error
				if buf, err = c.ReadHoldingRegisters(t.Context(), addr, qty, buf); err != nil {
					errs <- err
					return
				}
				if !slices.Equal(buf, seqRegs(addr, qty, u)) {
					errs <- fmt.Errorf("unit %d read %d+%d: got %v", u, addr, qty, buf)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, u := range units {
		if n := bus.requestCount(u); n != reads {
			t.Errorf("unit %d: bus saw %d requests, want %d", u, n, reads)
		}
	}
	if st := ep.Stats(); st.Requests != reads*uint64(len(units)) || st.Connects != 1 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
	// No two exchanges overlapped: each request came after the previous
	// answer.
	log := bus.log()
	for i := 1; i < len(log); i++ {
		if log[i].at.Before(log[i-1].answered) {
			t.Fatalf("request %d at %v came before answer %d at %v", i, log[i].at, i-1, log[i-1].answered)
		}
	}
}

// TestRTUOverTCPFrameGap checks that the configured gap is kept between
// an answer and the next request.
func TestRTUOverTCPFrameGap(t *testing.T) {
	const gap = 30 * time.Millisecond
	bus, ep := rtuOverTCP(t, EndpointConfig{FrameGap: gap}, 1)
	c := ep.Unit(1, 0)
	for range 4 {
		if _, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	log := bus.log()
	for i := 1; i < len(log); i++ {
		if d := log[i].at.Sub(log[i-1].answered); d < gap {
			t.Errorf("request %d came %v after answer %d, want ≥ %v", i, d, i-1, gap)
		}
	}
}

// TestPortableLoop runs the socket tests again on the portable loop
// (connLink), the one built where plantd's own loop is not (windows).
func TestPortableLoop(t *testing.T) {
	portableTCP = true
	defer func() { portableTCP = false }()
	for name, test := range map[string]func(*testing.T){
		"faults":              TestFaults,
		"answer in pieces":    TestAnswerInPieces,
		"exceptions":          TestExceptions,
		"rtu over tcp":        TestRTUOverTCPFunctions,
		"rtu over tcp faults": TestRTUOverTCPFaults,
		"rtu bus of eight":    TestRTUBusOfEight,
	} {
		t.Run(name, test)
	}
	_, ep := rtuOverTCP(t, EndpointConfig{}, 1)
	if _, err := ep.Unit(1, 0).ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := ep.link.(*connLink); !ok {
		t.Errorf("link %T, want the portable loop", ep.link)
	}
}
