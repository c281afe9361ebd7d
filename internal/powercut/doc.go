// Package powercut cuts the power of plantd's disk while plantd runs and
// checks what the disk held: the power-cut promise of README (Storage) is
// that a power cut never corrupts the database and loses at most a
// device's raw samples of the last minute plus database.commitInterval
// (70 s at the default 10 s), plus what the kernel had not yet written
// back (about 30 s).
//
// # Job
//
// [NewDisk] makes the disk: an ext4 image on a loop device (direct I/O)
// whose backing file lies on a second, outer ext4 image, loop-mounted
// too; plantd's database goes on the inner file system ([Disk.Dir]).
// [Disk.Cut] freezes the outer file system (fsfreeze), copies the inner
// image and thaws: the copy is what the disk held at the freeze, every
// write the inner disk had completed and nothing of the inner page cache
// (see [Disk] for what this models and what not; device-mapper targets
// such as dm-flakey or dm-log-writes would do the same with a device's
// write cache modelled, but need a kernel and privileges CI may not
// have). [Mount] mounts an image as the next boot would (the kernel
// replays ext4's journal), checks it with e2fsck -fn and mounts it again.
// [ReadImage] and [Read] read a plantd database's state in the promise's
// terms ([State]: integrity_check, the newest raw sample, the 5-minute
// rollups and the watermark, schedules, log entries, the outbox's streams
// and their sequence numbers).
//
// [Run] puts it together: plantd run on a fresh Disk, its live database
// read every 0.5 s (read-only) into a timeline of its commits, and cuts at
// the times Options.Gap gives; each image is mounted, checked, compared
// with the timeline ([Cut]: the newest raw sample's age at the cut, a
// bound on how long before the cut the oldest commit the image lacks was
// made, and what the image holds that plantd did not, which must be
// nothing) and, with Options.ReopenConfig, opened by plantd itself
// (/healthz storage Ok). With Options.Broker a [Watcher] subscribes to
// the broker plantd publishes to and records per stream the highest seq
// delivered; each image is checked not to let plantd's next start after
// a reboot hand out a seq delivered before the cut again ([State.Reused]:
// the image's outbox_seq, the stream's durable floor, the live mark).
// Mounts and loop devices are undone on every path, a freeze is always
// thawed.
//
// Used by cmd/plantd's TestPowerCut (a few cuts in the first seconds of
// a run) and by scripts/powercut (any number, over minutes, through
// cmd/powercut here).
//
// # Import boundary
//
// powercut imports the standard library, github.com/mattn/go-sqlite3
// (it reads the database with SQL, not through package store, so that
// it sees the file as any SQLite would; its tests use store to write
// one) and github.com/eclipse/paho.mqtt.golang (the Watcher), and runs the programs of
// util-linux (losetup, mount, umount, fsfreeze), e2fsprogs (mkfs.ext4,
// e2fsck), coreutils (cp) and the plantd binary it is given. Everything
// it does needs root.
//
// Imports: none
package powercut
