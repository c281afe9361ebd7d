package main

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"plantd/sim"
	"plantd/sim/simtest"
)

// TestSunSpecServerIdleFlood is issue 39's acceptance for the SunSpec
// server's connection caps with the real binary: 32 idle sockets from one
// address (the whole default maxConns) lock nobody else out: a master on
// a second address connects and reads SunS at once, and /metrics counts
// the idle sockets that made room.
func TestSunSpecServerIdleFlood(t *testing.T) {
	t.Parallel() // its own simulator and binary
	p := simtest.Start(t, sim.DefaultConfig())
	path := gridConfigWith(t, p, "modbusServer:\n  listen: 127.0.0.1:0\n  allow: [127.0.0.0/8]\n")
	d := startDaemon(t, path)
	addr := d.sunspecAddr(30 * time.Second)
	_, port, _ := net.SplitHostPort(addr)
	dialFrom := func(local string) net.Conn {
		t.Helper()
		dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second}
		c, err := dl.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Fatalf("dial from %s: %v", local, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for range 32 {
		dialFrom("127.0.0.1") // connected, never a request
	}
	// A master on another address: read 40000..40001 (SunS), unit 1.
	c := dialFrom("127.0.0.2")
	req := []byte{0, 7, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2}
	binary.BigEndian.PutUint16(req[8:], 40000)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(req); err != nil {
		t.Fatalf("the second address's request: %v", err)
	}
	resp := make([]byte, 13)
	if _, err := io.ReadFull(c, resp); err != nil {
		t.Fatalf("the second address's answer after 32 idle sockets from 127.0.0.1: %v", err)
	}
	if resp[7] != 3 || resp[8] != 4 || binary.BigEndian.Uint16(resp[9:]) != 0x5375 || binary.BigEndian.Uint16(resp[11:]) != 0x6E53 {
		t.Fatalf("answer % x, want function 3 with SunS", resp)
	}
	d.waitAPI(10 * time.Second)
	_, body := d.request("GET", "/metrics", "", "")
	found := false
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, `plantd_modbus_server_evicted_total{server="sunspec"} `) && !strings.HasSuffix(l, " 0") {
			found = true
		}
	}
	if !found {
		t.Errorf("/metrics counts no idle socket evicted on the SunSpec server")
	}
	d.stop()
}
