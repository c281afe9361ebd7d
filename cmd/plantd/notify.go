package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"plantd/config"
	"plantd/plant"
)

// Supervision limits.
const (
	// readyWait bounds the wait for the first poll round before READY=1:
	// an unreachable device must not keep the service "activating" until
	// systemd gives up on it (TimeoutStartSec, 90 s by default).
	readyWait = 60 * time.Second
	// statusEvery is how often STATUS= is refreshed without a watchdog;
	// with one, it is refreshed with every WATCHDOG=1.
	statusEvery = 10 * time.Second
	// writerStallAfter is how long the store's writer may go without a
	// round of its loop (once a second when idle) before it counts as
	// hung: far above the longest commit or rollup step.
	writerStallAfter = 2 * time.Minute
)

// supervise talks to systemd (sd_notify; a no-op when NOTIFY_SOCKET is
// not set): READY=1 once the first poll round ran and grid control loaded
// the stored schedules (the store is open and the HTTP port bound before
// run starts), STATUS= with a one-line summary,
// WATCHDOG=1 only while the poller and the store's writer make progress,
// and a config reload on each SIGHUP (RELOADING=1, then READY=1 again).
// STOPPING=1 when ctx ends.
func (d *daemon) supervise(ctx context.Context, hup <-chan os.Signal) {
	// Ready also waits for grid control to have loaded the stored
	// schedules: an operator's limit is held before READY=1.
	start := time.Now()
	d.storedBefore.Store(-1)
	go d.countStored(ctx)
	watchdog, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		d.log.Warn("systemd watchdog: " + err.Error())
	}
	every := statusEvery
	if watchdog > 0 {
		every = min(every, watchdog/3)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	first := allClosed(ctx, d.poller.FirstRound(), d.grid.Loaded())
	readyTimer := time.NewTimer(readyWait)
	defer readyTimer.Stop()
	ready := false
	becomeReady := func(complete bool) {
		ready, first = true, nil
		readyTimer.Stop()
		d.notify(sd.SdNotifyReady + "\nSTATUS=" + d.status())
		if complete {
			d.log.Info("ready: store open, HTTP API bound, first poll round done, schedules loaded", "after", time.Since(start).Round(time.Millisecond))
		} else {
			d.log.Warn(fmt.Sprintf("ready before the first poll round ended: it took longer than %v", readyWait))
		}
	}
	lastStall := ""
	var rolledUp time.Time
	codeReleased := false
	for {
		select {
		case <-ctx.Done():
			d.notify(sd.SdNotifyStopping + "\nSTATUS=stopping")
			return
		case <-first:
			becomeReady(true)
			continue
		case <-readyTimer.C:
			if !ready {
				becomeReady(false)
			}
			continue
		case <-hup:
			d.reloadConfig(ready)
			continue
		case <-tick.C:
		}
		if ready {
			// The first tick after the first poll round: the devices
			// are discovered and grid control ran its first cycle.
			endStartupGC()
			if !codeReleased {
				codeReleased = true
				if n, err := releaseCodePages(); err != nil {
					d.log.Debug("release the start-up's code pages", "err", err)
				} else {
					d.log.Debug("released the start-up's code pages", "bytes", n)
				}
			}
		}
		rolledUp = d.releaseAfterRollup(rolledUp)
		stall := d.stalled(time.Now(), start)
		if stall != lastStall {
			if stall != "" {
				d.log.Error("watchdog: no progress, not reporting alive to systemd: " + stall)
			} else {
				d.log.Info("watchdog: progress again")
			}
			lastStall = stall
		}
		msg := ""
		if watchdog > 0 && stall == "" {
			msg = sd.SdNotifyWatchdog + "\n"
		}
		if stall != "" {
			msg += "STATUS=no progress: " + stall
		} else if ready {
			msg += "STATUS=" + d.status()
		} else {
			msg += "STATUS=starting: first poll round"
		}
		d.notify(msg)
	}
}

