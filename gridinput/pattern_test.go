package gridinput

import (
	"slices"
	"testing"

	"plantd/gridinput/inputconfig"
)

// receiver is a 4-relay ripple-control receiver's table: K1..K4 = 100,
// 60, 30, 0 % of rated power.
func receiver() []inputconfig.Action {
	mk := func(k string, v float64) inputconfig.Action {
		return inputconfig.Action{Contacts: []string{k}, Command: inputconfig.CommandOpModMaxLimW, Value: v, Unit: "%"}
	}
	return []inputconfig.Action{mk("K1", 100), mk("K2", 60), mk("K3", 30), mk("K4", 0)}
}

func TestResolve(t *testing.T) {
	withPair := append(receiver(), inputconfig.Action{Contacts: []string{"K3", "K2"}, Command: inputconfig.CommandOpModMaxLimW, Value: 45, Unit: "%"})
	tests := []struct {
		name    string
		actions []inputconfig.Action
		closed  []string
		want    float64 // -1: no limit
		invalid bool
	}{
		{"none closed: release", receiver(), nil, -1, false},
		{"K1: 100 % is no limit", receiver(), []string{"K1"}, -1, false},
		{"K2", receiver(), []string{"K2"}, 60, false},
		{"K3", receiver(), []string{"K3"}, 30, false},
		{"K4", receiver(), []string{"K4"}, 0, false},
		{"K1+K4 invalid: most restrictive", receiver(), []string{"K4", "K1"}, 0, true},
		{"K1+K2 invalid: 60 not 100", receiver(), []string{"K1", "K2"}, 60, true},
		{"K2+K3 invalid: 30", receiver(), []string{"K2", "K3"}, 30, true},
		{"K2+K3 listed together", withPair, []string{"K3", "K2"}, 45, false},
		{"K1+K2+K3 with a pair listed: lowest naming any", withPair, []string{"K1", "K2", "K3"}, 30, true},
		{"unknown contact alone: table's most restrictive", receiver(), []string{"K9"}, 0, true},
		{"duplicates collapse", receiver(), []string{"K3", "K3"}, 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Resolve(tt.actions, tt.closed)
			got := -1.0
			if d.Action != nil {
				got = d.Action.Value
			}
			if got != tt.want || d.Invalid != tt.invalid {
				t.Errorf("Resolve(%v) = %v (invalid %v), want %v (invalid %v)", tt.closed, got, d.Invalid, tt.want, tt.invalid)
			}
			if !slices.IsSorted(d.Closed) {
				t.Errorf("closed %v not sorted", d.Closed)
			}
		})
	}
}

func TestMostRestrictive(t *testing.T) {
	if a := MostRestrictive(receiver()); a == nil || a.Value != 0 {
		t.Errorf("MostRestrictive = %v, want the 0 %% action", a)
	}
	if a := MostRestrictive(nil); a != nil {
		t.Errorf("MostRestrictive(nil) = %v, want nil", a)
	}
}
