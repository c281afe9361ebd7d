package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"plantd/plant/kind"
)

// shellyConfig is a meter and one 1200 W plug "plug" on a manual clock.
func shellyConfig(clk *manualClock) Config {
	return Config{
		Now:      clk.Now,
		ClearSky: true,
		Devices:  []DeviceConfig{{ID: "meter", Kind: kind.Meter}},
		Shellies: []ShellyConfig{{ID: "plug", RatedW: 1200}},
	}
}

// rpcGet GETs /rpc/<method>?query and returns the status and the decoded
// body.
func rpcGet(t *testing.T, s *Shelly, pathQuery string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(s.URL() + pathQuery)
	if err != nil {
		t.Fatalf("GET %s: %v", pathQuery, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, decodeBody(t, resp.Body)
}

// rpcPost POSTs a body to path and returns the status and decoded body.
func rpcPost(t *testing.T, s *Shelly, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, decodeBody(t, resp.Body)
}

func decodeBody(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return m
}

func TestShellyConfig(t *testing.T) {
	dev := []DeviceConfig{{ID: "meter", Kind: kind.Meter, Port: 1502}}
	cases := []struct {
		name     string
		shellies []ShellyConfig
		want     string // "" for valid
	}{
		{"default rating", []ShellyConfig{{ID: "plug"}}, ""},
		{"missing id", []ShellyConfig{{RatedW: 100}}, "shellies[0].id: missing"},
		{"id with space", []ShellyConfig{{ID: "my plug"}}, "only printable ASCII"},
		{"id of a device", []ShellyConfig{{ID: "meter"}}, `shellies[0].id "meter": already used by a device`},
		{"id twice", []ShellyConfig{{ID: "a"}, {ID: "a"}}, `shellies[1].id "a": already used by another plug`},
		{"negative rating", []ShellyConfig{{ID: "a", RatedW: -1}}, "shellies[0].ratedW -1 outside 0..3680"},
		{"rating too high", []ShellyConfig{{ID: "a", RatedW: 4000}}, "ratedW 4000 outside"},
		{"NaN rating", []ShellyConfig{{ID: "a", RatedW: math.NaN()}}, "ratedW NaN outside"},
		{"port range", []ShellyConfig{{ID: "a", Port: 70000}}, "shellies[0].port 70000 outside 0..65535"},
		{"port of a device", []ShellyConfig{{ID: "a", Port: 1502}}, "port 1502: already used by device meter"},
		{"port twice", []ShellyConfig{{ID: "a", Port: 8080}, {ID: "b", Port: 8080}}, "shellies[1].port 8080: already used by plug a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Config{Now: newClock(summerNoon).Now, Devices: dev, Shellies: tc.shellies}, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if got := p.Shelly("plug").cfg.RatedW; got != defaultShellyRatedW {
					t.Errorf("ratedW %v, want the default %d", got, defaultShellyRatedW)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}

// TestShellyRPC walks the methods over both HTTP forms and their errors.
func TestShellyRPC(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, shellyConfig(clk))
	s := p.Shelly("plug")
	if s == nil || s.URL() == "" || len(p.Shellies()) != 1 {
		t.Fatalf("plug %v, URL %q", s, s.URL())
	}

	code, info := rpcGet(t, s, "/rpc/Shelly.GetDeviceInfo")
	if code != 200 || info["gen"] != 2.0 || info["id"] != s.DeviceID() ||
		!strings.HasPrefix(s.DeviceID(), "shellyplusplugs-") || info["auth_en"] != false ||
		info["model"] != shellyModel || info["app"] != shellyApp || info["fw_id"] == "" {
		t.Fatalf("GetDeviceInfo: %d %v", code, info)
	}
	if _, again := rpcGet(t, s, "/shelly"); again["id"] != s.DeviceID() {
		t.Errorf("/shelly: %v", again)
	}

	code, res := rpcGet(t, s, "/rpc/Switch.Set?id=0&on=true&toggle_after=60")
	if code != 200 || res["was_on"] != false {
		t.Fatalf("Switch.Set: %d %v", code, res)
	}
	code, st := rpcGet(t, s, "/rpc/Switch.GetStatus?id=0")
	wantStarted := float64(summerNoon.Unix())
	if code != 200 || st["output"] != true || st["apower"] != 1200.0 || st["source"] != "http" ||
		st["timer_duration"] != 60.0 || st["timer_started_at"] != wantStarted {
		t.Fatalf("GetStatus after Set: %d %v", code, st)
	}
	if v, _ := st["voltage"].(float64); v < 225 || v > 236 {
		t.Errorf("voltage %v", st["voltage"])
	}
	if c, _ := st["current"].(float64); math.Abs(c-1200/st["voltage"].(float64)) > 0.001 {
		t.Errorf("current %v", st["current"])
	}

	// A whole frame over POST /rpc, with id, src and dst; Switch.Set
	// without toggle_after cancels the timer.
	code, f := rpcPost(t, s, "/rpc", `{"id":"a7","src":"test","method":"switch.set","params":{"id":0,"on":false}}`)
	if code != 200 || f["id"] != "a7" || f["src"] != s.DeviceID() || f["dst"] != "test" ||
		f["result"].(map[string]any)["was_on"] != true {
		t.Fatalf("frame Switch.Set: %d %v", code, f)
	}
	code, st = rpcPost(t, s, "/rpc/Switch.GetStatus", `{"id":0}`)
	if _, timer := st["timer_duration"]; code != 200 || st["output"] != false || st["apower"] != 0.0 || timer {
		t.Fatalf("GetStatus after off: %d %v", code, st)
	}

	errCases := []struct {
		name, method, path, body string
		status                   int
		code                     float64
	}{
		{"missing id", "GET", "/rpc/Switch.GetStatus", "", 400, rpcInvalidArgument},
		{"bad id", "GET", "/rpc/Switch.GetStatus?id=1", "", 404, rpcNotFound},
		{"missing on", "GET", "/rpc/Switch.Set?id=0", "", 400, rpcInvalidArgument},
		{"bad toggle_after", "GET", "/rpc/Switch.Set?id=0&on=true&toggle_after=-1", "", 400, rpcInvalidArgument},
		{"unknown method", "GET", "/rpc/Cover.Open?id=0", "", 404, rpcNoHandler},
		{"frame: bad id", "POST", "/rpc", `{"id":3,"method":"Switch.GetStatus","params":{"id":2}}`, 200, rpcNotFound},
		{"frame: not JSON", "POST", "/rpc", `{"id":`, 400, rpcInvalidArgument},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			var m map[string]any
			if tc.method == "GET" {
				code, m = rpcGet(t, s, tc.path)
			} else {
				code, m = rpcPost(t, s, tc.path, tc.body)
			}
			if e, ok := m["error"].(map[string]any); ok {
				m = e
			}
			if code != tc.status || m["code"] != tc.code || m["message"] == "" {
				t.Errorf("%d %v, want HTTP %d code %v", code, m, tc.status, tc.code)
			}
		})
	}
}

// TestShellyTimerAndEnergy checks the toggle_after timer on the wall clock,
// the load in the balance, and the energy counters.
func TestShellyTimerAndEnergy(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, shellyConfig(clk))
	s := p.Shelly("plug")
	base := p.Balance().LoadW

	rpcGet(t, s, "/rpc/Switch.Set?id=0&on=true&toggle_after=90")
	if got := p.Balance().LoadW - base; math.Abs(got-1200) > 1e-6 {
		t.Fatalf("balance load grew by %v W, want 1200", got)
	}
	if st := s.State(); !st.On || st.TimerEnd != summerNoon.Add(90*time.Second) {
		t.Fatalf("state %+v", st)
	}
	// Renew the timer at 60 s: it now ends at 150 s.
	clk.Add(60 * time.Second)
	if _, res := rpcGet(t, s, "/rpc/Switch.Set?id=0&on=true&toggle_after=90"); res["was_on"] != true {
		t.Fatalf("renewal: %v", res)
	}
	clk.Add(89 * time.Second)
	if st := s.State(); !st.On || st.PowerW != 1200 {
		t.Fatalf("at 149 s: %+v", st)
	}
	// Far past the end: off since 150 s exactly.
	clk.Add(31 * time.Second)
	_, st := rpcGet(t, s, "/rpc/Switch.GetStatus?id=0")
	if st["output"] != false || st["source"] != "timer" || st["apower"] != 0.0 {
		t.Fatalf("after the timer: %v", st)
	}
	if _, timer := st["timer_started_at"]; timer {
		t.Errorf("timer fields after expiry: %v", st)
	}
	ae := st["aenergy"].(map[string]any)
	if want := 1200 * 150.0 / 3600; math.Abs(ae["total"].(float64)-want) > 1e-3 {
		t.Errorf("aenergy.total %v Wh, want %v", ae["total"], want)
	}
	// Now 12:18:00: the minutes 12:17, 12:16, 12:15 in mWh (on from
	// 12:15:00 to 12:17:30).
	wantMin := []any{10000.0, 20000.0, 20000.0}
	if ae["minute_ts"] != float64(summerNoon.Add(3*time.Minute).Unix()) || !equalAny(ae["by_minute"].([]any), wantMin) {
		t.Errorf("by_minute %v at %v, want %v", ae["by_minute"], ae["minute_ts"], wantMin)
	}
	if got := p.Balance().LoadW - base; math.Abs(got) > 300 { // the household profile moves a little
		t.Errorf("balance load %v W above the start after the plug went off", got)
	}
}

func equalAny(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestShellyFaults checks each fault on the wire and that a faulty
// request is not executed.
func TestShellyFaults(t *testing.T) {
	clk := newClock(summerNoon)
	p := startPlant(t, shellyConfig(clk))
	s := p.Shelly("plug")
	hanging := make(chan struct{}, 1)
	s.onHang = func() { hanging <- struct{}{} }

	cases := []struct {
		fault  ShellyFault
		status int
		body   string
	}{
		{ShellyFault{Kind: ShellyFault500}, 500, "Internal Server Error\n"},
		{ShellyFault{Kind: ShellyFaultGarbage}, 200, shellyGarbage},
		{ShellyFault{Kind: ShellyFaultSlow, Delay: time.Millisecond}, 200, `{"was_on":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.fault.Kind.String(), func(t *testing.T) {
			s.SetFault(tc.fault)
			defer s.SetFault(ShellyFault{})
			resp, err := http.Get(s.URL() + "/rpc/Switch.Set?id=0&on=false")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(b) != tc.body {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}

	t.Run("hang", func(t *testing.T) {
		s.SetFault(ShellyFault{Kind: ShellyFaultHang})
		defer s.SetFault(ShellyFault{})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/rpc/Switch.Set?id=0&on=true", nil)
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		<-hanging
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("hanging request: %v, want context.Canceled", err)
		}
		if s.State().On {
			t.Error("the hanging Switch.Set was executed")
		}
	})
}

// TestShellyCloseEndsHangingRequests closes the plant with a request
// hanging: Close returns, the client sees its connection end, and the
// goroutine count comes back.
func TestShellyCloseEndsHangingRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := newClock(summerNoon)
	p, err := New(shellyConfig(clk), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	s := p.Shelly("plug")
	hanging := make(chan struct{}, 1)
	s.onHang = func() { hanging <- struct{}{} }
	s.SetFault(ShellyFault{Kind: ShellyFaultHang})
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL() + "/rpc/Switch.GetStatus?id=0")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				err = errors.New("answered")
			}
		}
		errc <- err
	}()
	<-hanging
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("the hanging request got an answer")
	}
	if _, err := http.Get(s.URL() + "/rpc/Switch.GetStatus?id=0"); err == nil {
		t.Error("the plug still answers after Close")
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
}
