package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"plantd/config"
)

// What "sudo plantd check-config" checks beyond the config itself: that
// the user the packaged service runs as can reach every file the config
// names, so that a file only root can read fails the check, not the
// service's next start ("permission denied", exit 78). It runs only as
// root: plantd itself (the unit's ExecReload runs check-config as the
// service user) finds its own access when it reads the files.
//
// Access is told from the files' owners and modes and the user's groups,
// as the kernel's permission check does for a process without
// capabilities; POSIX ACLs and security modules (AppArmor, SELinux) are
// not looked at.

// serviceUser is the user systemd/plantd.service runs plantd as (User=),
// serviceGroups the unit's SupplementaryGroups= (a test keeps them in
// step with the unit).
const serviceUser = "plantd"

var serviceGroups = []string{"dialout"}

// svcUser is the service user as the permission check sees it.
type svcUser struct {
	name  string
	group string // the primary group's name, for the fixes
	uid   uint32
	gids  []uint32
}

// lookupServiceUser finds name and its groups (primary, supplementary in
// /etc/group, and the unit's SupplementaryGroups that exist here).
func lookupServiceUser(name string) (*svcUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s: uid %q, gid %q: not numeric", name, u.Uid, u.Gid)
	}
	su := &svcUser{name: name, group: u.Gid, uid: uint32(uid), gids: []uint32{uint32(gid)}}
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		su.group = g.Name
	}
	ids, _ := u.GroupIds()
	for _, name := range serviceGroups {
		if g, err := user.LookupGroup(name); err == nil {
			ids = append(ids, g.Gid)
		}
	}
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil && !slices.Contains(su.gids, uint32(g)) {
			su.gids = append(su.gids, uint32(g))
		}
	}
	return su, nil
}

// Access the service needs to a file.
const (
	needRead  = 4
	needWrite = 2
	needExec  = 1 // a directory: to reach what is in it
)

// accessProblem is one file the service user cannot reach, and the fix.
type accessProblem struct {
	path    string // the file or directory that lacks the permission
	problem string // naming the user, the file and its owner and mode
	fix     string // the commands that fix it
}

func (p accessProblem) String() string { return p.problem + "; fix: " + p.fix }

// checkAccess lists what u cannot reach of the config file and the files
// the config names: the TLS certificate and key, the MQTT broker's CA and
// client files (read), the database's directory (write) and file (read
// and write), and the serial ports of enabled devices and inputs (read
// and write; a port that is not there is left to run's check).
func checkAccess(cfg *config.Config, file string, u *svcUser) []accessProblem {
	var out []accessProblem
	add := func(what, path string, need int, secret bool) {
		if path == "" {
			return
		}
		if p := u.reach(what, path, need, secret); p != nil {
			out = append(out, *p)
		}
	}
	add("the config", file, needRead, true)
	add("http.tlsCert", cfg.HTTP.TLSCert, needRead, false)
	add("http.tlsKey", cfg.HTTP.TLSKey, needRead, true)
	add("mqtt.caFile", cfg.MQTT.CAFile, needRead, false)
	add("mqtt.clientCert", cfg.MQTT.ClientCert, needRead, false)
	add("mqtt.clientKey", cfg.MQTT.ClientKey, needRead, true)
	if db := cfg.Database.Path; db != "" {
		dir := filepath.Dir(db)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && dir != "/var/lib/plantd" {
			// /var/lib/plantd: the unit's StateDirectory=, made by systemd.
			out = append(out, accessProblem{path: dir, problem: fmt.Sprintf("the database's directory %s does not exist", dir),
				fix: fmt.Sprintf("install -d -o %s -g %s -m 0750 %s", u.name, u.group, dir)})
		} else if err == nil {
			add("the database's directory", dir, needWrite|needExec, false)
			for _, f := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
				if _, err := os.Stat(f); err == nil {
					add("the database", f, needRead|needWrite, false)
				}
			}
		}
	}
	seen := map[string]bool{}
	port := func(s *config.Serial) {
		if s == nil || seen[s.Port] {
			return
		}
		seen[s.Port] = true
		if _, err := os.Stat(s.Port); err == nil {
			add("the serial port", s.Port, needRead|needWrite, false)
		}
	}
	for _, d := range cfg.Devices {
		if d.Enabled {
			port(d.Serial)
		}
	}
	for _, in := range cfg.Inputs {
		port(in.Serial)
	}
	return out
}

