package drivers

import (
	"testing"
	"time"
)

// TestChargerSettingsUnset: a charger's Settings built in code without
// Defaults give the defaults, not a nil dereference.
func TestChargerSettingsUnset(t *testing.T) {
	s := Settings{Driver: NameOCPP, MinCurrent: 8}
	if got := s.Fallback(); got != 8 {
		t.Errorf("fallback %v, want the minimum 8", got)
	}
	if e, d := s.Delays(); e != time.Minute || d != 3*time.Minute {
		t.Errorf("delays %v %v, want 1m 3m", e, d)
	}
	zero, five := 0.0, 5*time.Second
	s.FallbackCurrent, s.DisableDelay = &zero, &five
	if got := s.Fallback(); got != 0 {
		t.Errorf("fallback %v, want the configured 0", got)
	}
	if _, d := s.Delays(); d != five {
		t.Errorf("disable delay %v, want 5s", d)
	}
}
