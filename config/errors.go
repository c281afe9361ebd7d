package config

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one mistake in a config file.
type Problem struct {
	// File is the name given to Parse, or the path given to Load; empty for
	// a Config built in code.
	File string
	// Line is the 1-based YAML line of the offending key or entry; 0 when
	// unknown (a Config built in code, a problem with the whole file).
	Line int
	// Field is the path of the offending value, as in "devices[2].port",
	// "plants[0].location.latitude" or "migrated.devices.old1"; empty for a
	// problem with the whole file, such as a YAML syntax error.
	Field string
	// Message says what is wrong, lower-case, without the field name.
	Message string
}

// String returns the problem as "file:line: field: message", leaving out
// what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.File != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", p.File, p.Line)
	case p.File != "":
		fmt.Fprintf(&b, "%s: ", p.File)
	case p.Line > 0:
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Errors is the error Load, Parse and Validate return for a config with
// mistakes: all of them at once, sorted by line. Get it with errors.As.
type Errors struct {
	Problems []Problem
}

// Error returns one line per problem, as in
//
//	plantd.yaml:14: devices[2].port: 70000 is not a TCP port
func (e *Errors) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// errorsOf sorts problems by line (stable, so problems on one line keep the
// order they were found in) and returns them as *Errors, or nil when there
// are none.
func errorsOf(problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	// sort.SliceStable: no sort instantiated for Problem (binary size).
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
	return &Errors{Problems: problems}
}
