package mqtt

import (
	"context"
	"encoding/json"
	"maps"
	"sort"
	"time"

	"plantd/plant"
	"plantd/store"
)

// produce writes messages: live values each LiveInterval while
// connected (into their in-memory slots, live.go), log entries as they
// come and rollups as they complete (into the outbox); and it applies
// the caps and refreshes the per-stream figures.
func (u *Uplink) produce(ctx context.Context) {
	live := time.NewTicker(u.cfg.LiveInterval)
	defer live.Stop()
	roll := time.NewTicker(u.cfg.RollupInterval)
	defer roll.Stop()
	trim := time.NewTicker(time.Minute)
	defer trim.Stop()
	stats := time.NewTicker(5 * time.Second)
	defer stats.Stop()
	u.trim(ctx)
	u.rollups(ctx)
	for {
		select {
		case <-ctx.Done():
			// What was handed over is written, not lost.
			u.drainLogs(context.WithoutCancel(ctx), nil)
			return
		case e := <-u.logs:
			u.drainLogs(ctx, &e)
		case <-live.C:
			if u.connected.Load() {
				u.publishLive(ctx)
			}
		case <-roll.C:
			u.rollups(ctx)
		case <-trim.C:
			u.trim(ctx)
		case <-stats.C:
			u.refreshStreams(ctx)
		}
	}
}

// enqueue writes messages (and a mark) and wakes the sender; errors are
// logged, the messages are then lost (the storage is failing).
func (u *Uplink) enqueue(ctx context.Context, msgs []store.OutboxAppend, mark *store.OutboxMark) bool {
	if len(msgs) == 0 && mark == nil {
		return true
	}
	if _, err := u.deps.Outbox.EnqueueBatch(ctx, msgs, mark); err != nil {
		if ctx.Err() == nil {
			u.log.Warn("outbox write failed: messages lost", "messages", len(msgs), "err", err)
		}
		return false
	}
	streams := make([]string, 0, len(msgs))
	for _, m := range msgs {
		streams = append(streams, m.Stream)
	}
	u.notify(streams...)
	return true
}

// drainLogs writes the queued log entries, one message per entry, in
// one transaction.
func (u *Uplink) drainLogs(ctx context.Context, first *plant.LogEntry) {
	var msgs []store.OutboxAppend
	add := func(e plant.LogEntry) {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		e.Time = e.Time.UTC()
		b, _ := json.Marshal([]plant.LogEntry{e})
		msgs = append(msgs, store.OutboxAppend{Stream: logStream(e.PlantID), Payload: b, Created: time.Now()})
	}
	if first != nil {
		add(*first)
	}
	for len(msgs) < 1000 {
		select {
		case e := <-u.logs:
			add(e)
			continue
		default:
		}
		break
	}
	u.enqueue(ctx, msgs, nil)
}

// balanceItem is a live or rollup item of a plant: the energy balance
// fields of the HTTP API and the time (RFC 3339 UTC).
type balanceItem struct {
	Time string `json:"time"`
	plant.Balance
}

// deviceItem is a device's live values: field names as the HTTP API's,
// indexed channels as [{"index","value"}].
func deviceItem(d plant.DeviceLive) map[string]any {
	out := map[string]any{"time": d.LastUpdate.UTC().Format(time.RFC3339Nano)}
	type iv struct {
		Index string  `json:"index"`
		Value float64 `json:"value"`
	}
	for _, r := range d.Readings {
		name := r.Channel.Name()
		if r.Channel.Indexed() {
			l, _ := out[name].([]iv)
			out[name] = append(l, iv{Index: plant.IndexLabel(r.Index), Value: r.Value})
			continue
		}
		out[name] = r.Value
	}
	if c := d.Consumer; c != nil {
		// A consumer's output as the live device lists show it.
		out["switchingState"] = c.Switch
		if c.SGReady > 0 {
			out["sgReadyState"] = c.SGReady
		}
		if c.Estimated {
			out["consumptionEstimated"] = true
		}
	}
	return out
}

// publishLive puts every plant's energy balance and the values of the
// devices polled since the last tick into their live streams' slots.
func (u *Uplink) publishLive(ctx context.Context) {
	if u.deps.Live == nil {
		return
	}
	now := time.Now()
	var msgs []liveMessage
	planKeys := map[string][]byte{} // the tariffs' and plans' keys put by this tick
	for _, p := range u.deps.Live.Plants() {
		if b, err := u.deps.Live.EnergyBalance(p.ID); err == nil && !b.Time.IsZero() {
			payload, _ := json.Marshal([]balanceItem{{Time: b.Time.UTC().Format(time.RFC3339Nano), Balance: b}})
			msgs = append(msgs, liveMessage{stream: liveStream(p.ID), payload: payload, created: now})
		}
		if u.deps.EEBus != nil {
			if item, ok := u.deps.EEBus.EEBusItem(p.ID); ok {
				if payload, err := json.Marshal([]any{item}); err == nil {
					msgs = append(msgs, liveMessage{stream: eebusStream(p.ID), payload: payload, created: now})
				}
			}
		}
		if u.deps.Plan != nil {
			pm, pk := u.planMessages(p.ID, now)
			msgs = append(msgs, pm...)
			maps.Copy(planKeys, pk)
		}
		devs, err := u.deps.Live.Devices(p.ID)
		if err != nil {
			continue
		}
		for _, d := range devs {
			if d.LastUpdate.IsZero() || !d.LastUpdate.After(u.lastDevice[d.Info.ID]) || len(d.Readings) == 0 {
				continue
			}
			u.lastDevice[d.Info.ID] = d.LastUpdate
			payload, _ := json.Marshal([]map[string]any{deviceItem(d)})
			msgs = append(msgs, liveMessage{stream: deviceStream(d.Info.ID), payload: payload, created: now})
		}
	}
	if u.putLive(ctx, msgs) {
		maps.Copy(u.lastPlan, planKeys)
	}
}