// countStored counts the measurements the database holds once, for the
// status line: after a restart it says what is stored, not only what this
// process wrote (storedBefore).
func (d *daemon) countStored(ctx context.Context) {
	written := d.store.Stats().Written
	n, err := d.store.Measurements(ctx)
	if err != nil {
		d.log.Debug("status line: " + err.Error())
		return
	}
	d.storedBefore.Store(max(n-int64(written), 0))
}

// releaseAfterRollup returns the heap's free pages to the system once the
// store rolled up another interval since prev (every 5 minutes): a rollup
// reads and decodes a chunk of samples, and the pages it used would
// otherwise stay resident until the runtime's background scavenger gets
// to them, a gateway's RSS rising by its largest rollup (100 devices at
// 1 s: VmRSS 34-36 MB between rollups, 43-53 MB peaks). It returns the
// watermark seen.
func (d *daemon) releaseAfterRollup(prev time.Time) time.Time {
	now := d.store.Stats().RolledUpTo
	if !now.After(prev) {
		return prev
	}
	if !prev.IsZero() {
		debug.FreeOSMemory()
	}
	return now
}

// notify sends state to systemd; without NOTIFY_SOCKET it does nothing.
func (d *daemon) notify(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		d.log.Debug("sd_notify: " + err.Error())
	}
}

// stalled says what does not make progress at now ("" all does): a device
// stuck in one poll far beyond its timeouts, or a store writer that has
// not gone round its loop for writerStallAfter.
func (d *daemon) stalled(now, start time.Time) string {
	var why []string
	if ids := d.poller.Stalled(now); len(ids) > 0 {
		why = append(why, "poller stuck on "+strings.Join(ids, ", "))
	}
	beat := d.store.Progress()
	if beat.IsZero() {
		beat = start
	}
	if age := now.Sub(beat); age > writerStallAfter {
		why = append(why, fmt.Sprintf("store writer silent for %v", age.Round(time.Second)))
	}
	return strings.Join(why, "; ")
}

// status is the one-line summary of STATUS= (systemctl status shows it).
func (d *daemon) status() string {
	var online, stale, offline int
	stats := d.poller.Stats()
	for _, s := range stats {
		switch s.State {
		case plant.StateOnline:
			online++
		case plant.StateStale:
			stale++
		default:
			offline++
		}
	}
	st := d.store.Stats()
	// Stored: what the database held at start (counted once), and what
	// this process wrote since; until counted, what it wrote.
	stored := int64(st.Written)
	if before := d.storedBefore.Load(); before >= 0 {
		stored += before
	}
	s := fmt.Sprintf("%d devices: %d online, %d stale, %d offline; %d measurements stored", len(stats), online, stale, offline, stored)
	if len(d.cfg.Devices) == 0 {
		s = noDevicesMessage(d.configPath) + "; " + fmt.Sprintf("%d measurements stored", stored)
	}
	if st.Dropped+st.Failed > 0 {
		s += fmt.Sprintf(", %d lost", st.Dropped+st.Failed)
	}
	s += "; API on " + d.ln.Addr().String()
	if d.reloadNote != "" {
		s += "; " + d.reloadNote
	}
	return s
}

