package modbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	smodbus "github.com/simonvetter/modbus"

	"plantd/internal/proctest"
)

// testWriter sends log lines to t.Log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p))
	return len(p), nil
}

// newTestPool returns a pool that logs to the test and is closed at its end.
func newTestPool(tb testing.TB) *Pool {
	tb.Helper()
	p := NewPool(slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("pool close: %v", err)
		}
	})
	return p
}

func seqRegs(addr, n uint16, unit byte) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = regValue(unit, addr+uint16(i))
	}
	return out
}

func TestReadWrite(t *testing.T) {
	srv := startRegServer(t)
	pool := newTestPool(t)
	c := pool.Endpoint(EndpointConfig{Address: srv.addr}).Unit(3, 0)
	ctx := t.Context()

	tests := []struct {
		name  string
		write map[uint16][]uint16 // writes before the read
		addr  uint16
		qty   uint16
		want  []uint16
	}{
		{name: "one register", addr: 40000, qty: 1, want: seqRegs(40000, 1, 3)},
		{name: "125 registers", addr: 40000, qty: 125, want: seqRegs(40000, 125, 3)},
		{name: "last register", addr: 65535, qty: 1, want: seqRegs(65535, 1, 3)},
		{name: "write one then read", write: map[uint16][]uint16{100: {0xBEEF}}, addr: 99, qty: 3,
			want: []uint16{regValue(3, 99), 0xBEEF, regValue(3, 101)}},
		{name: "write 32-bit then read", write: map[uint16][]uint16{200: {0x1234, 0x5678}}, addr: 200, qty: 2,
			want: []uint16{0x1234, 0x5678}},
		{name: "write 123 then read", write: map[uint16][]uint16{1000: seqRegs(1, 123, 9)}, addr: 1000, qty: 123,
			want: seqRegs(1, 123, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for addr, vals := range tt.write {
				if err := c.WriteRegisters(ctx, addr, vals); err != nil {
					t.Fatalf("WriteRegisters: %v", err)
				}
			}
			got, err := c.ReadHoldingRegisters(ctx, tt.addr, tt.qty, nil)
			if err != nil {
				t.Fatalf("ReadHoldingRegisters: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("dst reused", func(t *testing.T) {
		buf := make([]uint16, 3, 10)
		got, err := c.ReadHoldingRegisters(ctx, 10, 5, buf)
		if err != nil {
			t.Fatal(err)
		}
		if &got[0] != &buf[0] || !slices.Equal(got, seqRegs(10, 5, 3)) {
			t.Errorf("result %v does not reuse dst", got)
		}
	})
	if st := pool.Endpoint(EndpointConfig{Address: srv.addr}).Stats(); st.Connects != 1 || st.Failures != 0 {
		t.Errorf("stats %+v: want one connect, no failures", st)
	}
}

func TestWriteUsesFunction16(t *testing.T) {
	srv := startFaultServer(t)
	c := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()}).Unit(1, 0)
	if err := c.WriteRegisters(t.Context(), 40100, []uint16{7}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].fc != 16 || reqs[0].addr != 40100 || reqs[0].qty != 1 {
		t.Errorf("server saw %+v, want one function 16 request for 40100+1", reqs)
	}
}

func TestInvalidRequests(t *testing.T) {
	srv := startFaultServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	ctx := t.Context()
	tests := []struct {
		name string
		do   func() error
	}{
		{"read 0", func() error { _, err := c.ReadHoldingRegisters(ctx, 0, 0, nil); return err }},
		{"read 126", func() error { _, err := c.ReadHoldingRegisters(ctx, 0, 126, nil); return err }},
		{"read past 65535", func() error { _, err := c.ReadHoldingRegisters(ctx, 65535, 2, nil); return err }},
		{"write 0", func() error { return c.WriteRegisters(ctx, 0, nil) }},
		{"write 124", func() error { return c.WriteRegisters(ctx, 0, make([]uint16, 124)) }},
		{"write past 65535", func() error { return c.WriteRegisters(ctx, 65535, []uint16{1, 2}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !errors.Is(err, ErrInvalid) || Classify(err) != ClassInvalid || IsRetryable(err) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if st := ep.Stats(); st.Requests != 0 || st.Connects != 0 || srv.accepts.Load() != 0 {
		t.Errorf("invalid requests did I/O: %+v", st)
	}
}

func TestExceptions(t *testing.T) {
	srv := startRegServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr})
	c := ep.Unit(1, 0)
	tests := []struct {
		err   error
		code  byte
		class Class
		retry bool
	}{
		{smodbus.ErrIllegalFunction, ExceptionIllegalFunction, ClassUnsupported, false},
		{smodbus.ErrIllegalDataAddress, ExceptionIllegalDataAddress, ClassUnsupported, false},
		{smodbus.ErrIllegalDataValue, ExceptionIllegalDataValue, ClassRejected, false},
		{smodbus.ErrServerDeviceFailure, ExceptionServerDeviceFailure, ClassDeviceFailure, true},
		{smodbus.ErrAcknowledge, ExceptionAcknowledge, ClassBusy, true},
		{smodbus.ErrServerDeviceBusy, ExceptionServerDeviceBusy, ClassBusy, true},
		{smodbus.ErrMemoryParityError, ExceptionMemoryParityError, ClassDeviceFailure, true},
		{smodbus.ErrGWPathUnavailable, ExceptionGatewayPathUnavailable, ClassGateway, true},
		{smodbus.ErrGWTargetFailedToRespond, ExceptionGatewayTargetDeviceFailedToRespond, ClassGateway, true},
	}
	for i, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			addr := uint16(500 + i)
			srv.setException(addr, tt.err)
			for _, op := range []string{OpRead, OpWrite} {
				var err error
				if op == OpRead {
					_, err = c.ReadHoldingRegisters(t.Context(), addr, 2, nil)
				} else {
					err = c.WriteRegisters(t.Context(), addr, []uint16{1})
				}
				var ex *ExceptionError
				if !errors.As(err, &ex) || ex.Code != tt.code {
					t.Fatalf("%s: err = %v, want exception %d", op, err, tt.code)
				}
				var mbErr *Error
				if !errors.As(err, &mbErr) || mbErr.Op != op || mbErr.Addr != addr || mbErr.Unit != 1 {
					t.Errorf("%s: err = %#v, want *Error naming the request", op, err)
				}
				if got := Classify(err); got != tt.class {
					t.Errorf("%s: Classify = %v, want %v", op, got, tt.class)
				}
				if got := IsRetryable(err); got != tt.retry {
					t.Errorf("%s: IsRetryable = %v, want %v", op, got, tt.retry)
				}
			}
		})
	}
	st := ep.Stats()
	if st.Connects != 1 || !st.Connected || st.Exceptions != uint64(2*len(tests)) {
		t.Errorf("stats %+v: exceptions must keep the connection", st)
	}
}

