package plant

import "testing"

func TestParsePeriod(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Period
	}{{"Day", PeriodDay}, {"day", PeriodDay}, {"WEEK", PeriodWeek}, {"recent", PeriodRecent}, {"tOtAl", PeriodTotal}, {"Year", PeriodYear}, {"month", PeriodMonth}} {
		if got, err := ParsePeriod(tt.in); err != nil || got != tt.want {
			t.Errorf("ParsePeriod(%q) = %q, %v", tt.in, got, err)
		}
	}
	for _, in := range []string{"", "days", "Hour"} {
		if p, err := ParsePeriod(in); err == nil {
			t.Errorf("ParsePeriod(%q) = %q, want an error", in, p)
		}
	}
}
