package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/plant"
)

// A power cut with synchronous=NORMAL: the disk holds the database file
// as of its last checkpoint (a checkpoint syncs the WAL before it writes
// the file, and the file before it finishes) and whatever part of the WAL
// the kernel had written back, at worst a prefix ending anywhere after the
// frames the last checkpoint copied, torn inside a frame. SQLite's
// recovery takes the valid frames of the WAL's prefix up to the last
// commit. TestPowerCut takes such disk images of a store that commits raw
// samples in groups, rolls up, enqueues and acknowledges outbox messages
// and writes schedules, all at once, and checks that every image opens
// and holds a consistent state.

// pcImage is a copy of a running database: the file, the WAL, and the
// WAL frames the file may already hold (minFrames: a power cut cannot
// lose them, the checkpoint that copied them had synced them).
type pcImage struct {
	db, wal   []byte
	minFrames int
	// salt is the WAL's salt (a new one after each checkpoint that
	// restarted it); backfilled the frames copied into the file.
	salt        uint64
	backfilled  int
	pageSize    int
	validFrames int
}

// walFrames counts the frames of a WAL image that belong to its header's
// generation (salt), in order from the start.
func walFrames(wal []byte) (pageSize, frames int, salt uint64) {
	if len(wal) < 32 {
		return 0, 0, 0
	}
	pageSize = int(binary.BigEndian.Uint32(wal[8:12]))
	if pageSize == 1 {
		pageSize = 65536
	}
	salt = binary.BigEndian.Uint64(wal[16:24])
	for off := 32; off+24+pageSize <= len(wal) && binary.BigEndian.Uint64(wal[off+8:off+16]) == salt; off += 24 + pageSize {
		frames++
	}
	return pageSize, frames, salt
}

