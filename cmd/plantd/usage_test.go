package main

import (
	"strings"
	"testing"
)

// TestUsage: --version works like version, and each command's -h names
// it once and lists its flags.
func TestUsage(t *testing.T) {
	t.Parallel() // the binary only
	for _, tc := range []struct {
		args       []string
		want, nots []string
	}{
		{[]string{"--version"}, []string{"plantd "}, nil},
		{[]string{"-version"}, []string{"plantd "}, nil},
		{[]string{"token", "-h"}, []string{"usage: plantd token add --name NAME", "-name", "-role", "-print-only", "-c string"}, nil},
		{[]string{"token", "add", "-h"}, []string{"usage: plantd token add", "-name"}, nil},
		{[]string{"client", "-h"}, []string{"usage: plantd client add --id ID", "-id", "-redirect-uri", "-pre-approved"}, nil},
		{[]string{"consent", "-h"}, []string{"usage: plantd consent list|approve ID|reject ID [--url URL]", "-token-file", "-json"}, nil},
		{[]string{"consent", "list", "-h"}, []string{"usage: plantd consent list [--url URL]", "-token-file"}, []string{"list list", "list|approve"}},
		{[]string{"consent", "approve", "-h"}, []string{"usage: plantd consent approve ID [--url URL]"}, []string{"approve list"}},
		{[]string{"scan", "-h"}, []string{"[--connect-delay D]", "-connect-delay", `"noSunSpec", \"hint\"`}, nil},
		{[]string{"backup", "-h"}, []string{"usage: plantd backup", "-db"}, nil},
	} {
		out, errOut, code := runBinary(t, tc.args...)
		all := out + errOut
		if code != 0 {
			t.Errorf("plantd %s: exit %d\n%s", strings.Join(tc.args, " "), code, all)
		}
		for _, w := range tc.want {
			w = strings.ReplaceAll(w, `\"`, `"`)
			if !strings.Contains(all, w) && !strings.Contains(all, strings.ReplaceAll(w, `"`, `\"`)) {
				t.Errorf("plantd %s lacks %q:\n%s", strings.Join(tc.args, " "), w, all)
			}
		}
		for _, n := range tc.nots {
			if strings.Contains(all, n) {
				t.Errorf("plantd %s says %q:\n%s", strings.Join(tc.args, " "), n, all)
			}
		}
	}
}