// rollups enqueues the completed rollups of every plant since its mark,
// at most a day per plant and call, batched into messages of up to
// BatchBytes. The first run starts at the current rollup watermark (the
// history before plantd had an uplink is not sent).
func (u *Uplink) rollups(ctx context.Context) {
	src := u.deps.Rollups
	if src == nil || u.deps.Live == nil {
		return
	}
	upTo := src.RolledUpTo()
	if upTo.IsZero() {
		return
	}
	for _, p := range u.deps.Live.Plants() {
		key := rollupStream(p.ID)
		ms, ok, err := u.deps.Outbox.Mark(ctx, key)
		if err != nil {
			continue
		}
		if !ok {
			// First start with an uplink: from now on.
			u.enqueue(ctx, nil, &store.OutboxMark{Key: key, Value: upTo.UnixMilli()})
			continue
		}
		from, to := time.UnixMilli(ms), upTo
		if to.Sub(from) > 24*time.Hour {
			to = from.Add(24 * time.Hour)
		}
		if !to.After(from) {
			continue
		}
		rows, err := src.Rollups(ctx, p.ID, from, to)
		if err != nil {
			u.log.Warn("reading rollups failed", "plant", p.ID, "err", err)
			continue
		}
		var msgs []store.OutboxAppend
		var batch []json.RawMessage
		size := 0
		flush := func() {
			if len(batch) == 0 {
				return
			}
			b, _ := json.Marshal(batch)
			msgs = append(msgs, store.OutboxAppend{Stream: key, Payload: b, Created: time.Now()})
			batch, size = nil, 0
		}
		for _, r := range rows {
			item := map[string]any{"time": r.Start.Add(5 * time.Minute).UTC().Format(time.RFC3339)}
			for k, v := range r.Values {
				item[k] = v
			}
			b, _ := json.Marshal(item)
			if size+len(b) > u.cfg.BatchBytes {
				flush()
			}
			batch, size = append(batch, b), size+len(b)+1
		}
		flush()
		u.enqueue(ctx, msgs, &store.OutboxMark{Key: key, Value: to.UnixMilli()})
	}
}

// trim applies the caps of every rollup and log stream, counting and
// logging what it dropped; the ack stream is never trimmed. Live rows in
// the outbox (left by a plantd that queued live values there, or the
// seq probes of an interrupted startLive) are all dropped: live values
// are never replayed.
func (u *Uplink) trim(ctx context.Context) {
	streams, err := u.deps.Outbox.OutboxStreams(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	olderThan := now.Add(-u.cfg.MaxAge)
	for _, s := range streams {
		c := classOf(s.Stream)
		if c == classAck {
			continue
		}
		maxRows, before := u.cfg.MaxRows, olderThan
		if c == classLive {
			maxRows, before = 0, now.AddDate(100, 0, 0)
		} else if s.Depth <= maxRows && !s.Oldest.Before(olderThan) {
			continue
		}
		n, err := u.deps.Outbox.TrimOutbox(ctx, s.Stream, maxRows, before)
		if err != nil || n == 0 {
			continue
		}
		total := u.countDropped(s.Stream, uint64(n))
		if c == classLive {
			u.log.Warn("live messages left in the outbox dropped: live values are never replayed", "stream", s.Stream,
				"dropped", n, "dropped_total", total)
			continue
		}
		u.log.Warn("outbox cap reached: oldest messages dropped", "stream", s.Stream, "dropped", n, "dropped_total", total,
			"max_rows", maxRows, "max_age", u.cfg.MaxAge)
	}
	u.refreshStreams(ctx)
}

// countDropped adds n to a stream's dropped messages and returns its
// total.
func (u *Uplink) countDropped(stream string, n uint64) uint64 {
	u.stMu.Lock()
	defer u.stMu.Unlock()
	ss := u.streamLocked(stream)
	ss.dropped += n
	return ss.dropped
}

func (u *Uplink) streamLocked(name string) *streamStats {
	s := u.streams[name]
	if s == nil {
		s = &streamStats{}
		u.streams[name] = s
	}
	return s
}

// refreshStreams reads depth and oldest message per stream for Status:
// the outbox's streams, and the live streams' in memory.
func (u *Uplink) refreshStreams(ctx context.Context) {
	streams, err := u.deps.Outbox.OutboxStreams(ctx)
	if err != nil {
		return
	}
	live := u.live.depths()
	u.stMu.Lock()
	defer u.stMu.Unlock()
	for _, s := range u.streams {
		s.depth, s.oldest = 0, time.Time{}
	}
	for _, s := range streams {
		ss := u.streamLocked(s.Stream)
		ss.depth, ss.oldest = s.Depth, s.Oldest
	}
	for name, s := range live {
		ss := u.streamLocked(name)
		ss.depth += s.Depth
		if !s.Oldest.IsZero() && (ss.oldest.IsZero() || s.Oldest.Before(ss.oldest)) {
			ss.oldest = s.Oldest
		}
	}
}

func sortStreams(s []StreamStatus) {
	// sort.Slice: no sort instantiated for this struct (binary size).
	sort.Slice(s, func(i, j int) bool { return s[i].Stream < s[j].Stream })
}
