// Package proctest runs a program under test, as httptest runs a server:
// the real plantd binary built once, started with its log lines (stderr)
// kept for the test to wait on, and stopped by the test's cleanup. Buffer
// is the goroutine-safe sink for a process's output or a test's slog
// handler; CPUTime is this process's CPU time, for benchmarks; ServeTCP
// runs a server's Serve on a loopback port for a test; WaitFor (and
// WaitValue) is the one polling wait of plantd's tests, with one argument
// order: tb, what, timeout, condition. Only tests and
// test helpers (mqtt/mqtttest, sim/simtest) import it; it imports
// no plantd package.
//
// Imports: none
package proctest

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for one writer and any readers. It offers
// Write, not ReadFrom, so exec copies into it under the lock.
type Buffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	grown chan struct{} // closed at the next Write; nil until watched
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grown != nil {
		close(b.grown)
		b.grown = nil
	}
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// watch returns everything written so far and a channel closed at the
// next Write.
func (b *Buffer) watch() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grown == nil {
		b.grown = make(chan struct{})
	}
	return b.b.String(), b.grown
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

// Build compiles the main package pkg (a directory, as go build takes it)
// to out, with -race when the tests run with it: the real binary is
// checked for races too.
func Build(out, pkg string) error {
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	if b, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return errors.New("go " + strings.Join(append(args, pkg), " ") + ": " + err.Error() + "\n" + string(b))
	}
	return nil
}

// Proc is a started program. Its stderr is read line by line as it comes;
// its stdout goes to Stdout unless the command had one set.
type Proc struct {
	tb     testing.TB
	Cmd    *exec.Cmd
	Stdout Buffer

	mu     sync.Mutex
	lines  []string      // stderr, one entry a line
	grown  chan struct{} // closed and replaced when lines grows
	next   int           // the first line Next has not returned
	exited chan struct{} // closed once the process is reaped
	err    error         // Wait's result, set before exited closes
}

// Start starts cmd and kills it, if it still runs, when the test ends. A
// race-built program exits without the race runtime's sleep (see
// QuickExitEnv).
func Start(tb testing.TB, cmd *exec.Cmd) *Proc {
	tb.Helper()
	cmd.Env = QuickExitEnv(cmd.Env)
	p := &Proc{tb: tb, Cmd: cmd, grown: make(chan struct{}), exited: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Stdout
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grown)
			p.grown = make(chan struct{})
			p.mu.Unlock()
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(p.Kill)
	return p
}

// Next returns the next stderr line not yet returned by Next or passed
// by WaitLog, waiting up to timeout for it; ok is false if none came in
// time or the process ended without one.
func (p *Proc) Next(timeout time.Duration) (line string, ok bool) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		if p.next < len(p.lines) {
			l := p.lines[p.next]
			p.next++
			p.mu.Unlock()
			return l, true
		}
		grown := p.grown
		p.mu.Unlock()
		select {
		case <-grown:
		case <-p.exited:
			// The last lines may have come just before the exit.
			p.mu.Lock()
			more := p.next < len(p.lines)
			p.mu.Unlock()
			if !more {
				return "", false
			}
		case <-deadline:
			return "", false
		}
	}
}

// WaitLog waits up to timeout for the next stderr line matching re and
// returns it; the lines before it are passed. It fails the test if none
// comes in time or the process ends first, with the last lines.
func (p *Proc) WaitLog(re *regexp.Regexp, timeout time.Duration) string {
	p.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, ok := p.Next(time.Until(deadline))
		if ok && re.MatchString(l) {
			return l
		}
		if ok {
			continue
		}
		select {
		case <-p.exited:
			p.tb.Fatalf("%s ended (%v) while waiting for %s; its last lines:\n%s", p.Cmd.Path, p.err, re, p.Tail(20))
		default:
			p.tb.Fatalf("no log line %s within %v; the last lines:\n%s", re, timeout, p.Tail(20))
		}
	}
}

// WaitStdout waits up to timeout for a whole line of Stdout (the
// command had none of its own) matching re and returns Stdout up to the
// end of that line. It fails the test if none
// comes in time or the process ends first, with what it printed.
func (p *Proc) WaitStdout(re *regexp.Regexp, timeout time.Duration) string {
	p.tb.Helper()
	deadline := time.After(timeout)
	for {
		out, grown := p.Stdout.watch()
		end := 0
		for l := range strings.Lines(out) {
			end += len(l)
			if strings.HasSuffix(l, "\n") && re.MatchString(strings.TrimSuffix(l, "\n")) {
				return out[:end]
			}
		}
		select {
		case <-grown:
		case <-p.exited:
			if out == p.Stdout.String() {
				p.tb.Fatalf("%s ended (%v) without printing %s; its stdout:\n%s\nits last log lines:\n%s", p.Cmd.Path, p.err, re, out, p.Tail(20))
			}
		case <-deadline:
			p.tb.Fatalf("no output line %s within %v; stdout:\n%s\nthe last log lines:\n%s", re, timeout, out, p.Tail(20))
		}
	}
}

// WaitLines waits up to timeout until ok holds for all the stderr lines
// so far, from the first (Next's place is not moved): for lines that may
// come in any order, some before a line another wait passed. It fails
// the test, naming what, if ok never holds in time or the process ends.
func (p *Proc) WaitLines(what string, timeout time.Duration, ok func(lines []string) bool) {
	p.tb.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		lines, grown := p.lines, p.grown
		p.mu.Unlock()
		if ok(lines) {
			return
		}
		select {
		case <-grown:
		case <-p.exited:
			if !ok(p.Stderr()) {
				p.tb.Fatalf("%s ended (%v) before %s; its last lines:\n%s", p.Cmd.Path, p.err, what, p.Tail(20))
			}
			return
		case <-deadline:
			p.tb.Fatalf("not %s within %v; the last lines:\n%s", what, timeout, p.Tail(20))
		}
	}
}

// Stderr returns all the stderr lines so far.
func (p *Proc) Stderr() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Tail returns the last n stderr lines as one string.
func (p *Proc) Tail(n int) string {
	l := p.Stderr()
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) {
	_ = p.Cmd.Process.Signal(sig)
}

// Wait waits up to timeout for the process to end and returns what
// exec.Cmd.Wait returned; it fails the test if it still runs then.
func (p *Proc) Wait(timeout time.Duration) error {
	p.tb.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.tb.Fatalf("%s still running %v later; its last lines:\n%s", p.Cmd.Path, timeout, p.Tail(20))
		return nil
	}
}

// Stop sends sig and wants the process to exit with status 0 within
// timeout; otherwise the test fails with the last log lines.
func (p *Proc) Stop(sig os.Signal, timeout time.Duration) {
	p.tb.Helper()
	p.Signal(sig)
	if err := p.Wait(timeout); err != nil {
		p.tb.Errorf("%s after %v: %v; its last lines:\n%s", p.Cmd.Path, sig, err, p.Tail(20))
	}
}

// Kill ends the process with SIGKILL, if it still runs, and waits until
// it is reaped.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.exited
}

// Exited is closed once the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }
