package store

import (
	"path/filepath"
	"testing"
	"time"

	"plantd/plant"
)

// oldScheduleBody is a schedule row's body as plantd wrote it before the
// schedule had one type (grid control encoded its own Schedule and handed
// the store the bytes; commit 7bdf347), with every field set.
const oldScheduleBody = `{"scheduleId":"0123456789abcdef","plantId":"p1","commands":[{"command":"opModMaxLimW","start":"2026-07-01T10:00:00.123Z","end":"2026-07-01T11:00:00.123Z","value":60,"unit":"%","status":"active","reason":"late","appliedAt":"2026-07-01T10:00:02.123Z","late":true,"partial":true,"coverage":0.5,"inverters":[{"deviceId":"inv1","acts":true,"ratedPowerW":5000},{"deviceId":"inv2","acts":false,"reason":{"code":"DevicesOffline","message":"offline"}}],"writes":[{"deviceId":"inv1","model":123,"what":"limit","readBackAt":"2026-07-01T10:00:02.123Z","points":[{"point":"WMaxLimPct","value":60,"readBack":59.5}]}]},{"command":"opModVoltVar","start":"2026-07-01T10:00:00.123Z","end":"2026-07-01T12:00:00.123Z","unit":"V","curve":{"points":[{"x":207,"y":40},{"x":253,"y":-40}],"params":{"RspTms":5}},"overriddenBy":"x","repeat":"CRON_TZ=Europe/Berlin 0 10 * * *","duration":"2h","until":"2026-07-01T10:00:02.123Z","finished":[{"start":"2026-06-30T10:00:00.123Z","end":"2026-06-30T12:00:00.123Z","status":"done","appliedAt":"2026-07-01T10:00:02.123Z"}],"cancelled":true}],"createdAt":"2026-07-01T10:00:00.123Z","createdBy":"input:rsr1/K1 (gridoperator)","role":"gridoperator","channel":"input:rsr1"}`

// TestScheduleRowsOfEarlierPlantd: rows written the old way (the body
// column holding grid control's JSON) load as plant.Schedule after a
// restart, a row whose body does not decode is left out, and writing a
// loaded schedule back stores the same bytes: the format is unchanged.
func TestScheduleRowsOfEarlierPlantd(t *testing.T) {
	t.Parallel() // its own database file
	path := filepath.Join(t.TempDir(), "plantd.db")
	s := openTest(t, Config{Path: path})
	created := time.Date(2026, 7, 1, 10, 0, 0, 123000000, time.UTC)
	for _, r := range []struct {
		id   string
		body string
	}{{"0123456789abcdef", oldScheduleBody}, {"broken", "{not json"}} {
		if _, err := s.wdb.Load().Exec(`INSERT INTO schedule (id, plant, created, body) VALUES (?, ?, ?, ?)`, r.id, "p1", created.UnixMilli(), []byte(r.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Config{Path: path})
	ctx := t.Context()
	got, err := s.Schedules(ctx, "p1")
	if err != nil || len(got) != 1 {
		t.Fatalf("schedules %+v, %v: want the one readable row", got, err)
	}
	sc := got[0]
	c0, c1 := sc.Commands[0], sc.Commands[1]
	switch {
	case sc.ScheduleID != "0123456789abcdef" || sc.PlantID != "p1" || !sc.CreatedAt.Equal(created) || sc.Role != "gridoperator" || sc.Channel != "input:rsr1" || len(sc.Commands) != 2:
		t.Errorf("schedule %+v", sc)
	case c0.Status != plant.WindowActive || *c0.Value != 60 || c0.AppliedAt == nil || !c0.Partial || len(c0.Inverters) != 2 || c0.Inverters[1].Reason.Code != "DevicesOffline" ||
		len(c0.Writes) != 1 || *c0.Writes[0].Points[0].ReadBack != 59.5:
		t.Errorf("first command %+v", c0)
	case c1.Curve == nil || len(c1.Curve.Points) != 2 || c1.Curve.Params["RspTms"] != 5 || c1.Repeat == "" || c1.Until == nil || !c1.Cancelled || len(c1.Finished) != 1:
		t.Errorf("second command %+v", c1)
	}
	if err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	var body []byte
	if err := s.rdb.Load().QueryRow(`SELECT body FROM schedule WHERE id = ?`, sc.ScheduleID).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if string(body) != oldScheduleBody {
		t.Errorf("written back as\n%s\nwant the bytes it was stored as\n%s", body, oldScheduleBody)
	}
}
