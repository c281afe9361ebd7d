package inputconfig

// The commands an input action may carry (grid control's names).
const (
	CommandFeedInLimit  = "FeedInLimit"
	CommandOpModMaxLimW = "opModMaxLimW"
)

// Action is one row of an input's pattern table: the contacts that, closed
// together and alone, mean it, and the limit it sets.
// It is also the row of the config file's pattern table
// (inputs[].actions[], and inputs[].failsafe; Settings).
type Action struct {
	// Contacts are the contact names (K1..Kn) of the pattern, closed
	// together and alone (none in a failsafe).
	Contacts []string `yaml:"contacts"`
	// Command is CommandFeedInLimit or CommandOpModMaxLimW.
	Command string `yaml:"command"`
	// Value is the limit in Unit: "%" of rated power (0..100, the default
	// unit) or "W" (0..100000000).
	Value float64 `yaml:"value"`
	Unit  string  `yaml:"unit"`
}

// Releases reports whether the action sets no limit (100 % of rated
// power): the input's window ends instead.
func (a *Action) Releases() bool { return a.Unit == "%" && a.Value >= 100 }