// TestFaults checks that every answer that is not a valid answer or an
// exception gives the right error, closes the socket, and that the next
// request gets a fresh, correct answer on a new connection.
func TestFaults(t *testing.T) {
	tests := []struct {
		name      string
		fault     fault
		write     bool
		wantIs    error
		wantReset bool // EOF or connection reset instead of a sentinel
	}{
		{name: "wrong transaction id", fault: fault{kind: faultWrongTxID}, wantIs: ErrMismatch},
		{name: "wrong unit id", fault: fault{kind: faultWrongUnit}, wantIs: ErrMismatch},
		{name: "wrong function code", fault: fault{kind: faultWrongFunc}, wantIs: ErrMismatch},
		{name: "write echoes other address", fault: fault{kind: faultWriteEcho}, write: true, wantIs: ErrMismatch},
		{name: "wrong protocol id", fault: fault{kind: faultWrongProtocol}, wantIs: ErrMalformed},
		{name: "zero length", fault: fault{kind: faultZeroLength}, wantIs: ErrMalformed},
		{name: "length over 260", fault: fault{kind: faultHugeLength}, wantIs: ErrMalformed},
		{name: "length without pdu", fault: fault{kind: faultLengthOne}, wantIs: ErrMalformed},
		{name: "byte count differs from data", fault: fault{kind: faultBadByteCount}, wantIs: ErrMalformed},
		{name: "fewer registers than asked", fault: fault{kind: faultShortCount}, wantIs: ErrMalformed},
		{name: "truncated frame then close", fault: fault{kind: faultTruncate}, wantIs: ErrMalformed},
		{name: "bytes after the answer", fault: fault{kind: faultTrailing}, wantIs: ErrMalformed},
		{name: "late answer", fault: fault{kind: faultDelay, delay: time.Second}, wantIs: ErrTimeout},
		{name: "late write answer", fault: fault{kind: faultDelay, delay: time.Second}, write: true, wantIs: ErrTimeout},
		{name: "no answer", fault: fault{kind: faultSilent}, wantIs: ErrTimeout},
		{name: "server closes", fault: fault{kind: faultClose}, wantReset: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFaultServer(t, tt.fault)
			ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
			c := ep.Unit(1, 150*time.Millisecond)
			ctx := t.Context()

			start := time.Now()
			var err error
			if tt.write {
				err = c.WriteRegisters(ctx, 10, []uint16{1, 2})
			} else {
				_, err = c.ReadHoldingRegisters(ctx, 10, 4, nil)
			}
			elapsed := time.Since(start)
			switch {
			case tt.wantReset:
				if !isConnReset(err) {
					t.Fatalf("err = %v, want EOF or reset", err)
				}
			case !errors.Is(err, tt.wantIs):
				t.Fatalf("err = %v, want %v", err, tt.wantIs)
			}
			if Classify(err) != ClassLink || !IsRetryable(err) {
				t.Errorf("Classify(%v) = %v, want link and retryable", err, Classify(err))
			}
			// The only other timeout is the endpoint's default: the unit's
			// 150 ms ended the request if it ended before that one could.
			if tt.wantIs == ErrTimeout && elapsed >= DefaultTimeout {
				t.Errorf("timed out after %v: the endpoint's default %v, not the unit's 150ms", elapsed, DefaultTimeout)
			}
			if st := ep.Stats(); st.Connected || st.Failures != 1 {
				t.Errorf("stats %+v: want the socket closed after the failure", st)
			}

			// The next request reconnects at once (first failure) and gets
			// the answer to itself: sequence number 2, not the late answer 1.
			got, err := c.ReadHoldingRegisters(ctx, 20, 3, nil)
			if err != nil {
				t.Fatalf("request after failure: %v", err)
			}
			if want := []uint16{2, 21, 22}; !slices.Equal(got, want) {
				t.Errorf("request after failure got %v, want %v", got, want)
			}
			if n := srv.accepts.Load(); n != 2 {
				t.Errorf("server accepted %d connections, want 2", n)
			}
			if st := ep.Stats(); st.Connects != 2 || st.Failures != 1 || st.Requests != 2 {
				t.Errorf("stats %+v: want 2 connects, 2 requests, 1 failure", st)
			}
		})
	}
}

