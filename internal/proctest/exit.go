package proctest

import (
	"os"
	"strings"
)

// quickExit is the GORACE option that keeps a race-built program from
// sleeping at its exit: the race runtime waits atexit_sleep_ms (1 s by
// default) whenever goroutines remain, so that another thread's report in
// progress is printed. Races are still reported as they are found, and
// the exit status is still 66 after one.
const quickExit = "atexit_sleep_ms=0"

// QuickExitEnv returns env (os.Environ() if nil) with quickExit added to
// GORACE, unless GORACE sets atexit_sleep_ms already: for a program a test
// starts and waits to exit, which would otherwise take a second longer
// under -race each time.
func QuickExitEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	var gorace string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace = v
			continue
		}
		out = append(out, kv)
	}
	if !strings.Contains(gorace, "atexit_sleep_ms") {
		gorace = strings.TrimSpace(gorace + " " + quickExit)
	}
	return append(out, "GORACE="+gorace)
}

// SetQuickExit adds quickExit to this process's GORACE (see QuickExitEnv),
// for every program the package's tests start with the environment they
// inherit. A TestMain calls it; this process itself started already and
// is not affected.
func SetQuickExit() {
	for _, kv := range QuickExitEnv(nil) {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			os.Setenv("GORACE", v)
		}
	}
}
