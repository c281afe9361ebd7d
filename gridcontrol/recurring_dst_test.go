package gridcontrol

import (
	"strings"
	"testing"
	"time"
)

// berlin is the zone of the DST tests: in 2026 the clock goes back on
// 25 October (03:00 CEST is 02:00 CET, so 02:00 to 02:59 happen twice),
// in 2027 it goes forward on 28 March (02:00 CET is 03:00 CEST, so 02:00
// to 02:59 do not exist).
var berlin = func() *time.Location {
	l, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return l
}()

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestRecurringOccurrencesOverDST: the starts a spec names around both
// of Berlin's clock changes. A start between 02:00 and 02:59 runs once
// on both days: on the spring-forward day at the first valid time (03:00
// CEST, the change itself), however many starts the skipped hour held; on
// the fall-back day once, at its first pass (CEST). Starts outside the
// changed hour, and a spec of every hour (real time: the repeated hour
// twice, the skipped one not at all), are as robfig/cron has them. A
// spec without a zone is in UTC.
func TestRecurringOccurrencesOverDST(t *testing.T) {
	cases := []struct {
		name, spec string
		from       string   // starts strictly after
		want       []string // UTC
	}{
		{name: "02:15, fall back", spec: "CRON_TZ=Europe/Berlin 15 2 * * *", from: "2026-10-23T12:00:00Z",
			want: []string{"2026-10-24T00:15:00Z", "2026-10-25T00:15:00Z", "2026-10-26T01:15:00Z", "2026-10-27T01:15:00Z"}},
		{name: "02:15, spring forward", spec: "CRON_TZ=Europe/Berlin 15 2 * * *", from: "2027-03-26T12:00:00Z",
			want: []string{"2027-03-27T01:15:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:15:00Z", "2027-03-30T00:15:00Z"}},
		{name: "02:30, fall back", spec: "CRON_TZ=Europe/Berlin 30 2 * * *", from: "2026-10-24T01:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{name: "02:30, spring forward", spec: "CRON_TZ=Europe/Berlin 30 2 * * *", from: "2027-03-27T12:00:00Z",
			want: []string{"2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"}},
		{name: "02:00, spring forward", spec: "CRON_TZ=Europe/Berlin 0 2 * * *", from: "2027-03-27T12:00:00Z",
			want: []string{"2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z"}},
		{name: "02:59, fall back", spec: "CRON_TZ=Europe/Berlin 59 2 * * *", from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T00:59:00Z", "2026-10-26T01:59:00Z"}},
		{name: "from inside the first pass", spec: "CRON_TZ=Europe/Berlin 15 2 * * *", from: "2026-10-25T00:20:00Z",
			want: []string{"2026-10-26T01:15:00Z"}},
		{name: "from inside the second pass", spec: "CRON_TZ=Europe/Berlin 15 2 * * *", from: "2026-10-25T01:20:00Z",
			want: []string{"2026-10-26T01:15:00Z"}},
		{name: "three in the hour, fall back", spec: "CRON_TZ=Europe/Berlin */20 2 * * *", from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T00:00:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:40:00Z", "2026-10-26T01:00:00Z"}},
		{name: "three in the hour, spring forward", spec: "CRON_TZ=Europe/Berlin */20 2 * * *", from: "2027-03-27T12:00:00Z",
			want: []string{"2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z"}},
		{name: "02:30 and 03:00, spring forward", spec: "CRON_TZ=Europe/Berlin 0,30 2-3 * * *", from: "2027-03-27T12:00:00Z",
			want: []string{"2027-03-28T01:00:00Z", "2027-03-28T01:30:00Z", "2027-03-29T00:00:00Z"}},
		{name: "on Sundays only", spec: "CRON_TZ=Europe/Berlin 30 2 * * 0", from: "2027-03-20T12:00:00Z",
			want: []string{"2027-03-21T01:30:00Z", "2027-03-28T01:00:00Z", "2027-04-04T00:30:00Z"}},
		{name: "not on the day", spec: "CRON_TZ=Europe/Berlin 30 2 * * 1-6", from: "2027-03-27T00:00:00Z",
			want: []string{"2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z"}},
		{name: "noon, spring forward", spec: "CRON_TZ=Europe/Berlin 0 12 * * *", from: "2027-03-27T00:00:00Z",
			want: []string{"2027-03-27T11:00:00Z", "2027-03-28T10:00:00Z"}},
		{name: "every hour, fall back", spec: "CRON_TZ=Europe/Berlin 30 * * * *", from: "2026-10-25T00:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},
		{name: "every hour, spring forward", spec: "CRON_TZ=Europe/Berlin 30 * * * *", from: "2027-03-28T00:00:00Z",
			want: []string{"2027-03-28T00:30:00Z", "2027-03-28T01:30:00Z", "2027-03-28T02:30:00Z"}},
		{name: "UTC, fall back", spec: "15 2 * * *", from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T02:15:00Z", "2026-10-26T02:15:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := parseSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			at := utc(tc.from)
			for range tc.want {
				at = spec.Next(at)
				got = append(got, at.Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("starts after %s:\n got %v\nwant %v", tc.from, got, tc.want)
			}
		})
	}

	// A spec without a zone is in UTC, also asked with a time in another.
	spec, err := parseSpec("0 11 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Next(time.Date(2026, 10, 10, 0, 0, 0, 0, berlin)); !got.Equal(utc("2026-10-10T11:00:00Z")) {
		t.Errorf("0 11 * * * after midnight in Berlin: %s, want 11:00 UTC", got)
	}
}

// TestParseRecurringOverDST: what ParseSchedule accepts and refuses of a
// recurring command around the clock changes, and its descriptors.
func TestParseRecurringOverDST(t *testing.T) {
	rep := func(extra string) string {
		return `{"commands":[{"command":"opModMaxLimW","value":60` + extra + `}]}`
	}
	cases := []struct {
		name       string
		now        string
		body       string
		start, end string // the first window, when accepted
		field, msg string
	}{
		{name: "4 h at 02:15, posted two weeks before the fall back", now: "2026-10-10T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 15 2 * * *","duration":"4h"`), start: "2026-10-11T00:15:00Z", end: "2026-10-11T04:15:00Z"},
		{name: "23 h at 02:15, posted two weeks before the fall back", now: "2026-10-10T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 15 2 * * *","duration":"23h"`), start: "2026-10-10T00:15:00Z", end: "2026-10-10T23:15:00Z"},
		{name: "4 h at 02:30, posted two weeks before the spring forward", now: "2027-03-14T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 30 2 * * *","duration":"4h"`), start: "2027-03-15T01:30:00Z", end: "2027-03-15T05:30:00Z"},
		{name: "4 h at 02:30, starting on the spring-forward day", now: "2027-03-14T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 30 2 * * *","duration":"4h","start":"2027-03-28T00:00:00+01:00"`), start: "2027-03-28T01:00:00Z", end: "2027-03-28T05:00:00Z"},
		{name: "a start with an offset, a spec in UTC", now: "2026-10-10T10:00:00Z",
			body: rep(`,"repeat":"0 11 * * *","duration":"1h","start":"2026-10-11T00:00:00+02:00"`), start: "2026-10-11T11:00:00Z", end: "2026-10-11T12:00:00Z"},
		// The spring-forward day is 23 h long at noon: a daily window
		// longer than that would overlap the next, also when the change
		// is more than 64 days away.
		{name: "23 h 30 m at noon, posted in January", now: "2027-01-10T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 0 12 * * *","duration":"23h30m"`), field: "commands[0].duration", msg: "longer than the period"},
		{name: "23 h at noon, posted in January", now: "2027-01-10T10:00:00Z",
			body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 0 12 * * *","duration":"23h"`), start: "2027-01-10T11:00:00Z", end: "2027-01-11T10:00:00Z"},
		{name: "@every", now: "2026-10-10T10:00:00Z", body: rep(`,"repeat":"@every 1s","duration":"1s"`),
			field: "commands[0].repeat", msg: "repeat takes a cron spec of five fields only"},
		{name: "@daily", now: "2026-10-10T10:00:00Z", body: rep(`,"repeat":"@daily","duration":"1h"`),
			field: "commands[0].repeat", msg: `for @daily write "0 0 * * *"`},
		{name: "@hourly in a zone", now: "2026-10-10T10:00:00Z", body: rep(`,"repeat":"CRON_TZ=Europe/Berlin @hourly","duration":"1h"`),
			field: "commands[0].repeat", msg: `for @hourly write "0 * * * *"`},
		{name: "a zone without fields", now: "2026-10-10T10:00:00Z", body: rep(`,"repeat":"CRON_TZ=Europe/Berlin","duration":"1h"`),
			field: "commands[0].repeat", msg: "no fields"},
		{name: "an unknown zone", now: "2026-10-10T10:00:00Z", body: rep(`,"repeat":"CRON_TZ=Mars/Olympus 0 11 * * *","duration":"1h"`),
			field: "commands[0].repeat", msg: "not a cron spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := ParseSchedule([]byte(tc.body), utc(tc.now))
			wantFirstWindow(t, cmds, err, tc.start, tc.end, tc.field, tc.msg)
		})
	}
}