// reach checks that u can reach path with need: every directory on the
// way searchable, the file itself as needed. It returns the first
// problem, naming the fix.
func (u *svcUser) reach(what, path string, need int, secret bool) *accessProblem {
	abs, err := filepath.Abs(path)
	if err != nil {
		return &accessProblem{path: path, problem: what + ": " + err.Error(), fix: "give an absolute path"}
	}
	// The directories on the way, from the root down.
	var dirs []string
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		st, err := stat(d)
		if err != nil {
			break // the file's own stat says it
		}
		if !u.may(st, needExec) {
			return &accessProblem{path: d, problem: fmt.Sprintf("%s cannot enter %s (%s), on the way to %s %s", u.name, d, u.describe(st), what, path),
				fix: u.fix(d, st, needExec, false)}
		}
	}
	st, err := stat(abs)
	if err != nil {
		return &accessProblem{path: path, problem: fmt.Sprintf("%s %s: %v", what, path, errors.Unwrap(err)), fix: "create it, or correct the config"}
	}
	if !u.may(st, need) {
		verb := map[int]string{needRead: "read", needRead | needWrite: "read and write", needWrite | needExec: "write in"}[need]
		return &accessProblem{path: path, problem: fmt.Sprintf("%s cannot %s %s %s (%s)", u.name, verb, what, path, u.describe(st)),
			fix: u.fix(path, st, need, secret)}
	}
	return nil
}

func stat(path string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return &st, nil
}

// may reports whether u has the need bits on a file: the owner's bits if
// u owns it, else the group's if u is in its group, else the others'.
func (u *svcUser) may(st *syscall.Stat_t, need int) bool {
	if u.uid == 0 {
		return true
	}
	mode := int(st.Mode)
	var bits int
	switch {
	case st.Uid == u.uid:
		bits = mode >> 6 & 7
	case slices.Contains(u.gids, st.Gid):
		bits = mode >> 3 & 7
	default:
		bits = mode & 7
	}
	return bits&need == need
}

// describe says a file's owner, group and mode: "root:root 0600".
func (u *svcUser) describe(st *syscall.Stat_t) string {
	owner, group := strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
	if x, err := user.LookupId(owner); err == nil {
		owner = x.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("%s:%s %04o", owner, group, st.Mode&0o7777)
}

// fix is the command that gives u the need bits on path: for a secret
// file (the config, a key) owned by root, root:GROUP 0640; for the
// database's directory, u's own; for a serial port, the device's group;
// else the group bits for u's group.
func (u *svcUser) fix(path string, st *syscall.Stat_t, need int, secret bool) string {
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	isChar := st.Mode&syscall.S_IFMT == syscall.S_IFCHR
	bits := ""
	for _, b := range []struct {
		bit int
		c   string
	}{{needRead, "r"}, {needWrite, "w"}, {needExec, "x"}} {
		if need&b.bit != 0 {
			bits += b.c
		}
	}
	switch {
	case secret && st.Uid == 0 && !isDir:
		return fmt.Sprintf("chown root:%s %s; chmod 0640 %s", u.group, path, path)
	case isDir && need&needWrite != 0:
		return fmt.Sprintf("chown %s:%s %s; chmod 0750 %s", u.name, u.group, path, path)
	case isChar:
		g := strconv.Itoa(int(st.Gid))
		if x, err := user.LookupGroupId(g); err == nil {
			g = x.Name
		}
		if slices.Contains(u.gids, st.Gid) {
			return fmt.Sprintf("chmod g+%s %s (a udev rule keeps it: MODE=\"0660\")", bits, path)
		}
		return fmt.Sprintf("usermod -aG %s %s, then restart plantd (or a udev rule giving the port to group dialout: GROUP=\"dialout\", MODE=\"0660\")", g, u.name)
	case st.Uid == u.uid:
		return fmt.Sprintf("chmod u+%s %s", bits, path)
	case slices.Contains(u.gids, st.Gid):
		return fmt.Sprintf("chmod g+%s %s", bits, path)
	}
	return fmt.Sprintf("chgrp %s %s; chmod g+%s %s", u.group, path, bits, path)
}

// checkServiceAccess is check-config's check, run as root only: it
// prints each problem with its fix to w, as "FILE: service user plantd:
// plantd cannot read the config ... (root:root 0600); fix: chown ...",
// and reports whether there was none. name is --user ("": the unit's
// User=; a missing plantd user, as on a laptop or a build machine, skips
// the check; a missing --user is an error).
func checkServiceAccess(cfg *config.Config, file, name string, w io.Writer) (ok bool, err error) {
	if os.Geteuid() != 0 {
		return true, nil
	}
	given := name != ""
	if !given {
		name = serviceUser
	}
	u, err := lookupServiceUser(name)
	if err != nil {
		if !given {
			return true, nil
		}
		return false, fmt.Errorf("--user %s: %w", name, err)
	}
	probs := checkAccess(cfg, file, u)
	for _, p := range probs {
		fmt.Fprintf(w, "%s: service user %s: %s\n", file, u.name, p)
	}
	return len(probs) == 0, nil
}
