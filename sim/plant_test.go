package sim

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant/kind"
)

// TestCloseLeavesNoGoroutines runs a plant with clients, a slow answer in
// flight and every fault, closes it and waits for the goroutine count to
// come back.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := New(testConfig(newClock(summerNoon)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var conns []*rawConn
	for _, d := range p.Devices() {
		for range 2 {
			c := rawDial(t, d.Addr())
			c.readSunS(1, d.Unit())
			if f, err := c.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(1, d.Unit())) {
				t.Fatalf("%s: % x, %v", d.ID(), f, err)
			}
			conns = append(conns, c)
		}
	}
	p.Device("inv1").SetFault(Fault{Kind: FaultSlow, Delay: time.Hour})
	conns[0].readSunS(2, 1) // stays unanswered: Close must not wait for it
	p.Device("meter").SetFault(Fault{Kind: FaultOneClient})
	p.Device("bat").SetFault(Fault{Kind: FaultOffline})
	p.Device("wx").SetFault(Fault{Kind: FaultWrongTID})

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.Start(); err != ErrClosed {
		t.Errorf("Start after Close: %v", err)
	}
	for _, c := range conns {
		if _, err := c.any(3 * time.Second); !closedErr(err) {
			t.Errorf("a client connection is still open: %v", err)
		}
		_ = c.c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartPorts checks configured ports and Run.
func TestStartPorts(t *testing.T) {
	// Find a free port, then configure it.
	probe := startPlant(t, Config{Now: newClock(summerNoon).Now, Devices: []DeviceConfig{{ID: "x", Kind: kind.Sensor}}})
	addr := probe.Device("x").Addr()
	_ = probe.Close()
	_, port, _ := strings.Cut(addr, ":")
	portN, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Now: newClock(summerNoon).Now, Devices: []DeviceConfig{{ID: "wx", Kind: kind.Sensor, Port: portN}}}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Device("wx").Addr() != "" {
		t.Errorf("address before Start: %q", p.Device("wx").Addr())
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	proctest.WaitFor(t, "Run to start", 5*time.Second, func() bool { return p.Device("wx").Addr() != "" })
	if got := p.Device("wx").Addr(); got != addr {
		t.Errorf("address %s, want %s", got, addr)
	}
	c := rawDial(t, addr)
	c.readSunS(5, 1)
	if f, err := c.frame(3 * time.Second); err != nil || !bytes.Equal(f, sunsAnswer(5, 1)) {
		t.Errorf("answer % x, %v", f, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
