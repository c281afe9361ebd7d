package httpapi

import (
	"encoding/json"
	"testing"
)

// TestEnvelope: an envelope encodes as the literal struct of its members
// would, in their order, for shapes of one to four members, the same
// names with other types, and an untyped nil.
func TestEnvelope(t *testing.T) {
	t.Parallel()
	p := plantJSON{PlantID: "demo", Name: "Demo", Timezone: "Europe/Berlin"}
	for _, tc := range []struct {
		name    string
		got     any
		literal any
	}{
		{"one member", envelope(field("devices", []deviceJSON{})), struct {
			Devices []deviceJSON `json:"devices"`
		}{[]deviceJSON{}}},
		{"plant first", envelope(field("plant", p), field("schedules", []string{"a"})), struct {
			Plant     plantJSON `json:"plant"`
			Schedules []string  `json:"schedules"`
		}{p, []string{"a"}}},
		{"same names, other types", envelope(field("plant", p), field("schedules", []int{1, 2})), struct {
			Plant     plantJSON `json:"plant"`
			Schedules []int     `json:"schedules"`
		}{p, []int{1, 2}}},
		{"order kept, not sorted", envelope(field("z", 1), field("a", "x"), field("m", true), field("b", 2.5)), struct {
			Z int     `json:"z"`
			A string  `json:"a"`
			M bool    `json:"m"`
			B float64 `json:"b"`
		}{1, "x", true, 2.5}},
		{"nil slice and untyped nil", envelope(field("list", []string(nil)), field("error", nil)), struct {
			List  []string `json:"list"`
			Error any      `json:"error"`
		}{nil, nil}},
	} {
		got, err := json.Marshal(tc.got)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, _ := json.Marshal(tc.literal)
		if string(got) != string(want) {
			t.Errorf("%s: %s, want %s", tc.name, got, want)
		}
	}
}
