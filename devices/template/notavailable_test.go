package template_test

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/devices/template"
	"plantd/modbus"
)

// imageDevice is a template device on a real socket whose registers
// answer from fill (the register's address; the function of the read).
type imageDevice struct {
	fill func(fn byte, addr uint16) uint16
}

func (d imageDevice) Registers(req *modbus.Request) ([]uint16, error) {
	if req.IsWrite() {
		return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
	}
	out := make([]uint16, req.Quantity)
	for i := range out {
		out[i] = d.fill(req.Function, req.Addr+uint16(i))
	}
	return out, nil
}

func (imageDevice) Bits(*modbus.Request) ([]bool, error) {
	return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
}

// serve starts d on 127.0.0.1:0 and returns a client of unit 1.
func serve(t *testing.T, d imageDevice) *modbus.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv := modbus.NewServer(modbus.ServerConfig{}, d, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	return pool.Endpoint(modbus.EndpointConfig{Address: ln.Addr().String(), Timeout: 2 * time.Second}).Unit(1, 2*time.Second)
}

// TestNotAvailable: a device answering the vendor's "not available"
// values (notAvailable in its template) gives absent values, never
// numbers: an all-ones device, then each point at the first value its
// type declares. A sun2000 answering all ones showed 42,949,672,950 Wh
// lifetime and a rated power of 4,294,967,295 W.
func TestNotAvailable(t *testing.T) {
	all, err := template.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range all {
		for _, image := range []string{"all ones", "declared"} {
			t.Run(tp.Name+"/"+image, func(t *testing.T) {
				t.Parallel()
				at := map[[2]uint32]uint16{} // function, address: value (declared)
				for i := range tp.Points {
					p := &tp.Points[i]
					na := tp.NotAvailable[p.Type]
					if !p.Numeric() || len(na) == 0 {
						continue
					}
					v := na[0]
					if p.Type.Words() == 1 {
						at[[2]uint32{uint32(p.Function), uint32(p.Address)}] = uint16(v)
						continue
					}
					hi, lo := uint16(v>>16), uint16(v)
					if p.LowFirst {
						hi, lo = lo, hi
					}
					at[[2]uint32{uint32(p.Function), uint32(p.Address)}] = hi
					at[[2]uint32{uint32(p.Function), uint32(p.Address) + 1}] = lo
				}
				c := serve(t, imageDevice{fill: func(fn byte, addr uint16) uint16 {
					if v, ok := at[[2]uint32{uint32(fn), uint32(addr)}]; ok && image == "declared" {
						return v
					}
					return 0xFFFF
				}})
				var regs template.Registers
				if err := tp.Read(t.Context(), c, &regs, true); err != nil {
					t.Fatal(err)
				}
				for i := range tp.Points {
					p := &tp.Points[i]
					if !p.Numeric() {
						continue
					}
					na := tp.NotAvailable[p.Type]
					sentinel := image == "declared" && len(na) > 0 ||
						image == "all ones" && slices.Contains(na, uint32(1)<<(16*p.Type.Words())-1)
					v, ok := tp.Value(p, &regs)
					if sentinel && ok {
						t.Errorf("%s (%s) = %v, want absent", p.Name, p.Type, v)
					}
				}
				if pl := tp.Plate(&regs); pl.RatedPowerW != 0 {
					t.Errorf("rated power %v W, want none", pl.RatedPowerW)
				}
			})
		}
	}
}

// TestNotAvailableParse: notAvailable takes u16, s16, u32 and s32 with
// values of their width; anything else is refused naming the key.
func TestNotAvailableParse(t *testing.T) {
	const head = "name: x\nvendor: V\nkind: meter\nsource: {document: D}\nblocks: [{function: 3, address: 0, count: 2}]\npoints: [{name: p, address: 0, type: u32, unit: W, channel: activePower}]\n"
	for _, tt := range []struct {
		na, err string
	}{
		{"notAvailable: {u16: [0xFFFF], s16: [0x7FFF, 0x8000], u32: [0xFFFFFFFF], s32: [0x80000000]}\n", ""},
		{"notAvailable: {f32: [0xFFFFFFFF]}\n", "notAvailable.f32"},
		{"notAvailable: {u16: [0x10000]}\n", "does not fit 16 bits"},
		{"notAvailable: {s32: [0x100000000]}\n", "does not fit 32 bits"},
	} {
		_, err := template.Parse("x.yaml", []byte(head+tt.na))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.na, err, tt.err)
		}
	}
}
