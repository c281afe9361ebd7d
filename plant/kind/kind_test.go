package kind

import "testing"

func TestParsePolledType(t *testing.T) {
	for _, tt := range []struct {
		word   string
		polled bool
		typ    string
	}{
		{"inverter", true, "Solar Inverters"},
		{"meter", true, "Energy Meter"},
		{"battery", true, "Battery Inverter"},
		{"sensor", true, "Sensor technology"},
		{"gateway", false, "Monitoring and control"},
	} {
		k, err := Parse(tt.word)
		if err != nil || string(k) != tt.word || k.Polled() != tt.polled || k.Type() != tt.typ {
			t.Errorf("Parse(%q) = %q, %v; polled %v, type %q", tt.word, k, err, k.Polled(), k.Type())
		}
	}
	for _, w := range []string{"unknown", "", "Inverter", "der-inverter"} {
		if k, err := Parse(w); err == nil {
			t.Errorf("Parse(%q) = %q, want an error", w, k)
		}
	}
	if Unknown.Polled() || Unknown.Type() != "" || Kind("").Type() != "" {
		t.Error("Unknown or no kind is polled or has a type word")
	}
}
