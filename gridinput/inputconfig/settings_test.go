package inputconfig

import (
	"slices"
	"testing"
	"time"

	"plantd/internal/confcheck"
)

func TestSettingsValidate(t *testing.T) {
	act := func(v float64, contacts ...string) Action {
		return Action{Contacts: contacts, Command: CommandOpModMaxLimW, Value: v, Unit: "%"}
	}
	for _, tt := range []struct {
		name   string
		modify func(*Settings)
		want   []string
	}{
		{"a receiver", func(*Settings) {}, nil},
		{"a control box that only dims", func(s *Settings) { s.Actions, s.Dimming = nil, []string{"K1"} }, nil},
		{"timing and source", func(s *Settings) {
			s.PollInterval, s.Debounce, s.Source, s.Address = time.Minute, 2*time.Minute, "coils", 70000
		}, []string{
			"in.pollInterval: 1m is out of range (100ms..10s)",
			"in.debounce: 2m is longer than lossGrace (1m): a signal would wait out its debounce longer than a lost module holds its state",
			`in.source: "coils" is not a source (discreteInputs or inputRegisters)`,
			"in.address: 70000 is not a Modbus address (0..65535)"}},
		{"contacts", func(s *Settings) { s.Contacts["K3"], s.Contacts["a b"], s.Dimming = 0, 9, []string{"K9"} }, []string{
			"in.contacts.K3: input 0 is contact K1 already",
			`in.contacts.a b: "a b" is not a contact name (no +, / or space)`,
			`in.dimming[0]: unknown contact "K9" (contacts: K1, K2, K3, a b)`}},
		{"pattern twice, mixed units", func(s *Settings) {
			s.Actions = append(s.Actions, act(10, "K2", "K1"), Action{Contacts: []string{"K1"}, Command: CommandOpModMaxLimW, Value: 5000, Unit: "W"})
		}, []string{
			"in.actions[2].contacts: the pattern K1+K2 is in.actions[0] already",
			"in.actions[3].command: every action of an input has one command and unit (opModMaxLimW in %, as actions[0])"}},
		{"a failsafe of no limit", func(s *Settings) { f := act(100); s.Failsafe = &f }, []string{
			"in.failsafe.value: a failsafe of 100 % is no limit: give one below 100 %"}},
		{"every action 100 %", func(s *Settings) { s.Actions = []Action{act(100, "K1")} }, []string{
			"in.failsafe: required: every action is 100 %, and the default failsafe (the most restrictive action) would be no limit"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s Settings
			s.SetDefaults()
			s.Contacts = map[string]int{"K1": 0, "K2": 1}
			s.Actions = []Action{act(30, "K1", "K2"), act(60, "K2")}
			tt.modify(&s)
			var l confcheck.List
			s.Validate(confcheck.New(&l, "in"))
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
