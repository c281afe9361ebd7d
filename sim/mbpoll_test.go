package sim

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mbpollLine is one register of mbpoll's hex output: "[40000]: 	0x5375".
var mbpollLine = regexp.MustCompile(`(?m)^\[(\d+)\]:\s+0x([0-9A-Fa-f]{4})\s*$`)

// mbpoll reads count holding registers from addr (PDU addressing) with the
// independent client mbpoll and returns them by address.
func mbpoll(t *testing.T, bin string, d *Device, addr, count int) map[int]uint16 {
	t.Helper()
	_, port, ok := strings.Cut(d.Addr(), ":")
	if !ok {
		t.Fatalf("address %q", d.Addr())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-m", "tcp", "-a", strconv.Itoa(int(d.Unit())),
		"-r", strconv.Itoa(addr), "-0", "-c", strconv.Itoa(count), "-t", "4:hex", "-1", "-o", "2",
		"-p", port, "127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	regs := map[int]uint16{}
	for _, m := range mbpollLine.FindAllStringSubmatch(string(out), -1) {
		a, _ := strconv.Atoi(m[1])
		v, _ := strconv.ParseUint(m[2], 16, 16)
		regs[a] = uint16(v)
	}
	if len(regs) != count {
		t.Fatalf("%s: %d registers in the output, want %d\n%s", cmd, len(regs), count, out)
	}
	return regs
}

// TestMbpoll reads every simulated device with mbpoll, a Modbus client that
// shares no code with plantd or its server library.
func TestMbpoll(t *testing.T) {
	bin, err := exec.LookPath("mbpoll")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mbpoll not installed (apt-get install mbpoll): %v", err)
		}
		t.Skipf("mbpoll not installed (apt-get install mbpoll): %v", err)
	}
	p := startPlant(t, testConfig(newClock(summerNoon)))
	for _, d := range p.Devices() {
		t.Run(d.ID(), func(t *testing.T) {
			regs := mbpoll(t, bin, d, 40000, 2)
			if regs[40000] != 0x5375 || regs[40001] != 0x6E53 {
				t.Errorf("SunS: %04x %04x", regs[40000], regs[40001])
			}
			// Model 1 at 40002: ID, L, then Mn in 16 registers.
			regs = mbpoll(t, bin, d, 40002, 18)
			if regs[40002] != 1 || regs[40003] != 66 {
				t.Errorf("model 1 header: %d %d", regs[40002], regs[40003])
			}
			var b []byte
			for a := 40004; a <= 40019; a++ {
				b = append(b, byte(regs[a]>>8), byte(regs[a]))
			}
			if mn := strings.TrimRight(string(b), "\x00"); mn != "plantd" {
				t.Errorf("Mn = %q, want plantd", mn)
			}
		})
	}
}
