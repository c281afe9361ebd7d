package modbusproxy

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"plantd/devices/sim"
	"plantd/devices/sim/simtest"
	"plantd/internal/proctest"
	"plantd/modbus"
)

// rig is a simulated inverter, plantd's client of it, and a proxy in
// front of that client.
type rig struct {
	dev    *sim.Device
	direct *modbus.Client // plantd's client of the device
	proxy  *modbus.Client // a third party's client of the proxy
	held   []modbus.Range
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	p := simtest.Start(t, sim.DefaultConfig())
	r := &rig{dev: simtest.Device(t, p, "inv1")}
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	r.direct = pool.Endpoint(modbus.EndpointConfig{Address: r.dev.Addr()}).Unit(r.dev.Unit(), 2*time.Second)
	cfg.Device, cfg.Client = "inv1", r.direct
	cfg.Held = func() []modbus.Range { return r.held }
	px := New(cfg, slog.New(slog.DiscardHandler))
	addr := proctest.ServeTCP(t, px.Serve)
	// Another unit id than the device's: the proxy stands for one device.
	r.proxy = pool.Endpoint(modbus.EndpointConfig{Address: addr}).Unit(7, 2*time.Second)
	return r
}

func exceptionCode(err error) byte {
	var ex *modbus.ExceptionError
	if errors.As(err, &ex) {
		return ex.Code
	}
	return 0
}

func TestForward(t *testing.T) {
	r := newRig(t, Config{RequestsPerSecond: 1000, Burst: 1000})
	ctx := t.Context()
	got, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 4, nil)
	want, err2 := r.direct.ReadHoldingRegisters(ctx, 40000, 4, nil)
	if err != nil || err2 != nil || !slices.Equal(got, want) {
		t.Fatalf("through the proxy %v %v, directly %v %v", got, err, want, err2)
	}
	// The device's own exception goes back as it was.
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 100, 2, nil); exceptionCode(err) != modbus.ExceptionIllegalDataAddress {
		t.Errorf("a read outside the map: %v, want the device's exception 2", err)
	}
	// A write the device takes (model 1 DA, its value) passes; a held
	// range refuses writes and nothing reaches the device, reads pass.
	if err := r.proxy.WriteRegisters(ctx, 40068, []uint16{1}); err != nil {
		t.Fatalf("a write through the proxy: %v", err)
	}
	n := len(r.dev.Writes())
	r.held = []modbus.Range{{Addr: 40060, Count: 10}}
	if err := r.proxy.WriteRegisters(ctx, 40068, []uint16{1}); exceptionCode(err) != modbus.ExceptionServerDeviceBusy {
		t.Errorf("a write to a held range: %v, want exception 6", err)
	}
	if len(r.dev.Writes()) != n {
		t.Error("a refused write reached the device")
	}
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 40060, 10, nil); err != nil {
		t.Errorf("a read of a held range: %v", err)
	}
	// A device that stops answering: exception 0x0B.
	r.dev.SetFault(sim.Fault{Kind: sim.FaultDrop})
	if _, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 2, nil); exceptionCode(err) != modbus.ExceptionGatewayTargetDeviceFailedToRespond {
		t.Errorf("a dropped request: %v, want exception 11", err)
	}
}

func TestRateLimit(t *testing.T) {
	r := newRig(t, Config{RequestsPerSecond: 0.001, Burst: 3})
	ctx := t.Context()
	for i := range 5 {
		_, err := r.proxy.ReadHoldingRegisters(ctx, 40000, 2, nil)
		if i < 3 && err != nil {
			t.Errorf("request %d within the burst: %v", i, err)
		}
		if i >= 3 && exceptionCode(err) != modbus.ExceptionServerDeviceBusy {
			t.Errorf("request %d beyond the burst: %v, want exception 6", i, err)
		}
	}
}

// BenchmarkRead reads model 103 (52 registers) of a simulated inverter
// directly and through the proxy, one request at a time; p99 is the 99th
// percentile of a read's latency.
func BenchmarkRead(b *testing.B) {
	r := newRig(b, Config{RequestsPerSecond: 1e9, Burst: 1000})
	for _, bc := range []struct {
		name string
		c    *modbus.Client
	}{{"direct", r.direct}, {"proxy", r.proxy}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := bc.c.ReadHoldingRegisters(ctx, 40070, 52, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}
