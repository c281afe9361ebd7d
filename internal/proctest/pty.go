package proctest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// PTYPair is a pair of linked pseudo-terminals made by socat: a serial
// line for the tests, A for one side (the master, plantd's client) and B
// for the other (a simulated bus).
type PTYPair struct {
	A, B   string
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// StartPTYPair starts socat with linked ptys at the paths a and b and waits
// until socat reports both ready ("starting data transfer loop" on its
// stderr). socat is stopped when the test ends. Without socat the test is
// skipped, but under CI=true it fails (CI installs socat).
func StartPTYPair(tb testing.TB, a, b string) *PTYPair {
	tb.Helper()
	bin, err := exec.LookPath("socat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("socat not installed (apt-get install socat): %v", err)
		}
		tb.Skipf("socat not installed (apt-get install socat): %v", err)
	}
	cmd := exec.Command(bin, "-d", "-d", "pty,raw,echo=0,link="+a, "pty,raw,echo=0,link="+b)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start socat: %v", err)
	}
	p := &PTYPair{A: a, B: b, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stderr)
		started := false
		for sc.Scan() {
			if log.Len() < 4096 {
				log.WriteString(sc.Text() + "\n")
			}
			if !started && strings.Contains(sc.Text(), "starting data transfer loop") {
				started = true
				close(ready)
			}
		}
		_ = cmd.Wait()
	}()
	tb.Cleanup(p.Stop)
	select {
	case <-ready:
	case <-p.exited:
		tb.Fatalf("socat ended before its ptys were ready:\n%s", log.String())
	case <-time.After(10 * time.Second):
		tb.Fatal("socat reported no pty pair within 10 s")
	}
	return p
}

// Stop ends socat and waits for it (as an unplugged adapter: the ptys
// go); it is safe to call more than once.
func (p *PTYPair) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}
