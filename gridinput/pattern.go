package gridinput

import (
	"slices"
	"strings"

	"plantd/gridinput/inputconfig"
)

// same reports whether two actions set the same limit (nil: none).
func same(a, b *inputconfig.Action) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	}
	return a.Command == b.Command && a.Value == b.Value && a.Unit == b.Unit
}

// Decision is what a set of closed contacts means.
type Decision struct {
	// Action is the limit to hold; nil: no limit.
	Action *inputconfig.Action
	// Closed are the closed pattern contacts (not the dimming ones),
	// sorted; Invalid is set when the table does not list them together.
	Closed  []string
	Invalid bool
}

// Source names the contacts behind a decision: "K3", "K1+K4", or "open".
func (d Decision) Source() string {
	if len(d.Closed) == 0 {
		return "open"
	}
	return strings.Join(d.Closed, "+")
}

// Resolve decides what a set of closed contacts means under a pattern
// table: none closed is no limit; a set the table lists (in any order) is
// its action; any other set is invalid, and the most restrictive (lowest)
// of the actions naming any closed contact applies, never the least. A
// closed contact no action names, alone, is invalid too and, with nothing
// to go by, takes the most restrictive action of the whole table. An
// action of 100 % is no limit. Every action of a table has one command and
// unit (the config checks it), so the lowest value is the most
// restrictive.
func Resolve(actions []inputconfig.Action, closed []string) Decision {
	closed = slices.Clone(closed)
	slices.Sort(closed)
	closed = slices.Compact(closed)
	d := Decision{Closed: closed}
	if len(closed) == 0 {
		return d
	}
	for i := range actions {
		a := &actions[i]
		set := slices.Clone(a.Contacts)
		slices.Sort(set)
		if slices.Equal(slices.Compact(set), closed) {
			if !a.Releases() {
				d.Action = a
			}
			return d
		}
	}
	d.Invalid = true
	var best *inputconfig.Action
	for i := range actions {
		a := &actions[i]
		if !slices.ContainsFunc(a.Contacts, func(c string) bool { return slices.Contains(closed, c) }) {
			continue
		}
		if best == nil || a.Value < best.Value {
			best = a
		}
	}
	if best == nil {
		best = MostRestrictive(actions)
	}
	if best != nil && !best.Releases() {
		d.Action = best
	}
	return d
}

// MostRestrictive returns the action with the lowest value (nil for an
// empty table): the default failsafe.
func MostRestrictive(actions []inputconfig.Action) *inputconfig.Action {
	var best *inputconfig.Action
	for i := range actions {
		if best == nil || actions[i].Value < best.Value {
			best = &actions[i]
		}
	}
	return best
}