// takeImage copies the database at path while its store writes. A read
// transaction held over the copy keeps the WAL from being restarted and
// any checkpoint from copying frames beyond the reader's snapshot into
// the file; the WAL is copied first (it holds every frame up to that
// snapshot), then the file, then the WAL index (-shm), whose checkpoint
// info says how far a checkpoint copied (nBackfill) or was copying
// (nBackfillAttempted) frames into the file: the image's WAL may be cut
// only after those.
func takeImage(t *testing.T, path string) pcImage {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM meta").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var im pcImage
	if im.wal, err = os.ReadFile(path + "-wal"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if im.db, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	shm, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// WalCkptInfo follows the two 48-byte copies of the index header,
	// in the machine's byte order: nBackfill, aReadMark[5], aLock[8],
	// nBackfillAttempted.
	if len(shm) < 136 {
		t.Fatalf("WAL index of %d bytes", len(shm))
	}
	im.backfilled = int(binary.NativeEndian.Uint32(shm[96:100]))
	im.minFrames = max(im.backfilled, int(binary.NativeEndian.Uint32(shm[128:132])))
	im.pageSize, im.validFrames, im.salt = walFrames(im.wal)
	if im.minFrames > im.validFrames {
		// The index is of a newer generation than the copied WAL (it
		// restarted after a complete checkpoint, whose frames the file
		// holds): nothing of the copy is needed.
		im.minFrames = 0
	}
	return im
}

// pcCut is one way the power cut left the WAL: its first n bytes.
type pcCut struct {
	name string
	n    int
}

// cuts chooses where the image's WAL ends: whole, after the frames a
// checkpoint copied, at random frame boundaries in between, and at random
// byte offsets (a torn frame or header).
func (im pcImage) cuts(rng *rand.Rand) []pcCut {
	frame := 24 + im.pageSize
	at := func(frames int) int { return 32 + frames*frame }
	out := []pcCut{{"whole WAL", len(im.wal)}}
	if im.pageSize == 0 {
		return out
	}
	lo, hi := im.minFrames, im.validFrames
	out = append(out, pcCut{"WAL cut after the checkpointed frames", at(lo)})
	if hi > lo {
		f := lo + rng.IntN(hi-lo+1)
		out = append(out, pcCut{fmt.Sprintf("WAL cut after frame %d of %d..%d", f, lo, hi), at(f)})
		b := at(lo) + rng.IntN(at(hi)-at(lo))
		out = append(out, pcCut{fmt.Sprintf("WAL torn at byte %d (frames %d..%d)", b, lo, hi), b})
	}
	if lo == 0 {
		out = append(out, pcCut{"WAL header torn", rng.IntN(32)})
	}
	return out
}

// pcSchedule is schedule k: large enough for its row to span pages, and
// recognisable whole.
func pcSchedule(k int) plant.Schedule {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := plant.Schedule{ScheduleID: fmt.Sprintf("s%06d", k), PlantID: "p1", CreatedAt: t0.Add(time.Duration(k) * time.Second), CreatedBy: "powercut (installer)"}
	for i := range 60 {
		s := t0.Add(time.Duration(k*60+i) * time.Minute)
		v := float64((k*60 + i) % 101)
		sc.Commands = append(sc.Commands, plant.ScheduledCmd{Command: "opModMaxLimW", Start: s, End: s.Add(time.Minute), Value: &v})
	}
	return sc
}

// pcWriter drives a store the way the daemon does, in grants: each grant
// records pcTicksPerGrant poll rounds of the four crash devices (group
// commits every 20 ms, rollups as the data's clock passes intervals),
// and makes pcOpsPerGrant outbox enqueues (each message k with the mark
// "pc" = k in its transaction), acknowledgements every third one, and a
// schedule put (and an old one deleted) every sixth.
const (
	pcTicksPerGrant = 40 // 16 images of the 640 ticks
	pcOpsPerGrant   = 30
	pcTicks         = 640 // 53 minutes of 5 s rounds: Recent (the last hour) sees all raw data
	pcMark          = "pc"
	pcStream        = "log/p1"
)

func TestPowerCut(t *testing.T) {
	t.Parallel() // its own database files
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.db")
	var clock atomic.Int64
	clock.Store(crashT0)
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	s, err := Open(t.Context(), Config{Path: path, BatchInterval: 20 * time.Millisecond, Now: now,
		Plants: []PlantInfo{{ID: "p1"}}}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := runStore(t, s)
	defer stop() // before Close
	ctx := t.Context()

	grants := make(chan struct{}, 1)
	var wg sync.WaitGroup
	werr := make(chan error, 2) // the writers' first error each
	fail := func(err error) { werr <- err }
	wg.Add(2)
	go func() { // the poller
		defer wg.Done()
		tick := int64(0)
		for range grants {
			for range pcTicksPerGrant {
				if tick >= pcTicks {
					return
				}
				for d := range int64(crashDevices) {
					m := crashMeasurement(tick*crashDevices + d)
					for !s.Record(m) {
						if err := s.Flush(ctx); err != nil {
							fail(err)
							return
						}
					}
				}
				clock.Store(crashT0 + (tick+1)*crashStepMs)
				tick++
				time.Sleep(time.Millisecond) // a poller's pace, not an assertion
			}
		}
	}()
	outboxGrants := make(chan struct{}, 1)
	go func() { // the uplink and grid control
		defer wg.Done()
		k := 0
		for range outboxGrants {
			for range pcOpsPerGrant {
				k++
				seqs, err := s.EnqueueBatch(ctx, []OutboxAppend{{Stream: pcStream, Payload: []byte(strconv.Itoa(k))}},
					&OutboxMark{Key: pcMark, Value: int64(k)})
				if err != nil || seqs[0] != uint64(k) {
					fail(fmt.Errorf("enqueue %d: seq %v, %v", k, seqs, err))
					return
				}
				if k%3 == 0 {
					if err := s.AckBatch(ctx, map[string]uint64{pcStream: uint64(k - 2)}); err != nil {
						fail(err)
						return
					}
				}
				if k%6 == 0 {
					if err := s.PutSchedule(ctx, pcSchedule(k)); err != nil {
						fail(err)
						return
					}
					if k%12 == 0 && k > 60 {
						if err := s.DeleteSchedule(ctx, fmt.Sprintf("s%06d", k-60)); err != nil {
							fail(err)
							return
						}
					}
				}
			}
		}
	}()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	salts := map[uint64]bool{}
	var images, checks, backfilledSeen, rollups, outbox, schedules int
	for done := false; !done; {
		select {
		case grants <- struct{}{}:
		default:
		}
		select {
		case outboxGrants <- struct{}{}:
		default:
		}
		im := takeImage(t, path)
		images++
		salts[im.salt] = true
		if im.backfilled > 0 {
			backfilledSeen++
		}
		for i, c := range im.cuts(rng) {
			// -short checks the whole WAL and one other cut per image, in
			// turn over the kinds, so every kind is still cut.
			if testing.Short() && i > 0 && i != 1+images%4 {
				continue
			}
			r, o, sc := checkPowerCut(t, fmt.Sprintf("image %d (%d frames, %d checkpointed), %s", images, im.validFrames, im.minFrames, c.name),
				im.db, im.wal[:c.n])
			checks++
			rollups, outbox, schedules = rollups+r, outbox+o, schedules+sc
		}
		select {
		case err := <-werr:
			t.Fatal(err)
		default:
		}
		done = clock.Load() >= crashT0+pcTicks*crashStepMs
	}
	close(grants)
	close(outboxGrants)
	wg.Wait()
	stop()
	t.Logf("%d images of the running store, %d power cuts checked (%d 5-minute rollups compared with the raw samples, %d outbox messages, %d schedules); the WAL in %d generations (checkpoints that restarted it), %d images with checkpointed frames",
		images, checks, rollups, outbox, schedules, len(salts), backfilledSeen)
	if len(salts) < 2 && backfilledSeen == 0 {
		t.Errorf("no checkpoint ran while the images were taken: the power cuts never met one")
	}
}

// checkPowerCut writes a disk image (the database file and its WAL as the
// cut left them) to a directory of its own, opens it with Open and checks
// it: integrity, rollups that agree with the raw samples present, an
// outbox whose messages, acknowledgements and mark are of one moment,
// and schedules that are whole.
func checkPowerCut(t *testing.T, what string, dbImage, walImage []byte) (rollups, outbox, schedules int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.db")
	if err := os.WriteFile(path, dbImage, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", walImage, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), Config{Path: path, Plants: []PlantInfo{{ID: "p1"}},
		Now: func() time.Time { return time.UnixMilli(crashT0 + (pcTicks+1)*crashStepMs) }}, testLogger(t))
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer s.Close()
	stop := runStore(t, s)
	stop() // rolls up everything
	ctx := t.Context()

	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	err = db.QueryRow(`PRAGMA integrity_check`).Scan(&ok)
	db.Close()
	if err != nil || ok != "ok" {
		t.Fatalf("%s: integrity_check %q, %v", what, ok, err)
	}

	// Rollups: each 5-minute row of a device (Day, from the rollups)
	// against the 1-minute rows computed from the raw samples (Recent:
	// the hour up to the newest sample, every sample here; its minutes are
	// complete, 12 polls each). A rollup present whose raw samples the cut
	// lost, or computed from other samples, differs.
	for d := range crashDevices {
		dev := "d" + strconv.Itoa(d)
		day, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: dev, SetType: plant.SetPowerAc, Period: plant.PeriodDay,
			Date: time.UnixMilli(crashT0).UTC()})
		if errors.Is(err, ErrUnknownDevice) {
			continue // not polled before the cut
		}
		if err != nil {
			t.Fatalf("%s: %s day: %v", what, dev, err)
		}
		recent, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: dev, SetType: plant.SetPowerAc, Period: plant.PeriodRecent})
		if err != nil {
			t.Fatalf("%s: %s recent: %v", what, dev, err)
		}
		minutes := map[int64]float64{}
		var lastMinute int64 = -1
		for i, r := range recent.Rows {
			m := r.Start.UnixMilli()
			if i > 0 && m != lastMinute+minuteMs {
				t.Fatalf("%s: %s: raw samples missing between %v and %v (a cut loses only the newest)", what, dev,
					time.UnixMilli(lastMinute).UTC(), r.Start)
			}
			if v, ok := r.Values["activePower"]; ok {
				minutes[m] = v
			}
			lastMinute = m
		}
		if len(recent.Rows) > 0 && recent.Rows[0].Start.UnixMilli() != crashT0 {
			t.Fatalf("%s: %s: the raw samples start at %v, not at the first poll", what, dev, recent.Rows[0].Start)
		}
		compared := 0
		for _, r := range day.Rows {
			v, ok := r.Values["activePower"]
			if !ok {
				continue
			}
			start := r.Start.UnixMilli()
			sum, n := 0.0, 0
			for m := start; m < start+bucketMs; m += minuteMs {
				if x, ok := minutes[m]; ok {
					sum += x
					n++
				}
			}
			if n == 0 && start+bucketMs <= lastMinute {
				t.Fatalf("%s: %s: a rollup at %v over raw samples the image does not hold", what, dev, r.Start)
			}
			if n < int(bucketMs/minuteMs) {
				continue // the newest interval: its last minute is still running
			}
			if want := sum / float64(n); math.Abs(v-want) > 0.02 {
				t.Fatalf("%s: %s: rollup at %v says activePower %v, the raw samples %v", what, dev, r.Start, v, want)
			}
			compared++
		}
		rollups += compared
		if len(recent.Rows) >= 10 && compared == 0 {
			t.Fatalf("%s: %s: %d minutes of raw samples and no complete rollup to compare", what, dev, len(recent.Rows))
		}
	}

	// Outbox: message k was enqueued with the mark k in one transaction
	// and acknowledged prefixes deleted, so the image holds either both
	// or neither, its messages are one run of seqs ending at the mark,
	// and the next seq is the mark's + 1 (none reused).
	mark, marked, err := s.Mark(ctx, pcMark)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := s.OutboxStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range streams {
		outbox += st.Depth
		if st.Stream != pcStream {
			t.Fatalf("%s: outbox stream %q", what, st.Stream)
		}
		if !marked || st.Last != uint64(mark) || st.Depth != int(st.Last-st.First+1) {
			t.Fatalf("%s: outbox holds seqs %d..%d (%d messages), mark %d (%v): not of one moment", what, st.First, st.Last, st.Depth, mark, marked)
		}
		msgs, err := s.PeekAfter(ctx, pcStream, 0, st.Depth+1)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if string(m.Payload) != strconv.FormatUint(m.Seq, 10) {
				t.Fatalf("%s: outbox seq %d holds %q", what, m.Seq, m.Payload)
			}
		}
	}
	seqs, err := s.EnqueueBatch(ctx, []OutboxAppend{{Stream: pcStream, Payload: []byte("after")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if seqs[0] != uint64(mark)+1 {
		t.Fatalf("%s: the next outbox seq is %d after the mark %d", what, seqs[0], mark)
	}

	// Schedules: each one present whole, as written.
	scs, err := s.Schedules(ctx, "p1")
	if err != nil {
		t.Fatalf("%s: schedules: %v", what, err)
	}
	for _, sc := range scs {
		k, err := strconv.Atoi(strings.TrimPrefix(sc.ScheduleID, "s"))
		if err != nil || !reflect.DeepEqual(sc, pcSchedule(k)) {
			t.Fatalf("%s: schedule %s is not the one written (%d commands)", what, sc.ScheduleID, len(sc.Commands))
		}
		if int64(k) > mark {
			t.Fatalf("%s: schedule %s present, but the outbox mark written before it is %d", what, sc.ScheduleID, mark)
		}
	}
	return rollups, outbox, len(scs)
}
