package gridcontrol

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseScheduleRelative: start and end may be relative to the
// gateway's clock ("+" and a Go duration), resolved against the now
// ParseSchedule is given (the demo's simulated clock under plantd demo)
// and stored as the times they name; anything else after "+" is refused.
func TestParseScheduleRelative(t *testing.T) {
	now := t0.Add(1234567 * time.Microsecond) // not a whole second
	cases := []struct {
		start, end         string
		wantStart, wantEnd time.Time
		field, msg         string // "": accepted
	}{
		{start: "+10s", end: "+2m", wantStart: now.Add(10 * time.Second).Truncate(time.Millisecond), wantEnd: now.Add(2 * time.Minute).Truncate(time.Millisecond)},
		{start: "+0s", end: "+1h30m", wantStart: now.Truncate(time.Millisecond), wantEnd: now.Add(90 * time.Minute).Truncate(time.Millisecond)},
		{start: "+48m0s", end: "+9h36m0s", wantStart: now.Add(48 * time.Minute).Truncate(time.Millisecond), wantEnd: now.Add(576 * time.Minute).Truncate(time.Millisecond)},
		{start: at(-5), end: "+5m", wantStart: t0.Add(-5 * time.Minute), wantEnd: now.Add(5 * time.Minute).Truncate(time.Millisecond)},
		{start: "+2m", end: "+1m", field: "commands[0].end", msg: "after start"},
		{start: "+0s", end: "+0s", field: "commands[0].end", msg: "after start"},
		{start: "+-5s", end: "+1m", field: "commands[0].start", msg: "relative to now"},
		{start: "++5s", end: "+1m", field: "commands[0].start", msg: "relative to now"},
		{start: "+10", end: "+1m", field: "commands[0].start", msg: "relative to now"},
		{start: "+", end: "+1m", field: "commands[0].start", msg: "relative to now"},
		{start: "10s", end: "+1m", field: "commands[0].start", msg: "RFC 3339"},
		{start: "+1s", end: "+1000000h", field: "commands[0].end", msg: "year"},
	}
	for _, tc := range cases {
		body := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40,"unit":"%%"}]}`, tc.start, tc.end)
		cmds, err := ParseSchedule([]byte(body), now)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s..%s: %v", tc.start, tc.end, err)
			} else if !cmds[0].Start.Equal(tc.wantStart) || !cmds[0].End.Equal(tc.wantEnd) {
				t.Errorf("%s..%s: %s..%s, want %s..%s", tc.start, tc.end, cmds[0].Start, cmds[0].End, tc.wantStart, tc.wantEnd)
			}
			continue
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(fmt.Sprint(ve.Fields), tc.field+": ") || !strings.Contains(ve.Error(), tc.msg) {
			t.Errorf("%s..%s: %v, want %s: …%s…", tc.start, tc.end, err, tc.field, tc.msg)
		}
	}
}
