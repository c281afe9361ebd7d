// Package store is plantd's storage: every measurement the poller reads,
// its 5-minute, hourly and daily rollups, the plant and device logs, the
// grid-control schedules and the MQTT outbox, in one SQLite database (WAL)
// that survives power cuts and stays small on an SD card.
//
// # Job
//
// [Open] opens or creates the database and applies the migrations;
// [Store.Run] is the single writer goroutine; [Store.Close] closes.
// [Store.Record] and [Store.Log] queue without blocking; [Store.QuerySet],
// [Store.DeviceSets] and [Store.Logs] answer the HTTP API;
// [Store.Health] feeds /healthz and, with [Store.Stats], /metrics (through
// cmd/plantd's collector); [Store.Usage] gives both the storage's wear: the
// process's block-layer writes (write_bytes of /proc/self/io, the whole
// process's) and the size of the database file and its WAL;
// [Store.Flush] waits until what was queued is committed.
// cmd/plantd wires it: after each successful poll,
//
//	dl, _ := live.Device(sample.Device)
//	st.Record(store.Measurement{PlantID: dl.Info.PlantID, DeviceID: dl.Info.ID,
//		Kind: dl.Info.Kind, Measures: dl.Info.Measures, Time: sample.Time,
//		Readings: dl.Readings})
//
// and it runs Run(ctx) beside the poller. With a fast simulated clock (the
// demo), record the simulated time and pass the simulated clock as
// Config.Now: intervals, energies and gaps are judged on the data's clock,
// and a pair of polls further apart than the gap limits below (in
// simulated time) gives no energy.
//
// # Import boundary
//
// store imports the standard library, plantd/plant (the domain types:
// Reading, Channel, SetType, SetQuery, Period, LogEntry, LogQuery,
// Schedule and its sentinel errors), plantd/plant/kind (device
// kinds) and github.com/mattn/go-sqlite3. It must not import devices, poller, modbus,
// config, httpapi, mqtt, gridcontrol or cmd, nor Gin or paho: it stores
// and answers in domain terms, and knows no SunSpec point, no HTTP and no
// MQTT. (Its tests use sim, devices and modbus to read the
// simulated plant the way the daemon does.)
//
// # Schema
//
// Migrations are numbered (migrations[i] sets PRAGMA user_version to i),
// one transaction each; a database with a newer user_version is refused
// with ErrSchemaTooNew before anything writes to it. The connection is
// WAL, synchronous=NORMAL, foreign keys on, busy_timeout 5 s,
// BEGIN IMMEDIATE; one writing connection, up to four read-only ones.
//
//	device(id, name, plant, kind, measures) API devices (measures: a sub-meter's consumer); per plant one balance source (kind 'plant')
//	series(id, device, channel, idx)   integer ids of device × channel × input
//	raw_chunk(id, t0, device, n, tn, v) a device's raw samples of one minute, compressed in v
//	r5m, r1h, r1d(src, t, v)           per source and interval start: per-series aggregates packed
//	meta(key, value)                   the rollup watermark, the outbox marks, devices' deactivation times
//	log(id, t, level, code, message, plant, device)
//	schedule(id, plant, created, body)
//	outbox(stream, seq, created, payload), outbox_seq(stream, next)
//	control_default(device, model, addr, read, regs)   grid control: a control model as first read
//	control_owner(device, control)     grid control: the controls plantd wrote and has not restored
//	device_quirk(device, quirk, since) grid control: what a device's answers showed (limit-needs-enable-toggle)
//	consumer_guard(device, state)      the energy manager: a consumer's guards, replaced at every switch
//	price(source, t, tend, eur_mwh, fetched) tariffs: day-ahead market prices per provider and zone
//
// Times are Unix ms (UTC). Raw samples are kept in chunks, a row per
// device and minute (t0 the minute's start, n samples, the last at tn),
// keyed by minute, then device (id = t0/60000 << 24 + device): the
// minute's chunks of all devices are appended at one place of one
// B-tree. A row per poll (schema versions 1–3: raw(t, device, v), 79
// bytes a row) wrote a leaf page per commit and its 20 rows a second of a
// 20-device plant took 130 MiB a day before any overhead; keyed
// (device, t0) a minute's chunks would dirty a leaf per device.
// raw_chunk is a rowid table: as WITHOUT ROWID (an index B-tree) a chunk
// over about 1000 bytes spilled into an overflow page of its own, and
// scripts/wear saw 23 WAL frames a minute for 20 devices instead of 12.
// The rollup tables are WITHOUT ROWID, keyed (source, t), per-series
// aggregates packed. BenchmarkLayout measures the row layouts at the
// daemon's cadence: rows per (series, t) wrote 6049 bytes to the disk
// per sample, packed rows per (t, device) 123.
//
// A chunk (codec.go) holds its samples' times as delta-of-delta varints
// and, per sample, the series (only when they change), a bitmap of the
// values that differ from the series' previous one (95 % of the
// simulator's values at 1 s repeat and cost a bit), and those values as
// deltas of their exact decimal mantissa (v = m / 10^k or m · 10^-k, k ≤
// 6, what SunSpec scale factors give) against the series' previous value,
// else the 8 bytes of the float: every value round-trips bit-exact
// (FuzzChunk). A minute of the simulator's 16.5 values a poll at 1 s is
// about 400 bytes (1.2 kB without the bitmap). Migration 4 converts an
// older database's raw rows into chunks in its one transaction
// (TestMigrateRawChunks): a day of 20 devices at 1 s, 1.7 million rows,
// took 5 s on a 2-core x86 server. Rollup
// entries hold the count, the mean, min and max (min and max for the
// total powers only: activePower, reactivePower, apparentPower,
// dcPowerInput and the energy-balance powers) quantised to a resolution
// per unit (0.01 W, V, %, °C; 0.001 A; 0.0001 Hz and power factor; 1 Ω),
// and the interval's energy to 1 mWh.
//
// # Writes
//
// Record and Log put an entry on a bounded channel (QueueLen) and never
// block; a full queue, read-only storage or an unknown plant refuses it,
// counted in Stats.Dropped and logged at most once a minute. Run commits
// the queue in transactions of up to BatchRows entries or BatchInterval
// after the first (the daemon's database.commitInterval, default 10 s),
// with prepared statements; a batch holding a log entry commits at most a
// second after it was queued, and Flush commits at once. A measurement
// goes into its device's open chunk minute in memory, which is written
// (one row) at the commit of the batch in which the device's next minute
// begins, once the device was quiet for idleRollup (15 s), and at Flush
// and when Run ends; the first minute of a device the writer knew no
// samples of (at the first start, a new device, one back after more
// than an hour) is written at every commit as well, so that its values
// show at once; a sample of a minute already written (late, or a
// repeated time, which replaces the stored one) is merged into that
// minute's row at once. Stats.Written counts samples when they are
// written, as the rows gained them (a repeated time counts once). A 20-device plant polled every 1 s thus writes 20 chunks of
// about 400 bytes a minute, appended in 2–3 pages, instead of 200 rows
// at every 10 s commit. scripts/wear measures it (20 devices polled
// every 1 s, 16.5 values a poll, MQTT off, 10 minutes; write_bytes of the
// process plus the pages the next checkpoint still owes): 99 MiB/day
// (68 without the pages owed; 3.7 bytes written per value; the raw table
// 0.45 bytes per value), against 535 MiB/day (379; 19.3; 4.75) with a
// row per poll (schema version 3) measured beside it; 100 devices: 251
// MiB/day, 2.0 bytes per value, against 1678 and 12.7. Writing each open
// chunk again at every commit, so that a crash would lose only the
// commit interval, wrote 253 MiB/day in a 7-minute run (the minute's
// chunk once: 119): a minute of raw samples more in the window a crash
// may lose is what spares that. A batch that fails (disk full) is counted in
// Stats.Failed and reported by Health, and the open chunks are as before
// it; the next batch tries again. When Run's context ends it commits
// what is queued and the open chunks, rolls up everything (the last,
// partial interval too) and returns nil.
//
// A sample stamped more than Config.FutureTolerance (default 5 s; the
// daemon passes its longest poll interval) beyond Config.Now is refused,
// at Record and again when its batch is written (the clock may have been
// set back in between), counted in Stats.Dropped. Rows of the clock's
// future already stored (written while the clock was ahead) are kept, but
// Recent and the rollup horizon look only up to Now + FutureTolerance, so
// they never hide the present.
//
// A sample older than the raw retention (counted back from the newest
// sample, never from later than Config.Now) is dropped: retention would
// delete it before its interval could be rolled up again.
//
// One Store per database: Open takes an exclusive flock on
// path+".lock" (holding its pid) and refuses with ErrLocked, naming the
// holder, while another process or Store holds it. Close closes the
// read-only connections first and checkpoints the WAL into the database
// file (wal_checkpoint(TRUNCATE)) before closing the writer, so after a
// clean stop the database file alone is complete. [Backup] copies a live
// database with SQLite's online backup API.
//
// Durability: a committed batch survives a crash of plantd (SIGKILL,
// panic); what a crash loses are the raw samples not yet written: of each
// device its open minute (up to 60 s of samples) and, of a minute just
// complete, what waits for the next commit (up to BatchInterval), so at
// most a minute plus BatchInterval (70 s at the default), and whatever
// log entries were queued in the last second. Rollups, the watermark,
// schedules, grid-control state (control_default, control_owner,
// device_quirk), consumers' guards (consumer_guard), market prices (price) and the outbox (Enqueue, Ack) commit in their own
// transactions at once, so nothing of them that was acknowledged is
// lost. A power cut never corrupts the database (WAL, checksummed
// frames), but with synchronous=NORMAL it may lose, besides that, the
// last commits the kernel had not yet written back (up to 40 s: a dirty
// page is written back once 30 s old by a flusher that runs every 5 s,
// and a grown file's size waits for ext4's 5 s journal commit; measured
// by internal/powercut, README Storage); checkpoints sync, and so do the outbox's seq reservations
// (ReserveSeqs, SyncMark: synchronous=FULL for that commit).
//
// # Energy
//
// Each device's energies are computed per pair of consecutive polls and
// spread over the pair's span in proportion to time:
//
//   - from the device's lifetime counter (pvGenerationTotal,
//     gridConsumptionTotal, gridFeedInTotal, dcEnergyInput per input) when
//     both polls have it. The counter is the truth for totals, but a
//     counter moves in steps (1 Wh, or 1 kWh on coarse meters): the pairs
//     between two moves of the counter form a run, and the step that ends
//     the run is spread over the run's pairs in proportion to their
//     integrated power (by time when no power is known). So a kWh counter
//     gives rows that follow the power curve and totals that equal the
//     counter's. Until the counter moves, the open run's pairs take their
//     integrated power; when the step arrives, the intervals back to the
//     run's first pair with power (at most 24 h) are rolled up again. A
//     step must be ≥ 0 and at most 5 MW × the run's span + 1 kWh; a counter
//     that goes back (a replaced device, an acc32 wrap, a reset) or jumps
//     further starts a new baseline: that pair's energy comes from
//     integrated power instead, never a negative or giant interval, and a
//     warning is logged. A counter that stands still while the run's
//     integrated power exceeds its step by more than 2 kWh is stuck: the
//     run takes integrated power, and a warning is logged once per
//     counter. The first run after plantd starts (or after a gap) takes
//     its whole step, though the counter may have stood anywhere within
//     that step when polling began;
//   - else from the power (pvGeneration, gridConsumption, gridFeedIn,
//     batteryCharging, batteryDischarging, dcPowerInput) integrated with
//     the trapezoid rule. Every power is bounded by the plausibility check
//     of package plant, so this energy is at most the bound × the span.
//
// A counter's difference is spread across a gap of up to 1 h between
// polls, power integrated across up to 15 min; longer gaps give no energy
// (the intervals in them are unmeasured, and the energy the device counted
// meanwhile is not attributed to any interval).
//
// A plant's energy balance is computed per 5-minute interval from its
// devices' energies with the rules of the live balance, plant.Flows.Derive
// (inverters give pvGeneration, grid meters gridConsumption and
// gridFeedIn, batteries batteryCharging and batteryDischarging; a meter
// that measures one consumer alone, Measurement.Measures, is no grid meter
// by plant.DeviceInfo.GridMeter and counts in no balance: its draw is
// inside the consumption already; totalConsumption = PV +
// gridConsumption + batteryDischarging − gridFeedIn − batteryCharging,
// selfConsumption, directConsumption, selfSupply; batteryStateOfCharge the
// mean of the batteries), stored as the balance source's rollups, and summed
// to hours and days. autarkyRate (selfSupply / totalConsumption),
// selfConsumptionRate (selfConsumption / pvGeneration) and totalGeneration
// (= pvGeneration) are computed from the sums of whatever interval is asked
// for.
//
// # Rollups and retention
//
// The writer rolls up in steps of at most an hour, one transaction each:
// the 5-minute rows of every device with data and of every plant's
// balance, the hourly rows of the local hours they touch (from the
// 5-minute rows), the daily rows of the local days those touch (from the
// hourly rows), and the watermark below which rollups are complete. A
// crash anywhere in a step rolls it all back and the step is done again
// from the raw samples. An interval is rolled up once a sample 30 s past
// its end was written (so polls of slow devices land in it; with the
// minute chunks about 70 s after its end), when nothing was
// recorded for 15 s, and when Run ends. A sample that arrives late, or
// that closes a gap reaching back before the watermark, moves the
// watermark back in its own batch's transaction, and the intervals it
// touches are rolled up again. Month, Year and Total answers come from
// daily rows.
//
// Retention deletes the raw chunks whose minute ended RawRetention
// (default 7 days) before the oldest of the wall clock, the newest sample
// and the watermark, and log entries beyond LogLimit, at most 2000 rows
// per transaction once a minute, only while the queue is empty.
//
// # Queries
//
// Periods, resolutions and units (DESIGN §4):
//
//	Recent  OneMinute       the hour up to the scope's newest sample, computed from raw samples
//	Day     FiveMinutes     the plant-local day: 276, 288 or 300 rows when fully measured
//	Week    FifteenMinutes  Monday to Sunday (ISO 8601) containing Date;
//	        OneHour         for EnergyBalance with WithTotal
//	Month   OneDay          from daily rows
//	Year    OneMonth        daily rows summed per local month
//	Total   OneYear         daily rows summed per local year
//
// Recent ends with the last complete minute before the newest sample the
// writer has committed into its open minutes (a device's minute is
// written when it is complete, so the stored samples alone would end a
// minute earlier): while polling, a minute shows within BatchInterval
// after it ends.
//
// A plant's Recent (EnergyBalance, EnergyMix) reads of each inverter,
// grid meter and battery only the channels the balance takes from its kind
// (the energy fields' powers and counters, the state of charge), decoded
// by a reader that converts no other value, and runs the bucket engine
// for those fields only; devices of other kinds are not read. A device
// with two consecutive polls spanning a minute without a poll is computed
// from all its channels, as the rollups do: the engine gives such a
// minute an interval when any channel has energy in it.
// TestRecentMinutesReference checks that both give the same intervals bit
// for bit. BenchmarkQuery/RecentPlant (20 devices polled every 5 s) takes
// 7 ms of CPU a query on a 2-core x86 server, against 46 ms when every
// channel was read (0.14-0.17 over 4 alternating pairs).
//
// Recent, Day and Week give powers as interval means in W; Month, Year and
// Total energies in Wh; ReturnEnergyValues gives Wh per interval for the
// EnergyAndPower* sets. The W of an energy field (pvGeneration,
// gridFeedIn, ..., the balance) is the interval's energy divided by its
// length, so W and Wh of one interval always agree. Other fields
// (voltages, SoC, ...) are sample means in every period. EnergyDc's
// dcEnergyInput is Wh per interval in every period. Total (WithTotal)
// sums energies in Wh over the whole period and averages the rest.
//
// A row's Start (plant.SetRow) is the UTC instant its interval starts;
// the API formats it in the plant's zone. Interval boundaries are plant-local: on the 23-hour
// day the missing hour has no rows; on the 25-hour day the repeated local
// hour appears twice, in chronological order, its two halves told apart by
// their UTC instants (the API can add the UTC time or the offset). Hours
// are local hours (a zone at +9:30 starts them at :30 UTC); 5-minute and
// 15-minute intervals are the same in every zone whose offset is a
// multiple of 15 minutes (all current ones).
//
// An interval without data has no row, a field without data no value,
// never 0.
//
// EnergyMix is plant-scoped data: it answers for a plant (PlantID) and for
// a meter device of the plant (the grid connection that measures it):
// pvConsumptionRate = directConsumption / (directConsumption +
// batteryDischarging + gridConsumption), batteryConsumptionRate and
// gridConsumptionRate likewise, and totalConsumption.
// EnergyAndPowerConsumption is a consumer's (kind consumer): consumption
// in W from its consumption channel and, as Wh per interval, from its
// consumptionTotal counter, like the other EnergyAndPower sets.
//
// PowerAc fallback (the spec's "fallback when VoltagePhaseA values are
// missing"), per interval and only for fields the device did not measure:
// a total power (active, reactive, apparent) is the sum of the phases it
// has; a phase voltage is the line-to-line voltage starting at it divided
// by √3 (voltagePhaseA = voltagePhaseA2B/√3, B from B2C, C from C2A); and
// vice versa a line-to-line voltage is √(a² + b² + ab) of its two measured
// phase voltages (phases 120° apart). Per-phase powers and currents are
// never invented from totals.
//
// # Failures
//
// Read-only storage (a read-only file or mount) at Open gives a Store that
// answers queries from what is stored, refuses Record and Log, and says
// ErrReadOnly in Health; Run retries writing every 30 s and resumes when
// the storage is writable again. It resumes on the file it opened: a file
// gone meanwhile is created anew with the schema and the device catalogue
// the store holds (so recording goes on; what was stored before is not in
// it, and an Error says so), another file at the path is refused
// (ErrFileGone in Health, still read-only, until plantd restarts). A full disk (ENOSPC, or the file size
// limit: EFBIG) is ErrDiskFull in Health and Stats.LastError; the batches
// meanwhile are lost and counted, and Health clears with the next
// successful commit. Open fails only when there is nothing to serve: a
// newer schema (ErrSchemaTooNew), a file whose header or schema SQLite
// cannot read (ErrCorrupt, with how to recover), a new database on
// read-only or full storage. cmd/plantd exits 78 (EX_CONFIG) on the first
// two, which the systemd unit does not restart (RestartPreventExitStatus):
// restarting cannot help, and a restart every 5 s would hide the message.
//
// A database file deleted (or replaced) while the store writes to it:
// SQLite writes on into the open, deleted file. The store takes the file's
// device and inode at Open and compares them with what the path names at
// every Health call and every second in Run; when they differ, Health says
// ErrFileGone, logged once as an Error with what to do (restart plantd
// now: the deleted file is lost if plantd is killed or the power fails).
// A clean stop (Close) then writes the database it wrote to back with
// VACUUM INTO (a temporary file beside it, synced, linked to its name
// without replacing anything): to the path when it is free, removing a
// -wal or -shm left there, which SQLite would apply to the copy; beside
// the other file as path.recovered-<UTC time> when the path names another
// file, which is left as it is. Either way an Error names the path (and
// the copy); if the copy fails, the Error says the data is lost. Writing
// back takes about as long as plantd backup of the same database.
//
// Corruption: Open runs PRAGMA quick_check on a read-only connection
// (bounded by Config.CheckTimeout, default 1 min; a check that does not
// finish is logged and given up), and Run repeats it daily at 03:00 local
// time beside the writer, so polling never waits for it. A damaged file
// makes Health ErrCorrupt, stops every write (Record and Log refuse, no
// batch, rollup, retention or checkpoint touches the file again), keeps
// the file as it is and logs how to recover: put back a copy made with
// plantd backup, or move the file (with -wal and -shm) aside and start
// with a fresh one. Damage SQLite reports while Open loads the device
// catalogue or the writer's state (the watermark, the newest samples) is
// treated the same way: Open returns the Store, which serves what can be
// read (the catalogue as far as it was read) and says ErrCorrupt in
// Health. BenchmarkQuickCheck times the check on a year of a 20-device
// plant.
//
// # Logs, schedules, outbox
//
// Logs are kept up to LogLimit entries (default 100000), queried newest
// first by plant (its devices' entries included) or device and time
// range, with an opaque cursor. Schedules (plant.Schedule) are stored as
// their JSON, the encoding every plantd wrote into the body column, so
// rows of earlier versions load (Schedules, PutSchedule, DeleteSchedule;
// a body that does not decode is logged and left out). The outbox
// keeps MQTT messages per stream with a sequence number that is never
// reused (Enqueue, Peek, Ack; EnqueueBatch appends many in one
// transaction together with a mark, a named integer by which a publisher
// remembers how far it enqueued a source; PeekAfter reads on from a
// sequence number; OutboxStreams gives depth, bytes and oldest message
// per stream; TrimOutbox drops by count and age, leaving a gap in the
// sequence numbers). Never reused across a power cut either, which loses
// the outbox's last commits: a publisher reserves seqs per stream in a
// durable floor (ReserveSeqs, a commit synced to the disk, one per block
// of seqs) before it publishes them, and a start that may have lost
// commits (another kernel boot than the floors') numbers every stream
// above its floor (seqfloor.go); ReleaseSeqs lowers the floors at a clean
// stop, SyncMark is SetMark synced.
//
// Imports: plantd/plant, plantd/plant/kind
package store
