package modbus

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"plantd/internal/proctest"
)

const benchQty = 125

// BenchmarkRawLoop is the baseline: a hand-written Modbus TCP client that
// reads 125 registers per request from the simonvetter test server, with no
// pool, locking, deadlines or checks beyond the transaction id.
func BenchmarkRawLoop(b *testing.B) {
	srv := startRegServer(b)
	benchRawLoop(b, srv.addr, 1)
}

// benchRawLoop reads 125 registers from 40000 of unit at addr in a loop
// of hand-made requests: the ceiling of what the server can answer.
func benchRawLoop(b *testing.B, addr string, unit byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := []byte{0, 0, 0, 0, 0, 6, unit, fcReadHoldingRegisters, 0x9C, 0x40, 0, benchQty}
	var resp [maxADU]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tx := uint16(i)
		binary.BigEndian.PutUint16(req, tx)
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp[:mbapSize]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint16(resp[4:])) - 1
		if _, err := io.ReadFull(conn, resp[mbapSize:mbapSize+n]); err != nil {
			b.Fatal(err)
		}
		if binary.BigEndian.Uint16(resp[:]) != tx || resp[8] != 2*benchQty {
			b.Fatalf("bad answer % x", resp[:mbapSize+n])
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkClientRead is the same read through Pool, Endpoint and Client.
func BenchmarkClientRead(b *testing.B) {
	srv := startRegServer(b)
	benchClientRead(b, srv.addr, 1)
}

// benchClientRead is benchRawLoop's read through Pool, Endpoint and Client.
func benchClientRead(b *testing.B, addr string, unit byte) {
	pool := NewPool(nil)
	defer pool.Close()
	ep := pool.Endpoint(EndpointConfig{Address: addr})
	c := ep.Unit(unit, 0)
	ctx := b.Context()
	regs, err := c.ReadHoldingRegisters(ctx, 40000, benchQty, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := proctest.CPUTime()
	for range b.N {
		regs, err = c.ReadHoldingRegisters(ctx, 40000, benchQty, regs)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(proctest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	if st := ep.Stats(); st.Requests != uint64(b.N)+1 || st.Connects != 1 {
		b.Errorf("stats %+v: want %d requests on one connection", st, b.N+1)
	}
}

// BenchmarkSharedEndpoint: 20 units behind one gateway address read at
// once, as the poller's devices on one endpoint do: every request but the
// one in flight waits for the endpoint's turn. cpu-ns/op is the whole
// process's CPU (the server's included) per request.
func BenchmarkSharedEndpoint(b *testing.B) {
	const units = 20
	srv := startRegServer(b)
	pool := NewPool(nil)
	defer pool.Close()
	ep := pool.Endpoint(EndpointConfig{Address: srv.addr})
	ctx := b.Context()
	if _, err := ep.Unit(1, 0).ReadHoldingRegisters(ctx, 40000, benchQty, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := proctest.CPUTime()
	var wg sync.WaitGroup
	for u := range units {
		wg.Go(func() {
			c := ep.Unit(byte(u+1), 0)
			var regs []uint16
			var err error
			for range b.N / units {
				if regs, err = c.ReadHoldingRegisters(ctx, 40000, benchQty, regs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(proctest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPlan plans the reads of a SunSpec inverter with models 1, 103,
// 120..123 and 701..711, about 140 point groups.
func BenchmarkPlan(b *testing.B) {
	var need []Range
	addr := uint16(40002)
	for _, model := range []uint16{66, 50, 26, 30, 48, 24, 153, 88, 30, 20, 66, 40, 60, 60, 80, 70, 30} {
		// Each model: header, then point groups of 1..6 registers with holes.
		need = append(need, Range{Addr: addr, Count: 2})
		for off := uint16(2); off+6 <= model; off += 7 {
			need = append(need, Range{Addr: addr + off, Count: 1 + off%6})
		}
		addr += model + 2
	}
	opt := PlanOptions{MaxGap: 4, Forbidden: []Range{{Addr: 40300, Count: 10}}}
	b.ReportAllocs()
	var reads []Read
	for b.Loop() {
		reads = Plan(need, opt)
	}
	b.ReportMetric(float64(len(need)), "ranges")
	b.ReportMetric(float64(len(reads)), "reads")
}

// BenchmarkTCPRead reads 125 registers per request through Pool, Endpoint
// and Client from a server that allocates nothing, so that allocs/op are
// the client's.
func BenchmarkTCPRead(b *testing.B) {
	srv := startBenchServer(b, false, 1, benchQty)
	benchClientRead(b, srv.addr(), 1)
}
