package modbus

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	gmodbus "github.com/goburrow/modbus"

	"plantd/internal/proctest"
)

// BenchmarkRTUOverTCP reads 125 registers per request in RTU frames over
// a loopback socket from a server that allocates nothing.
func BenchmarkRTUOverTCP(b *testing.B) {
	srv := startBenchServer(b, true, 1, benchQty)
	pool := NewPool(nil)
	defer pool.Close()
	ep := pool.Endpoint(EndpointConfig{Address: srv.addr(), Transport: TransportRTUOverTCP})
	c := ep.Unit(1, 0)
	ctx := b.Context()
	regs, err := c.ReadHoldingRegisters(ctx, 40000, benchQty, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if regs, err = c.ReadHoldingRegisters(ctx, 40000, benchQty, regs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.StopTimer()
	if st := ep.Stats(); st.Requests != uint64(b.N)+1 || st.Failures != 0 || st.BytesRead != uint64(b.N+1)*255 {
		b.Errorf("stats %+v", st)
	}
}

// BenchmarkTCPLoop decides plantd's own socket loop (doc.go): the same
// read of 125 registers, by devices endpoints each polled by its own
// goroutine (as the poller does), through
//
//   - plantd: Client on plantd's own loop (transport_unix.go);
//   - portable: Client on the portable net.Conn loop (connLink);
//   - goburrow: goburrow's own client on its TCP transporter
//     (TCPClientHandler.Send), the registers decoded as the Client does.
//
// ns/op is the wall time per request and cpu-ns/op the CPU time (user and
// system) per request of the whole process, the loopback server included
// (the same in every case); the server allocates nothing, so allocs/op are
// the client's.
func BenchmarkTCPLoop(b *testing.B) {
	for _, devices := range []int{1, 100, 1000} {
		srv := startBenchServer(b, false, 1, benchQty)
		for _, loop := range []string{"plantd", "portable", "goburrow"} {
			b.Run(fmt.Sprintf("%s/devices=%d", loop, devices), func(b *testing.B) {
				benchLoop(b, srv.addr(), loop, devices)
			})
		}
	}
}

func benchLoop(b *testing.B, addr, loop string, devices int) {
	reads := make([]func() error, devices)
	switch loop {
	case "plantd", "portable":
		portableTCP = loop == "portable"
		defer func() { portableTCP = false }()
		pool := NewPool(nil)
		defer pool.Close()
		for i := range reads {
			// One endpoint per device: the same address under distinct
			// keys, as devices at distinct addresses would be.
			ep := newEndpoint(EndpointConfig{Address: addr, Timeout: 10 * time.Second}.withDefaults(), pool.log)
			defer ep.close()
			c := ep.Unit(1, 0)
			var regs []uint16
			ctx := b.Context()
			reads[i] = func() (err error) {
				regs, err = c.ReadHoldingRegisters(ctx, 40000, benchQty, regs)
				return err
			}
		}
	case "goburrow":
		for i := range reads {
			h := gmodbus.NewTCPClientHandler(addr)
			h.SlaveId = 1
			h.Timeout = 10 * time.Second
			defer h.Close()
			c := gmodbus.NewClient(h)
			var regs []uint16
			reads[i] = func() error {
				data, err := c.ReadHoldingRegisters(40000, benchQty)
				if err != nil {
					return err
				}
				regs = regs[:0]
				for j := 0; j+1 < len(data); j += 2 {
					regs = append(regs, binary.BigEndian.Uint16(data[j:]))
				}
				return nil
			}
		}
	}
	// Connect every device before the clock starts.
	for _, read := range reads {
		if err := read(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := proctest.CPUTime()
	var wg sync.WaitGroup
	errs := make(chan error, devices)
	for i, read := range reads {
		n := b.N / devices
		if i < b.N%devices {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := read(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(proctest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
