package main

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"plantd/config"
	"plantd/internal/proctest"
)

// TestCheckAccess: what a service user in the test's group (so that the
// files' group bits apply to it, root or not) cannot reach of the config
// and the files it names, each with the fix.
func TestCheckAccess(t *testing.T) {
	u := &svcUser{name: "svc", group: "svc", uid: 4242, gids: []uint32{uint32(os.Getgid())}}
	secretFix := func(path string) string {
		if os.Geteuid() == 0 { // root's files: root:GROUP 0640
			return "chown root:svc " + path + "; chmod 0640 " + path
		}
		return "chmod g+r " + path
	}
	pty := proctest.StartPTYPair(t, filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b"))
	port, err := filepath.EvalSymlinks(pty.A) // the pty itself, in /dev/pts
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// setup makes the files in dir (0750) and returns the config and
		// its file.
		setup func(t *testing.T, dir string) (*config.Config, string)
		want  func(dir string) []string // problem and fix per problem
	}{
		{"all reachable", func(t *testing.T, dir string) (*config.Config, string) {
			cfg := &config.Config{HTTP: config.HTTP{TLSCert: file(t, dir, "cert.pem", 0o644), TLSKey: file(t, dir, "key.pem", 0o640)},
				Database: config.Database{Path: filepath.Join(mkdir(t, dir, "db", 0o770), "plantd.db")}}
			file(t, dir, "db/plantd.db", 0o660)
			return cfg, file(t, dir, "plantd.yaml", 0o640)
		}, func(string) []string { return nil }},
		{"config root's only", func(t *testing.T, dir string) (*config.Config, string) {
			return &config.Config{}, file(t, dir, "plantd.yaml", 0o600)
		}, func(dir string) []string {
			f := filepath.Join(dir, "plantd.yaml")
			return []string{"svc cannot read the config " + f + " (", "; fix: " + secretFix(f)}
		}},
		{"a directory on the way", func(t *testing.T, dir string) (*config.Config, string) {
			mkdir(t, dir, "etc", 0o700)
			return &config.Config{}, file(t, dir, "etc/plantd.yaml", 0o644)
		}, func(dir string) []string {
			d := filepath.Join(dir, "etc")
			return []string{"svc cannot enter " + d + " (", "0700), on the way to the config " + filepath.Join(d, "plantd.yaml"), "; fix: chmod g+x " + d}
		}},
		{"TLS key, missing certificate", func(t *testing.T, dir string) (*config.Config, string) {
			return &config.Config{HTTP: config.HTTP{TLSCert: filepath.Join(dir, "nocert.pem"), TLSKey: file(t, dir, "key.pem", 0o600)}},
				file(t, dir, "plantd.yaml", 0o640)
		}, func(dir string) []string {
			k := filepath.Join(dir, "key.pem")
			return []string{"http.tlsCert " + filepath.Join(dir, "nocert.pem") + ": no such file or directory; fix: create it",
				"svc cannot read http.tlsKey " + k + " (", "; fix: " + secretFix(k)}
		}},
		{"database directory and file", func(t *testing.T, dir string) (*config.Config, string) {
			db := filepath.Join(mkdir(t, dir, "db", 0o750), "plantd.db")
			file(t, dir, "db/plantd.db", 0o640)
			file(t, dir, "db/plantd.db-wal", 0o660)
			return &config.Config{Database: config.Database{Path: db}}, file(t, dir, "plantd.yaml", 0o640)
		}, func(dir string) []string {
			d := filepath.Join(dir, "db")
			return []string{"svc cannot write in the database's directory " + d + " (", "; fix: chown svc:svc " + d + "; chmod 0750 " + d,
				"svc cannot read and write the database " + filepath.Join(d, "plantd.db") + " (", "; fix: chmod g+rw " + filepath.Join(d, "plantd.db")}
		}},
		{"database directory missing", func(t *testing.T, dir string) (*config.Config, string) {
			return &config.Config{Database: config.Database{Path: filepath.Join(dir, "no", "plantd.db")}}, file(t, dir, "plantd.yaml", 0o640)
		}, func(dir string) []string {
			d := filepath.Join(dir, "no")
			return []string{"the database's directory " + d + " does not exist; fix: install -d -o svc -g svc -m 0750 " + d}
		}},
		{"serial port of another group, a disabled device's skipped", func(t *testing.T, dir string) (*config.Config, string) {
			return &config.Config{Devices: []config.Device{{Enabled: true, Serial: &config.Serial{Port: port}},
				{Enabled: false, Serial: &config.Serial{Port: "/dev/console"}}}}, file(t, dir, "plantd.yaml", 0o640)
		}, func(string) []string {
			// The pty's group: the test's (root's, in a container) or tty.
			fix := "; fix: chmod g+rw " + port + " (a udev rule keeps it"
			if st, err := stat(port); err != nil || st.Gid != uint32(os.Getgid()) {
				g, _ := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
				fix = "; fix: usermod -aG " + g.Name + " svc, then restart plantd"
			}
			return []string{"svc cannot read and write the serial port " + port + " (", fix}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []string{filepath.Dir(dir), dir} {
				if err := os.Chmod(d, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			cfg, f := tc.setup(t, dir)
			var got []string
			for _, p := range checkAccess(cfg, f, u) {
				got = append(got, p.String())
			}
			all := strings.Join(got, "\n")
			want := tc.want(dir)
			if len(want) == 0 && len(got) != 0 {
				t.Errorf("problems:\n%s\nwant none", all)
			}
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("problems:\n%s\nwant %q", all, w)
				}
			}
		})
	}
}

