package layout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Package is what the check needs of one package.
type Package struct {
	// Path is the import path.
	Path string
	// Imports are the imports of its non-test files.
	Imports []string
	// Deps are all the packages it depends on, directly or not (non-test).
	Deps []string
	// Allow is its allow list ("Imports:" line); HasAllow is false when it
	// has none.
	Allow    []string
	HasAllow bool
}

// Violation is one broken boundary.
type Violation struct {
	Package string
	Import  string // the forbidden import or dependency; "" for a missing line
	Reason  string
}

func (v Violation) String() string {
	if v.Import == "" {
		return v.Package + ": " + v.Reason
	}
	return v.Package + " → " + v.Import + ": " + v.Reason
}

// prefix is the import path prefix of the module's packages.
const prefix = "plantd/"

// marker starts the allow-list line.
const marker = "// Imports:"

// Check returns every import of a plantd package by a package of pkgs that
// the importer's allow list does not allow, every package of pkgs without
// an allow list, and every entry of a list that names no package of pkgs
// (a stale line).
func Check(pkgs []Package) []Violation {
	known := make(map[string]bool, len(pkgs))
	for _, p := range pkgs {
		known[p.Path] = true
	}
	var out []Violation
	for _, p := range pkgs {
		if !p.HasAllow {
			out = append(out, Violation{Package: p.Path, Reason: "no \"" + marker + "\" line in its package comment (doc.go)"})
			continue
		}
		for _, a := range p.Allow {
			if !slices.ContainsFunc(pkgs, func(q Package) bool { return matches(a, q.Path) }) {
				out = append(out, Violation{Package: p.Path, Import: a, Reason: "allowed, but no such package"})
			}
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, prefix) || slices.ContainsFunc(p.Allow, func(a string) bool { return matches(a, imp) }) {
				continue
			}
			out = append(out, Violation{Package: p.Path, Import: imp,
				Reason: fmt.Sprintf("not allowed by its doc.go (%s %s)", marker, listOrNone(p.Allow))})
		}
	}
	return out
}

// CheckDeps returns, for each package of roots, every dependency (direct
// or not) that one of forbidden matches (an import path, or a prefix
// ending in "/"), with a shortest chain of imports that leads to it.
func CheckDeps(pkgs []Package, roots, forbidden []string) (violations []Violation) {
	byPath := make(map[string]*Package, len(pkgs))
	for i := range pkgs {
		byPath[pkgs[i].Path] = &pkgs[i]
	}
	bad := func(dep string) bool {
		return slices.ContainsFunc(forbidden, func(f string) bool {
			return dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)
		})
	}
	for _, r := range roots {
		p := byPath[r]
		if p == nil {
			violations = append(violations, Violation{Package: r, Reason: "no such package"})
			continue
		}
		for _, d := range p.Deps {
			if !bad(d) {
				continue
			}
			reason := "forbidden dependency, through a package outside the module"
			if c, ok := chain(byPath, r, d); ok {
				reason = "forbidden dependency, through " + c
			}
			// Without a chain it is reached through a package outside the
			// module, whose imports go list ./... does not give: a
			// violation all the same.
			violations = append(violations, Violation{Package: r, Import: d, Reason: reason})
		}
	}
	return violations
}

// chain finds a shortest import chain from one package to another.
func chain(byPath map[string]*Package, from, to string) (string, bool) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for n := cur; n != ""; n = prev[n] {
				path = append(path, n)
			}
			slices.Reverse(path)
			return strings.Join(path, " → "), true
		}
		p := byPath[cur]
		if p == nil {
			continue // outside the module: its imports are not listed
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return "", false
}

// matches reports whether allow-list entry a allows import path imp.
func matches(a, imp string) bool {
	if base, ok := strings.CutSuffix(a, "/..."); ok {
		return imp == base || strings.HasPrefix(imp, base+"/")
	}
	return a == imp
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// ParseAllow reads the allow list from a file's package comment: the
// "// Imports:" lines before the package clause (several lines add up).
// ok is false when the file has none.
func ParseAllow(r io.Reader) (allow []string, ok bool, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "package ") {
			break
		}
		rest, found := strings.CutPrefix(line, marker)
		if !found {
			continue
		}
		ok = true
		for _, e := range strings.Split(rest, ",") {
			e = strings.TrimSpace(e)
			switch {
			case e == "" || e == "none":
			case !strings.HasPrefix(e, prefix):
				return nil, false, fmt.Errorf("%q: not a plantd import path", e)
			default:
				allow = append(allow, e)
			}
		}
	}
	return allow, ok, sc.Err()
}

// listed is the part of `go list -json` Load reads.
type listed struct {
	Dir        string
	ImportPath string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Deps       []string
}

// Load lists the module's packages with `go list -json ./...` run in dir
// (a folder of the module) and reads each one's allow list: from doc.go,
// else from the non-test file whose package comment has the line.
func Load(dir string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var out []Package
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		p := Package{Path: l.ImportPath, Imports: l.Imports, Deps: l.Deps}
		files := append(slices.Clone(l.GoFiles), l.CgoFiles...)
		if len(files) == 0 {
			continue // tests only: their imports are not checked
		}
		if i := slices.Index(files, "doc.go"); i > 0 {
			files[0], files[i] = files[i], files[0]
		}
		for _, f := range files {
			allow, ok, err := readAllow(filepath.Join(l.Dir, f))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.ImportPath, err)
			}
			if ok {
				p.Allow, p.HasAllow = allow, true
				break
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func readAllow(name string) ([]string, bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	allow, ok, err := ParseAllow(f)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return allow, ok, nil
}
