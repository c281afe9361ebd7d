package mqtt

import (
	"context"
	"fmt"
)

// Durable floors of the outbox streams. The outbox commits without
// syncing (the store's synchronous=NORMAL): a power cut loses its last
// commits, and with them the counters the next start numbers from. So a
// seq of an outbox stream (ack, rollup, log) is published only when the
// stream's durable floor covers it: before publishing a seq above the
// floor it has, the session raises the floor a block ahead
// (Outbox.ReserveSeqs, one commit synced to the disk), and a start that
// may have lost commits numbers above the floor (package store). A power
// cut then shows as a gap in the stream's seqs, never as a seq handed out
// again. The live streams have their own reservation, the mark
// liveSeqMark (live.go), written the same synced way.
//
// seqBlock is how far ahead: one synced write per start and stream that
// publishes, and one per 65,536 messages of a stream. At 20 devices a
// plant's rollup stream takes 288 seqs a day and its log stream a few
// hundred, the busiest live stream (10 s) 8,640: well under one synced
// write a day besides those of the starts, each one fsync of the WAL
// (the frames it forces out would have been written within 30 s anyway,
// plus the meta page of the floor).
const seqBlock = 1 << 16

// coverSeqs makes sure that a stream's durable floor is at or above
// last before its rows up to last are published: it reserves up to
// last+seqBlock when not. Sessions' goroutine only.
func (u *Uplink) coverSeqs(ctx context.Context, stream string, last uint64) error {
	if last <= u.floors[stream] {
		return nil
	}
	floor, err := u.deps.Outbox.ReserveSeqs(ctx, stream, last+u.seqBlock)
	if err != nil {
		return fmt.Errorf("reserve the seqs of %s up to %d: %w", stream, last+u.seqBlock, err)
	}
	u.floors[stream] = floor
	u.reservations.Add(1)
	return nil
}

// releaseSeqs lowers the floors to what the outbox numbered when Run
// ends (nothing is published after), so that a start after a reboot
// continues without a gap. A failure only leaves that gap.
func (u *Uplink) releaseSeqs(ctx context.Context) {
	if err := u.deps.Outbox.ReleaseSeqs(context.WithoutCancel(ctx)); err != nil {
		u.log.Warn("lowering the outbox's seq floors failed: the next start after a reboot leaves a gap in their seqs", "err", err)
	}
}
