package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"plantd/config"
)

// commentedKey is an optional key shown commented out ("  #id: plantd-x"),
// which an installer enables by removing the #.
var commentedKey = regexp.MustCompile(`(?m)^( *)#([A-Za-z][A-Za-z0-9]*:)`)

// uncommentedProblems enables every commented key of the config text, as
// an installer would, and returns the problems of the result (field and
// message, without lines).
func uncommentedProblems(t *testing.T, text string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "uncommented.yaml")
	writeConfig(t, path, commentedKey.ReplaceAllString(text, "$1$2"))
	_, err := config.Load(path)
	var problems *config.Errors
	if err != nil && !errors.As(err, &problems) {
		t.Fatal(err)
	}
	var out []string
	if problems != nil {
		for _, p := range problems.Problems {
			out = append(out, p.Field+": "+p.Message)
		}
	}
	return out
}

// TestEditorsKeepCommentedKeys runs "token add" and then "client add"
// with the real binary on copies of the package's config and of the
// documented example: every line of the file stays as it was (the new
// entries are the only new lines), so the commented keys keep their
// sections: enabling every one of them gives the same problems after the
// edits as before (none "unknown field").
func TestEditorsKeepCommentedKeys(t *testing.T) {
	t.Parallel() // its own files
	for _, file := range []string{"plantd.yaml", "plantd.yaml.example"} {
		t.Run(file, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join("..", "..", "packaging", file))
			if err != nil {
				t.Fatal(err)
			}
			if !commentedKey.Match(orig) {
				t.Fatal("no commented key to check")
			}
			path := filepath.Join(t.TempDir(), "plantd.yaml")
			writeConfig(t, path, string(orig))
			for _, args := range [][]string{
				{"token", "add", "--name", "laptop", "--role", "installer"},
				{"client", "add", "--id", "portal", "--role", "standard", "--redirect-uri", "https://portal.example/cb"},
			} {
				if _, errOut, code := runBinary(t, append(args, "-c", path)...); code != 0 {
					t.Fatalf("%s: exit %d %s", strings.Join(args, " "), code, errOut)
				}
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			edited := string(raw)

			// The original lines, in order, with only the entries added
			// (an empty flow list "[]" becomes the key alone).
			o := strings.Replace(string(orig), "\ntokens: []\n", "\ntokens:\n", 1)
			o = strings.Replace(o, "\noauthClients: []\n", "\noauthClients:\n", 1)
			before := strings.Split(o, "\n")
			after := strings.Split(edited, "\n")
			i := 0
			var added []string
			for _, l := range after {
				if i < len(before) && l == before[i] {
					i++
				} else {
					added = append(added, l)
				}
			}
			if i != len(before) {
				t.Errorf("line %d of %s not kept in place: %q", i+1, file, before[i])
			}
			for _, l := range added {
				if !regexp.MustCompile(`^  (- |  )(name|sha256|role|clientId|secretSha256|redirectUris|  - https://portal)`).MatchString(l) {
					t.Errorf("unexpected new line %q", l)
				}
			}
			if len(added) != 3+5 {
				t.Errorf("%d new lines, want 8 (the two entries):\n%s", len(added), strings.Join(added, "\n"))
			}

			want, got := uncommentedProblems(t, string(orig)), uncommentedProblems(t, edited)
			if !slices.Equal(got, want) {
				t.Errorf("every commented key enabled, after the edits: %q; before: %q", got, want)
			}
			for _, p := range got {
				if strings.Contains(p, "unknown field") {
					t.Errorf("a commented key left its section: %s", p)
				}
			}
		})
	}
}
