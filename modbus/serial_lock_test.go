//go:build linux

package modbus

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// openAsOther opens path read-write as a process without CAP_SYS_ADMIN
// would: in this process when the test does not run as root, else in a
// shell run as nobody (the pty made writable for it first; give the
// device's own path, not a link in a test's private directory), whose error
// is returned.
func openAsOther(t *testing.T, path string) error {
	t.Helper()
	if os.Geteuid() != 0 {
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
		}
		return err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `exec 3<>"$1"`, "sh", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(strings.TrimSpace(string(out)))
	}
	return nil
}

// TestSerialPortExclusive: an endpoint holds its port exclusively while
// it is open. Another pool's endpoint on the same port (another plantd,
// or plantd scan: root or not, through the lock) fails with a
// *PortHeldError naming this process and never touches the line, a
// program that does not lock fails to open it at all (TIOCEXCL), and
// both succeed once the holder closed it.
func TestSerialPortExclusive(t *testing.T) {
	bus, p, ep := serialBus(t, EndpointConfig{}, 1)
	ctx := t.Context()
	if _, err := ep.Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	link, err := filepath.EvalSymlinks(p.A)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
	}{
		{"the configured name", p.A},
		{"another name of the device", link},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(bus.log())
			other := NewPool(nil)
			defer other.Close()
			_, err := other.Endpoint(EndpointConfig{Address: tc.path, Transport: TransportRTU}).Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil)
			var held *PortHeldError
			if !errors.Is(err, ErrPortHeld) || !errors.As(err, &held) {
				t.Fatalf("second open: %v, want ErrPortHeld", err)
			}
			want := tc.path + " is held by " + strings.TrimSpace(string(comm)) + " (pid " + strconv.Itoa(os.Getpid()) + ")"
			if held.PID != os.Getpid() || !strings.Contains(err.Error(), want) {
				t.Errorf("second open: %v, want %q", err, want)
			}
			if n := len(bus.log()) - before; n != 0 {
				t.Errorf("the second endpoint sent %d requests on the held line", n)
			}
		})
	}
	if err := openAsOther(t, link); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("open by a program that does not lock: %v, want device or resource busy (TIOCEXCL)", err)
	}
	// The holder's requests go on.
	if got, err := ep.Unit(1, 0).ReadHoldingRegisters(ctx, 3, 2, nil); err != nil || !slices.Equal(got, seqRegs(3, 2, 1)) {
		t.Fatalf("the holder's read: %v, %v", got, err)
	}

	// Closed, the port is free for anyone.
	if err := ep.close(); err != nil {
		t.Fatal(err)
	}
	if err := openAsOther(t, link); err != nil {
		t.Errorf("open after the holder closed the port: %v", err)
	}
	if _, err := newTestPool(t).Endpoint(EndpointConfig{Address: p.A, Transport: TransportRTU}).Unit(1, 0).ReadHoldingRegisters(ctx, 0, 1, nil); err != nil {
		t.Errorf("another endpoint after the holder closed the port: %v", err)
	}
}