func file(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, nil, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // the umask
		t.Fatal(err)
	}
	return p
}

func mkdir(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckConfigServiceUser: root's plantd check-config --user nobody
// fails a config the user cannot reach (exit 78, each problem with its
// fix), passes it once the fixes are made, and refuses a user that does
// not exist; without --user and without a plantd user (a build machine)
// it checks the config alone, as before.
func TestCheckConfigServiceUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("checks another user's access: runs as root only")
	}
	base := t.TempDir()
	for d, mode := range map[string]os.FileMode{filepath.Dir(base): 0o755, base: 0o700} { // nobody cannot enter base
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "etc")
	db := filepath.Join(base, "db")
	for _, d := range []string{dir, db} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "plantd.yaml")
	writeConfig(t, cfg, fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s/plantd.db
plants:
  - {id: p1, name: P, timezone: Europe/Berlin}
devices: []
`, db))
	out, errOut, code := runBinary(t, "check-config", "--user", "nobody", cfg)
	if code != exitConfig || out != "" ||
		!strings.Contains(errOut, cfg+": service user nobody: nobody cannot enter "+base+" (root:root 0700), on the way to the config "+cfg+"; fix: chgrp nogroup "+base+"; chmod g+x "+base) ||
		!strings.Contains(errOut, "on the way to the database's directory "+db) {
		t.Errorf("check-config --user nobody: exit %d\n%s%s", code, out, errOut)
	}
	// The fixes: the directory open to others, the database's its own.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runBinary(t, "check-config", "--user", "nobody", cfg)
	if code != exitConfig || !strings.Contains(errOut, "nobody cannot read the config "+cfg+" (root:root 0600); fix: chown root:nogroup "+cfg+"; chmod 0640 "+cfg) ||
		!strings.Contains(errOut, "nobody cannot write in the database's directory "+db+" (root:root 0755); fix: chown nobody:nogroup "+db+"; chmod 0750 "+db) {
		t.Errorf("check-config --user nobody: exit %d\n%s", code, errOut)
	}
	if err := os.Chown(cfg, 0, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(db, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runBinary(t, "check-config", "--user", "nobody", cfg); code != exitOK || !strings.Contains(out, ": ok") {
		t.Errorf("after the fixes: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runBinary(t, "check-config", "--user", "nosuchuser41", cfg); code != exitUsage || !strings.Contains(errOut, "--user nosuchuser41") {
		t.Errorf("--user nosuchuser41: exit %d %s", code, errOut)
	}
	if _, err := lookupServiceUser(serviceUser); err != nil {
		if out, errOut, code := runBinary(t, "check-config", cfg); code != exitOK {
			t.Errorf("without --user and without a %s user: exit %d\n%s%s", serviceUser, code, out, errOut)
		}
	}
}

// TestServiceUserMatchesUnit: the user and groups check-config checks
// are the unit's User= and SupplementaryGroups=.
func TestServiceUserMatchesUnit(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "systemd", "plantd.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var usr string
	var groups []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "User="); ok {
			usr = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "SupplementaryGroups="); ok {
			groups = append(groups, strings.Fields(v)...)
		}
	}
	if usr != serviceUser || !slices.Equal(groups, serviceGroups) {
		t.Errorf("the unit: User=%s, SupplementaryGroups=%v; check-config checks %s, %v", usr, groups, serviceUser, serviceGroups)
	}
}
