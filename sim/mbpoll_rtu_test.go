package sim

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestMbpollRTU reads the devices of a simulated serial line with
// mbpoll's RTU mode, a client that shares no code with plantd, through a
// socat pty pair: every register as the plant holds it.
func TestMbpollRTU(t *testing.T) {
	bin, err := exec.LookPath("mbpoll")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mbpoll not installed (apt-get install mbpoll): %v", err)
		}
		t.Skipf("mbpoll not installed (apt-get install mbpoll): %v", err)
	}
	const baud = 19200
	a, b := ptyPair(t, t.TempDir())
	p := startPlant(t, serialConfig(newClock(summerNoon), b, baud))
	for _, id := range []string{"meter", "inv1"} {
		d := p.Device(id)
		want, err := p.read(d, 40000, 100)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bin, "-m", "rtu", "-b", strconv.Itoa(baud), "-P", "none",
			"-a", strconv.Itoa(int(d.Unit())), "-r", "40000", "-0", "-c", "100", "-t", "4:hex", "-1", "-o", "2", a)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		got := map[int]uint16{}
		for _, m := range mbpollLine.FindAllStringSubmatch(string(out), -1) {
			addr, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseUint(m[2], 16, 16)
			got[addr] = uint16(v)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d registers in mbpoll's output, want %d\n%s", id, len(got), len(want), out)
		}
		for i, w := range want {
			if got[40000+i] != w {
				t.Errorf("%s register %d: mbpoll read %#04x, the plant holds %#04x", id, 40000+i, got[40000+i], w)
			}
		}
	}
}
