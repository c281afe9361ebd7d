//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseCodePages drops from plantd's resident memory the pages of its
// own executable (code, read-only data, the function tables) that the
// start-up brought in, and asks the kernel not to read ahead around the
// pages faulted in again: only those the running daemon touches come
// back, one page each.
//
// Why: a page fault in a file mapping reads the pages around it too
// (read-around), so the packaged binary (24 MB, 11 MB of it code) ended
// almost wholly resident after start-up: RssFile 25 MB of a 62 MB RSS at
// 1,000 devices (scripts/scale 1000 50), most of it code run once
// (configuration, discovery, start-up of every component) or never. The
// pages leave the page cache too (MADV_PAGEOUT: with MADV_DONTNEED they
// stayed cached, and the kernel's fault-around mapped 64 KB of cached
// neighbours at each fault, so the whole binary came back within a
// minute); a page plantd runs again is read from the file, once. Measured
// (scripts/scale 1000 50, plantd and its simulator from different files,
// load about 5): RssFile 24.6 → 7.0–8.0 MB, VmRSS 59–60 → 38–43 MB.
// Pages another process maps (a simulator run from the same file) stay.
// Before Linux 5.4 (no MADV_PAGEOUT) it fails and only the read-ahead
// advice remains.
//
// plantd run calls it twice: at its start, before the start-up, and once
// the first poll round is done (supervise). With the file in the page
// cache (a restart, an upgrade just written), the process's own start had
// mapped most of it through fault-around before the first call, and the
// start-up's peak was that plus the heap the start-up builds: 1,000
// devices (scripts/scale 1000 50, 3 runs each alternated, load 0.4-17),
// VmRSS at start-up 49.1-57.2 MB (RssFile 17.6-22.9) without the first
// call, 42.6-49.0 MB (RssFile 10.3-11.6) with it, for about 600 more
// pages read from the file during the start-up, 4 KB each without
// read-around (major faults 15 s in: 1001-1094 against 359-463). The
// second call gives back what only the start-up ran.
//
// Only read-only private mappings of the executable that hold no page
// written since they were mapped (smaps' Anonymous: 0 kB) are advised:
// nothing in them is lost that cannot be read again from the file.
// Relocated read-only data (the GOT, .data.rel.ro, written at start and
// then made read-only: dropping it crashed plantd in a cgo call) and the
// writable data segment are left alone.
//
// It returns the bytes of the mappings advised.
func releaseCodePages() (int64, error) {
	var exe syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &exe); err != nil {
		return 0, fmt.Errorf("stat own executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type mapping struct{ start, end uintptr }
	var todo []mapping
	var cur mapping
	ours := false // cur is a read-only private mapping of the executable
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			// Pages written since the mapping was made (relocated
			// read-only data: .data.rel.ro, the GOT) live only in memory:
			// such a mapping is never dropped.
			if ours && strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")) == "0" {
				todo = append(todo, cur)
			}
			ours = false
			continue
		}
		lo, hi, isHeader := strings.Cut(fields[0], "-")
		if !isHeader || len(fields) < 6 || strings.HasSuffix(fields[0], ":") {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		ino, err3 := strconv.ParseUint(fields[4], 10, 64)
		ours = err1 == nil && err2 == nil && err3 == nil && end > start && ino == exe.Ino &&
			len(fields[1]) == 4 && fields[1][1] == '-' && fields[1][3] == 'p'
		cur = mapping{uintptr(start), uintptr(end)}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, m := range todo {
		for _, advice := range []uintptr{syscall.MADV_RANDOM, madvPageout} {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, advice); errno != 0 {
				return total, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
			}
		}
		total += int64(m.end - m.start)
	}
	return total, nil
}

// madvPageout is MADV_PAGEOUT (Linux 5.4), which syscall does not name.
const madvPageout = 21