// reloadConfig reads the config file again (SIGHUP, systemctl reload). An
// invalid file is refused with its problems in the log, and the running
// config stays. Of a valid one, the HTTP tokens and OAuth2 clients, the
// log level, the soft memory limit and the devices (added, removed or
// changed; the others polled on undisturbed) take effect at once; a
// changed plant name or time zone refuses the whole reload (restartOnly);
// every other change needs a restart and is logged as such.
func (d *daemon) reloadConfig(ready bool) {
	if d.reload == nil {
		d.log.Warn("SIGHUP: nothing to reload, the demo has no config file")
		return
	}
	d.notify(sd.SdNotifyReloading + "\n" + sd.SdNotifyMonotonicUsec() + "STATUS=reloading the config")
	defer func() {
		msg := "STATUS=" + d.status()
		if ready {
			msg = sd.SdNotifyReady + "\n" + msg
		}
		d.notify(msg)
	}()
	cfg, err := d.reload()
	if err != nil {
		// One line per problem: journald shows them as they are.
		var problems *config.Errors
		if errors.As(err, &problems) {
			n := fmt.Sprintf("%d problems", len(problems.Problems))
			if len(problems.Problems) == 1 {
				n = "1 problem"
			}
			d.log.Error("config reload refused, the running config stays: " + n)
			for _, p := range problems.Problems {
				d.log.Error("config: " + p.String())
			}
		} else {
			d.log.Error("config reload refused, the running config stays: " + err.Error())
		}
		d.reloadNote = "last config reload refused"
		return
	}
	// A plant's name and time zone are read once at the start by the
	// store, grid control and the consumers: applied at a reload they
	// would label stored days in two zones. The whole reload is refused,
	// so that nothing half applies and the fix is named.
	if keys := restartOnly(d.cfg, cfg); len(keys) > 0 {
		d.log.Error("config reload refused, the running config stays: " + strings.Join(keys, ", ") +
			" changed, which take effect only at a restart: systemctl restart plantd")
		d.reloadNote = "last config reload refused: " + strings.Join(keys, ", ") + " need systemctl restart plantd"
		return
	}
	if err := d.api.SetCredentials(cfg.Tokens, cfg.OAuthClients); err != nil {
		d.log.Error("config reload refused, the running config stays: " + err.Error())
		d.reloadNote = "last config reload refused"
		return
	}
	d.level.Set(cfg.Log.SlogLevel())
	d.reloadNote = ""
	d.log.Info("config reloaded", "tokens", len(cfg.Tokens), "oauthClients", len(cfg.OAuthClients), "logLevel", cfg.Log.Level)
	if !reflect.DeepEqual(d.cfg.Devices, cfg.Devices) {
		ch, err := d.applyDevices(cfg)
		if err != nil {
			d.log.Error("device changes not applied: " + err.Error())
		} else {
			running := *d.cfg
			running.Devices = cfg.Devices
			d.cfg = &running
			d.log.Info("devices reloaded, the others polled on undisturbed", "added", strings.Join(ch.Added, ","),
				"removed", strings.Join(ch.Removed, ","), "changed", strings.Join(ch.Changed, ","))
		}
	}
	// The soft memory limit follows the config (its own value, or the
	// default sized by the device count that a reload may change).
	if cfg.MemoryLimit() != d.cfg.MemoryLimit() {
		limit := setMemoryLimit(cfg)
		d.log.Info("memory limit applied", "limitMiB", limit>>20)
	}
	running := *d.cfg
	running.Gateway.MemoryLimitMB = cfg.Gateway.MemoryLimitMB
	d.cfg = &running
	if pending := changedSections(d.cfg, cfg); len(pending) > 0 {
		d.log.Warn("config changes that need a restart were not applied (systemctl restart plantd): " + strings.Join(pending, ", "))
		d.reloadNote = "config changes pending a restart: " + strings.Join(pending, ", ")
	}
}

// restartOnly lists the keys of the running config's plants whose change
// a reload refuses: each plant's name and time zone (a plant matched by
// its id; "plants[1].timezone"). The other plant settings are among the
// changes changedSections reports.
func restartOnly(running, next *config.Config) []string {
	var out []string
	for i, n := range next.Plants {
		for _, r := range running.Plants {
			if r.ID != n.ID {
				continue
			}
			if r.Name != n.Name {
				out = append(out, fmt.Sprintf("plants[%d].name", i))
			}
			if r.Timezone != n.Timezone {
				out = append(out, fmt.Sprintf("plants[%d].timezone", i))
			}
		}
	}
	return out
}

// changedSections lists the top-level config keys that differ between the
// running config and a reloaded one, leaving out what a reload applies:
// tokens, oauthClients, log.level (and the devices and
// gateway.memoryLimitMB, which reloadConfig copies into the running
// config when it applied them).
func changedSections(running, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(*running), reflect.ValueOf(*next)
	typ := a.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "tokens" || name == "oauthClients" {
			continue
		}
		if name == "log" {
			if running.Log.Format != next.Log.Format {
				out = append(out, "log.format")
			}
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// allClosed returns a channel closed once every one of chs is closed, or
// never when ctx ends first.
func allClosed(ctx context.Context, chs ...<-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		for _, c := range chs {
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
		close(out)
	}()
	return out
}