// TestAnswerInPieces checks that an answer whose bytes come one at a time
// (slow serial gateways forward what they have) is assembled, and that the
// next answers on the connection stay in step.
func TestAnswerInPieces(t *testing.T) {
	srv := startFaultServer(t, fault{kind: faultDribble}, fault{kind: faultDribble})
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	for i, want := range [][]uint16{{1, 11, 12}, {2, 11, 12}, {3, 11, 12}} {
		got, err := c.ReadHoldingRegisters(t.Context(), 10, 3, nil)
		if err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("read %d got %v, want %v", i+1, got, want)
		}
	}
	if st := ep.Stats(); st.Connects != 1 || st.Failures != 0 || st.Requests != 3 {
		t.Errorf("stats %+v: want 3 answers on one connection", st)
	}
}

func TestExceptionKeepsConnection(t *testing.T) {
	srv := startFaultServer(t, fault{kind: faultException, code: ExceptionServerDeviceBusy})
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	_, err := c.ReadHoldingRegisters(t.Context(), 10, 2, nil)
	var ex *ExceptionError
	if !errors.As(err, &ex) || ex.Code != ExceptionServerDeviceBusy || ex.Function != 3 {
		t.Fatalf("err = %v, want exception 6 on function 3", err)
	}
	if _, err := c.ReadHoldingRegisters(t.Context(), 10, 2, nil); err != nil {
		t.Fatal(err)
	}
	if n := srv.accepts.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

func TestContextDeadlineShortensTimeout(t *testing.T) {
	srv := startFaultServer(t, fault{kind: faultSilent})
	c := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()}).Unit(1, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ReadHoldingRegisters(ctx, 0, 1, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	// Ended before the unit's 10 s could end it: by the context's 150 ms.
	if d := time.Since(start); d >= 10*time.Second {
		t.Errorf("took %v, the unit's timeout; the context allowed 150ms", d)
	}
}

func TestContextDoneBeforeRequest(t *testing.T) {
	srv := startFaultServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.ReadHoldingRegisters(ctx, 0, 1, nil)
	if !errors.Is(err, context.Canceled) || Classify(err) != ClassCanceled || IsRetryable(err) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if err := c.WriteRegisters(ctx, 0, []uint16{1}); !errors.Is(err, context.Canceled) {
		t.Errorf("write err = %v, want context.Canceled", err)
	}
	if st := ep.Stats(); st.Requests != 0 || st.Connects != 0 || srv.accepts.Load() != 0 {
		t.Errorf("a done context did I/O: %+v", st)
	}
}

func TestContextEndsWhileWaitingForTurn(t *testing.T) {
	srv := startFaultServer(t, fault{kind: faultDelay, delay: 5 * time.Second})
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	ctx := t.Context()

	// A request that holds the endpoint until the server answers late.
	first := make(chan error, 1)
	go func() {
		_, err := ep.Unit(1, 10*time.Second).ReadHoldingRegisters(ctx, 0, 1, nil)
		first <- err
	}()
	proctest.WaitFor(t, "the first request to reach the server", 5*time.Second, func() bool { return len(srv.requests()) == 1 })

	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 50*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			_, err := ep.Unit(2, 0).ReadHoldingRegisters(ctx, 0, 1, nil)
			if !errors.Is(err, tt.want) || Classify(err) != ClassCanceled {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// Both returned while the first request still held the endpoint: they
	// did not wait for their turn.
	select {
	case err := <-first:
		t.Fatalf("first request ended early: %v", err)
	default:
	}
	if len(srv.requests()) != 1 {
		t.Errorf("a waiting request reached the server")
	}
	// Close while the first request is in flight: it ends (the server drops
	// its socket at close) and the pool close waits for it.
	srv.close()
	if err := <-first; err == nil {
		t.Errorf("first request: want an error after the server closed")
	}
}

func TestSharedConnection(t *testing.T) {
	srv := startRegServer(t)
	pool := newTestPool(t)
	ep1 := pool.Endpoint(EndpointConfig{Address: srv.addr})
	ep2 := pool.Endpoint(EndpointConfig{Address: srv.addr})
	if ep1 != ep2 {
		t.Fatal("Endpoint returned two endpoints for one address")
	}
	ctx := t.Context()
	for _, unit := range []byte{1, 2, 126, 240} {
		c := ep2.Unit(unit, 0)
		if c.UnitID() != unit || c.Address() != srv.addr {
			t.Errorf("client %s unit %d", c.Address(), c.UnitID())
		}
		got, err := c.ReadHoldingRegisters(ctx, 40000, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := seqRegs(40000, 2, unit); !slices.Equal(got, want) {
			t.Errorf("unit %d: got %v, want %v", unit, got, want)
		}
	}
	if n := srv.clientCount(); n != 1 {
		t.Errorf("server saw %d connections, want 1", n)
	}
	if srv.unitCount(1) != 1 || srv.unitCount(240) != 1 {
		t.Errorf("server did not see each unit once")
	}

	// The same on the raw fault server, which counts accepts.
	fs := startFaultServer(t)
	ep := pool.Endpoint(EndpointConfig{Address: fs.addr()})
	for _, unit := range []byte{1, 2} {
		if _, err := ep.Unit(unit, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.accepts.Load(); n != 1 {
		t.Errorf("fault server accepted %d connections, want 1", n)
	}
	reqs := fs.requests()
	if len(reqs) != 2 || reqs[0].unit != 1 || reqs[1].unit != 2 || reqs[0].conn != reqs[1].conn {
		t.Errorf("requests %+v: want units 1 and 2 on one connection", reqs)
	}
}

func TestConcurrentUnits(t *testing.T) {
	srv := startRegServer(t)
	pool := newTestPool(t)
	const workers, reads = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unit := byte(w + 1)
			c := pool.Endpoint(EndpointConfig{Address: srv.addr}).Unit(unit, 0)
			var buf []uint16
			for i := range reads {
				addr := uint16(100*w + i)
				qty := uint16(1 + (i+w)%125)
				var err error
				buf, err = c.ReadHoldingRegisters(t.Context(), addr, qty, buf)
				if err != nil {
					errs <- err
					return
				}
				if want := seqRegs(addr, qty, unit); !slices.Equal(buf, want) {
					errs <- fmt.Errorf("unit %d read %d+%d: got %v, want %v", unit, addr, qty, buf, want)
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
	st := pool.Endpoint(EndpointConfig{Address: srv.addr}).Stats()
	if st.Requests != workers*reads || st.Connects != 1 || st.Failures != 0 {
		t.Errorf("stats %+v: want %d requests on one connection", st, workers*reads)
	}
	if n := srv.clientCount(); n != 1 {
		t.Errorf("server saw %d connections, want 1", n)
	}
}

// TestFailuresRetryAtOnce checks that the endpoint keeps no retry policy
// of its own (the poller owns a failing device's retry): after failed
// requests or connects, the next request tries again at once, and one
// unit's failures never refuse another unit's requests.
func TestFailuresRetryAtOnce(t *testing.T) {
	ctx := t.Context()
	t.Run("requests", func(t *testing.T) {
		const failures = 4
		closes := make([]fault, failures)
		for i := range closes {
			closes[i] = fault{kind: faultClose}
		}
		srv := startFaultServer(t, closes...)
		ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
		bad, good := ep.Unit(1, 0), ep.Unit(2, 0)
		for i := range failures {
			before := srv.accepts.Load()
			if _, err := bad.ReadHoldingRegisters(ctx, 0, 1, nil); err == nil || !IsRetryable(err) {
				t.Fatalf("failure %d: err = %v, want a retryable failure", i+1, err)
			}
			if n := srv.accepts.Load(); n != before+1 {
				t.Fatalf("failure %d: %d new connections, want the request on a new one", i+1, n-before)
			}
		}
		// The script is used up: both units are answered at once.
		for _, c := range []*Client{good, bad} {
			if _, err := c.ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
				t.Fatalf("unit %d after unit 1's failures: %v", c.UnitID(), err)
			}
		}
		if st := ep.Stats(); st.Connects != failures+1 || st.Failures != failures || st.Requests != failures+2 {
			t.Errorf("stats %+v: want %d connects, %d failures, %d requests", st, failures+1, failures, failures+2)
		}
	})
	t.Run("connects", func(t *testing.T) {
		addr := freeAddr(t) // nothing listens: connection refused
		ep := newTestPool(t).Endpoint(EndpointConfig{Address: addr})
		const attempts = 4
		for i := range attempts {
			err := ep.Unit(byte(7+i%2), 0).WriteRegisters(ctx, 40000, []uint16{1})
			var mbErr *Error
			if !errors.As(err, &mbErr) || mbErr.Op != OpConnect || mbErr.Endpoint != addr || !IsRetryable(err) {
				t.Fatalf("attempt %d: err = %#v, want a retryable connect *Error", i+1, err)
			}
		}
		if st := ep.Stats(); st.ConnectFailures != attempts || st.Requests != 0 {
			t.Errorf("stats %+v: want %d connect attempts, no request", st, attempts)
		}
	})
}

func TestConnectDelay(t *testing.T) {
	const delay = time.Second
	srv := startFaultServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr(), ConnectDelay: delay})
	c := ep.Unit(1, 0)

	// A context shorter than the delay ends the wait but keeps the socket.
	// It must outlast the connect itself (on a loaded machine a loopback
	// connect took over 20 ms, and a context ending inside the connect
	// rightly drops the socket).
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.ReadHoldingRegisters(ctx, 0, 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if _, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || srv.accepts.Load() != 1 {
		t.Fatalf("server saw %d requests on %d connections, want 2 on 1", len(reqs), srv.accepts.Load())
	}
	// The client connected after start, so the first request cannot reach
	// the server before start+delay.
	if gap := reqs[0].at.Sub(start); gap < delay {
		t.Errorf("first request %v after the call, want ≥ %v", gap, delay)
	}
}

func TestPoolClose(t *testing.T) {
	srv := startFaultServer(t)
	pool := NewPool(nil)
	ep := pool.Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	if _, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	// Hold the endpoint's turn so that the next request waits for it.
	if !ep.turn.take() {
		t.Fatal("the endpoint's turn is held")
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil)
		waiting <- err
	}()
	closed := make(chan error, 1)
	go func() { closed <- pool.Close() }()
	if err := <-waiting; !errors.Is(err, ErrClosed) || Classify(err) != ClassClosed {
		t.Errorf("waiting request: err = %v, want ErrClosed", err)
	}
	ep.turn.release() // let Close take its turn
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := pool.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.ReadHoldingRegisters(t.Context(), 0, 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
	late := pool.Endpoint(EndpointConfig{Address: "127.0.0.1:1"})
	if err := late.Unit(1, 0).WriteRegisters(t.Context(), 0, []uint16{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("endpoint made after Close: err = %v, want ErrClosed", err)
	}
	if st := ep.Stats(); st.Connected || st.Connects != 1 {
		t.Errorf("stats %+v: want the socket closed", st)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	start := runtime.NumGoroutine()
	func() {
		srv := startRegServer(t)
		fs := startFaultServer(t, fault{kind: faultSilent}, fault{kind: faultDelay, delay: 50 * time.Millisecond})
		defer fs.close()
		defer func() { _ = srv.srv.Stop() }()
		pool := NewPool(nil)
		defer func() {
			if err := pool.Close(); err != nil {
				t.Error(err)
			}
		}()
		for _, addr := range []string{srv.addr, fs.addr()} {
			c := pool.Endpoint(EndpointConfig{Address: addr, Timeout: 100 * time.Millisecond, ConnectDelay: time.Millisecond}).Unit(1, 0)
			for range 4 {
				_, _ = c.ReadHoldingRegisters(t.Context(), 0, 10, nil)
			}
		}
	}()
	proctest.WaitFor(t, fmt.Sprintf("goroutines back to %d", start), 5*time.Second, func() bool {
		return runtime.NumGoroutine() <= start
	})
}

func TestErrorMessages(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		err  error
		want string
	}{
		{&Error{Op: OpRead, Endpoint: "127.0.0.1:1502", Unit: 1, Addr: 40000, Quantity: 2, Err: cause},
			"modbus read 40000+2 from 127.0.0.1:1502 unit 1: boom"},
		{&Error{Op: OpWrite, Endpoint: "10.0.0.2:502", Unit: 3, Addr: 40100, Quantity: 1, Err: cause},
			"modbus write 40100+1 to 10.0.0.2:502 unit 3: boom"},
		{&Error{Op: OpConnect, Endpoint: "10.0.0.2:502", Unit: 3, Addr: 40100, Quantity: 1, Err: cause},
			"modbus connect to 10.0.0.2:502 unit 3: boom"},
		{&ExceptionError{Function: 3, Code: 2}, "exception 2 (illegal data address) on function 3"},
		{&ExceptionError{Function: 16, Code: 11}, "exception 11 (gateway target device failed to respond) on function 16"},
		{&ExceptionError{Function: 3, Code: 42}, "exception 42 (unknown exception) on function 3"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if !errors.Is(&Error{Err: cause}, cause) {
		t.Error("Error does not unwrap")
	}
}

func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:1502":  "127.0.0.1:1502",
		"inverter.lan":    "inverter.lan:502",
		" 10.0.0.2 ":      "10.0.0.2:502",
		"::1":             "[::1]:502",
		"[fe80::1]":       "[fe80::1]:502",
		"[fe80::1]:15020": "[fe80::1]:15020",
	} {
		if got := normalizeAddress(in); got != want {
			t.Errorf("normalizeAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEndpointConfigDefaults(t *testing.T) {
	got := EndpointConfig{Address: "h", ConnectDelay: -1, Timeout: -time.Second}.withDefaults()
	want := EndpointConfig{Address: "h:502", Transport: TransportTCP, Timeout: DefaultTimeout}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got = EndpointConfig{Address: "h:1"}.withDefaults()
	want = EndpointConfig{Address: "h:1", Transport: TransportTCP, Timeout: DefaultTimeout}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	c := NewPool(nil).Endpoint(EndpointConfig{Address: "h:1", Timeout: time.Second}).Unit(1, 0)
	if c.Timeout() != time.Second {
		t.Errorf("client timeout %v, want the endpoint's 1s", c.Timeout())
	}
}

// TestPoolStats checks the counters of every endpoint of a pool, as
// /metrics shows them: one entry per address, sorted, each with its own
// requests and failures by kind.
func TestPoolStats(t *testing.T) {
	good := startFaultServer(t)
	slow := startFaultServer(t, fault{kind: faultSilent})
	dead := freeAddr(t)
	pool := newTestPool(t)
	ctx := t.Context()
	if _, err := pool.Endpoint(EndpointConfig{Address: good.addr()}).Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	// The silent server's connection is made first with time to spare: a
	// request's timeout also bounds its connect, and on a loaded machine
	// a 50 ms connect can time out, which is not what is counted here.
	slowEp := pool.Endpoint(EndpointConfig{Address: slow.addr()})
	if !slowEp.turn.take() {
		t.Fatal("the endpoint's turn is held")
	}
	err := slowEp.connect(ctx, 10*time.Second)
	slowEp.release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slowEp.Unit(1, 50*time.Millisecond).ReadHoldingRegisters(ctx, 0, 1, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("silent server: %v, want ErrTimeout", err)
	}
	if _, err := pool.Endpoint(EndpointConfig{Address: dead}).Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err == nil {
		t.Fatal("no error from a dead address")
	}
	// Frames: a 12-byte request, an 11-byte answer (one register).
	want := map[string]EndpointStats{
		good.addr(): {Address: good.addr(), Transport: TransportTCP, Connected: true, Requests: 1, Connects: 1, BytesWritten: 12, BytesRead: 11},
		slow.addr(): {Address: slow.addr(), Transport: TransportTCP, Requests: 1, Failures: 1, Timeouts: 1, Connects: 1, BytesWritten: 12},
		dead:        {Address: dead, Transport: TransportTCP, ConnectFailures: 1},
	}
	got := pool.Stats()
	if len(got) != len(want) || !slices.IsSortedFunc(got, func(a, b EndpointStats) int { return strings.Compare(a.Address, b.Address) }) {
		t.Fatalf("Stats() = %+v, want %d endpoints sorted by address", got, len(want))
	}
	for _, st := range got {
		if st.Elapsed <= 0 || st.Busy < 0 || st.Busy > st.Elapsed {
			t.Errorf("%s: busy %v, elapsed %v", st.Address, st.Busy, st.Elapsed)
		}
		if st.Address == slow.addr() && st.Busy < 50*time.Millisecond {
			t.Errorf("%s: busy %v, want the 50ms timeout in it", st.Address, st.Busy)
		}
		st.Busy, st.Elapsed = 0, 0
		if st != want[st.Address] {
			t.Errorf("stats %+v, want %+v", st, want[st.Address])
		}
	}
}

// TestWaitersShareAFailedConnect checks that requests that waited for
// their turn while a connect failed fail with its error at once, instead
// of each waiting out a connect of its own (units behind a dead gateway),
// and that a request after the failure tries again.
func TestWaitersShareAFailedConnect(t *testing.T) {
	addr := freeAddr(t) // nothing listens: connection refused
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: addr})
	ctx := t.Context()
	const waiters = 3
	if !ep.turn.take() { // the test takes the turn, as a request that connects
		t.Fatal("the endpoint's turn is held")
	}
	errs := make(chan error, waiters)
	for i := range waiters {
		go func() {
			_, err := ep.Unit(byte(i+1), 0).ReadHoldingRegisters(ctx, 0, 1, nil)
			errs <- err
		}()
	}
	proctest.WaitFor(t, "the requests waiting for their turn", 10*time.Second, func() bool { return ep.Stats().Waiting == waiters })
	if err := ep.connect(ctx, time.Second); err == nil {
		t.Fatal("connect to a dead address succeeded")
	}
	ep.release()
	for range waiters {
		err := <-errs
		var mbErr *Error
		if !errors.As(err, &mbErr) || mbErr.Op != OpConnect || !IsRetryable(err) || !strings.Contains(err.Error(), "while this request waited") {
			t.Errorf("waiting request: err = %v, want the failed connect's error", err)
		}
	}
	if st := ep.Stats(); st.ConnectFailures != 1 || st.Waiting != 0 {
		t.Errorf("stats %+v: want 1 connect attempt, nobody waiting", st)
	}
	if _, err := ep.Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err == nil || strings.Contains(err.Error(), "while this request waited") {
		t.Errorf("request after the failure: err = %v, want a connect attempt of its own", err)
	}
	if st := ep.Stats(); st.ConnectFailures != 2 {
		t.Errorf("stats %+v: want 2 connect attempts", st)
	}
}
