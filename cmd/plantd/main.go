// Command plantd is the PV plant gateway daemon. This file only dispatches
// subcommands; each subcommand wires the packages that do the work.
//
// It wires every package, so it may import any of them.
//
// Imports: plantd/...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	_ "time/tzdata" // plant time zones must validate on boxes without zoneinfo

	"github.com/gin-gonic/gin"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (device not found, I/O error)
	exitUsage   = 2 // bad command line
	// exitConfig is sysexits' EX_CONFIG: the config is invalid. The
	// systemd unit does not restart plantd on it (RestartPreventExitStatus).
	exitConfig = 78
)

// version and commit are set at build time (packaging/build) with
// -ldflags "-X main.version=1.2.3 -X main.commit=HASH"; otherwise they come
// from the module and VCS build information.
var version, commit = "", ""

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run the daemon with a config file (the default command)", runRun},
		{"demo", "run the daemon on the embedded simulated plant, no config needed", runDemo},
		{"check-config", "validate a config file without starting", runCheckConfig},
		{"backup", "copy the database consistently while plantd runs (backup DEST)", runBackup},
		{"token", "add a bearer token for the HTTP API to the config (token add)", runToken},
		{"client", "add an OAuth2 client with a generated secret to the config (client add)", runClient},
		{"consent", "list, approve or reject OAuth2 clients' consent requests (running daemon)", runConsent},
		{"eebus", "print plantd's EEBus SKI for the control box (eebus ski)", runEEBus},
		{"scan", "discover and describe a SunSpec device over Modbus TCP", runScan},
		{"sim", "run the simulated demo plant (SunSpec Modbus TCP servers)", runSim},
		{"version", "print the version", runVersion},
	}
}

func main() {
	tuneGC()
	gin.SetMode(gin.ReleaseMode) // no route listing on stdout; requests are logged by httpapi
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// tuneGC sets a soft memory limit of 64 MiB (plantd run replaces it with
// the config's) unless GOMEMLIMIT is set, and GOGC=25 unless GOGC is set:
// the heap may grow by a quarter of its live data between collections.
// Go keeps about 1.1 times that goal resident, so the goal is most of
// plantd's anonymous memory, and plantd's garbage is small (about 1.2 MB/s
// at 1,000 devices polled every second, most of it the readings handed to
// the store): a collection of its 18 MB live heap every few seconds costs
// little. 1,000 devices at 1 s (scripts/scale 1000 50): GOGC=50 -> 25
// took the resident heap from 55-57 to 50-51 MB at the same CPU (5.6 and
// 5.4 % of a core; a loaded machine). Before that, 100 -> 50 took RSS
// from 73 to 59 MB; GOGC=400 (tried before) let 100 devices' RSS reach
// 85 MB in an hour. A soft limit near the working set is no substitute:
// the collector then runs all the time (GOMEMLIMIT=24MiB: 40 % of a core).
func tuneGC() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
}

// defaultGOGC is plantd's GOGC unless the environment sets one.
const defaultGOGC = 25

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		usage(stderr)
		return exitOK
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-V") {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// "plantd" and "plantd -c FILE" mean "plantd run ...".
		return runRun(ctx, args, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "plantd: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: plantd <command> [flags] [args]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'plantd <command> -h' for the flags of a command.")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: plantd %s %s\n", name, synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(stderr, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// isHelp says whether arg asks for a command's usage.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// parseArgs parses flags that may come before or after positional
// arguments ("scan HOST --json" and "scan --json HOST"). It returns the
// positional arguments, or an exit code when parsing ended the command.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseOneArg parses the flags of a command that takes exactly one
// positional argument and returns it; ok is false when the command must
// end with code.
func parseOneArg(fs *flag.FlagSet, args []string) (arg string, code int, ok bool) {
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return "", code, false
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", exitUsage, false
	}
	return pos[0], 0, true
}

// parseFlags parses the flags of a command that takes no positional
// arguments; ok is false when the command must end with code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	pos, code, ok := parseArgs(fs, args)
	if ok && len(pos) != 0 {
		fs.Usage()
		return exitUsage, false
	}
	return code, ok
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fmt.Fprintf(stdout, "plantd %s (commit %s, %s %s/%s)\n", versionString(), commitString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

func commitString() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", ""
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "-dirty"
			}
		}
		if rev != "" {
			return rev + dirty
		}
	}
	return "unknown"
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
