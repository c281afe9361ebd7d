package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A simulated Shelly Gen2 plug (the twin of a Shelly Plus Plug S) speaks
// the documented Gen2 RPC over HTTP on a loopback port of its own:
//
//   - the protocol (request frame id, src, method, params; response frame
//     id, src, dst, result or error{code, message}):
//     https://shelly-api-docs.shelly.cloud/gen2/General/RPCProtocol
//   - the HTTP channel (POST /rpc with a whole frame, POST /rpc/<Method>
//     with the params as body, GET /rpc/<Method>?<params>):
//     https://shelly-api-docs.shelly.cloud/gen2/General/RPCChannels
//   - the common error codes (-103 invalid argument, -105 not found):
//     https://shelly-api-docs.shelly.cloud/gen2/General/CommonErrors
//   - Shelly.GetDeviceInfo:
//     https://shelly-api-docs.shelly.cloud/gen2/ComponentsAndServices/Shelly
//   - Switch.Set (id, on, toggle_after → was_on), Switch.Toggle,
//     Switch.GetStatus and the switch status (id, source, output,
//     timer_started_at, timer_duration, apower, voltage, current, freq,
//     aenergy{total, by_minute, minute_ts}, temperature{tC, tF}):
//     https://shelly-api-docs.shelly.cloud/gen2/ComponentsAndServices/Switch
//
// The plug has one switch, id 0. Authentication is off (auth_en false), as
// on a device whose owner never set a password.

// ShellyConfig is one simulated Shelly plug with an appliance behind it.
type ShellyConfig struct {
	// ID names the plug in the plant ("plug1"); it also makes the
	// device's own id ("shellyplusplugs-" and 12 hex digits) and MAC.
	// Required, unique among devices and plugs, at most 28 printable
	// ASCII characters.
	ID string
	// RatedW is the appliance's draw while the plug is on (default 1200,
	// at most 3680: 16 A at 230 V).
	RatedW float64
	// Port is the plug's HTTP port; 0 picks a free one at Start.
	Port int
}

// Simulated plug constants.
const (
	defaultShellyRatedW = 1200
	maxShellyRatedW     = 3680
	shellyModel         = "SNPL-00112EU" // Shelly Plus Plug S
	shellyApp           = "PlugS"
	shellyVer           = "1.0.0"
	shellyFwID          = "20250101-000000/1.0.0-plantd-sim"
	shellyMaxBody       = 16 << 10 // request bodies it reads
	shellyHistory       = 4 * time.Minute
	shellyHeaderTimeout = 10 * time.Second
	shellyShutdownWait  = 5 * time.Second
)

// Gen2 RPC error codes the plug answers (CommonErrors page above); 404 is
// what the simulator answers to an unknown method.
const (
	rpcInvalidArgument = -103
	rpcNotFound        = -105
	rpcNoHandler       = 404
)

// shelliesWithDefaults checks c.Shellies and fills their defaults; c.Devices
// must already be checked (their ids and ports are compared).
func (c *Config) shelliesWithDefaults() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	if len(c.Shellies) == 0 {
		return nil
	}
	ids := map[string]string{}
	ports := map[int]string{}
	for _, d := range c.Devices {
		ids[d.ID] = "a device"
		if d.Port != 0 {
			ports[d.Port] = "device " + d.ID
		}
	}
	out := make([]ShellyConfig, len(c.Shellies))
	copy(out, c.Shellies)
	for i := range out {
		s := &out[i]
		field := fmt.Sprintf("shellies[%d]", i)
		if err := checkID(field, s.ID); err != nil {
			return err
		}
		if other, ok := ids[s.ID]; ok {
			return bad("%s.id %q: already used by %s", field, s.ID, other)
		}
		ids[s.ID] = "another plug"
		if s.RatedW == 0 {
			s.RatedW = defaultShellyRatedW
		}
		if math.IsNaN(s.RatedW) || s.RatedW < 0 || s.RatedW > maxShellyRatedW {
			return bad("%s.ratedW %v outside 0..%d", field, s.RatedW, maxShellyRatedW)
		}
		if s.Port < 0 || s.Port > 65535 {
			return bad("%s.port %d outside 0..65535", field, s.Port)
		}
		if s.Port != 0 {
			if other, ok := ports[s.Port]; ok {
				return bad("%s.port %d: already used by %s", field, s.Port, other)
			}
			ports[s.Port] = "plug " + s.ID
		}
	}
	c.Shellies = out
	return nil
}

// ShellyFaultKind is a way a simulated plug misbehaves on HTTP.
type ShellyFaultKind uint8

// The plug's fault kinds; each applies to every request, which is then
// not executed.
const (
	// ShellyFaultNone answers normally.
	ShellyFaultNone ShellyFaultKind = iota
	// ShellyFault500 answers HTTP 500 with a plain-text body.
	ShellyFault500
	// ShellyFaultGarbage answers HTTP 200, Content-Type application/json,
	// with a body that is not JSON (control characters included).
	ShellyFaultGarbage
	// ShellyFaultHang never answers: the request stays open until the
	// client gives up or the plant closes.
	ShellyFaultHang
	// ShellyFaultSlow answers normally after ShellyFault.Delay (1 s when
	// 0), executing the request then.
	ShellyFaultSlow
)

var shellyFaultNames = [...]string{
	ShellyFaultNone:    "none",
	ShellyFault500:     "http-500",
	ShellyFaultGarbage: "garbage",
	ShellyFaultHang:    "hang",
	ShellyFaultSlow:    "slow",
}

// String returns the fault kind's name ("http-500", "hang", ...).
func (k ShellyFaultKind) String() string {
	if int(k) < len(shellyFaultNames) {
		return shellyFaultNames[k]
	}
	return fmt.Sprintf("ShellyFaultKind(%d)", uint8(k))
}

// ShellyFault is the misbehaviour injected into one plug.
type ShellyFault struct {
	Kind ShellyFaultKind
	// Delay is how late ShellyFaultSlow answers (default 1 s).
	Delay time.Duration
}

// shellyGarbage is what ShellyFaultGarbage answers: no JSON, with bytes a
// careless log line would pass to a terminal.
const shellyGarbage = "\x00\x1b[2J<html><body>gateway \x07error</body></html>\r\n"

// Shelly is a simulated Shelly Gen2 plug of a Plant.
type Shelly struct {
	plant *Plant
	cfg   ShellyConfig
	devID string // "shellyplusplugs-<mac>"
	mac   string // 12 upper-case hex digits
	log   *slog.Logger
	load  *load

	// Guarded by plant.mu.
	on     bool
	source string      // of the last command: "init", "http", "timer"
	timer  shellyTimer // a running toggle_after
	hist   []switchEv  // output changes in sim time, future timer flips included

	fmu   sync.Mutex
	fault ShellyFault

	life   sync.Mutex // guards the fields below
	srv    *http.Server
	addr   string
	closed bool
	done   chan struct{} // closed by close: unblocks hanging answers
	active sync.WaitGroup
	// onHang, set by tests, is called when a request starts hanging.
	onHang func()
}

// shellyTimer is a toggle_after timer; it runs on the wall clock
// (Config.Now), as the device's own timer does in real time.
type shellyTimer struct {
	startWall time.Time     // wall clock at the Switch.Set
	dur       time.Duration // zero: no timer
	to        bool          // the output it sets on expiry
}

// switchEv is the plug's output from sim time at on.
type switchEv struct {
	at time.Time
	on bool
}

// addShellies builds the configured plugs and registers their loads.
func (p *Plant) addShellies() {
	for _, sc := range p.cfg.Shellies {
		h := fnv.New64a()
		_, _ = h.Write([]byte(sc.ID))
		mac := fmt.Sprintf("%012X", h.Sum64()&0xFFFFFFFFFFFF)
		s := &Shelly{
			plant: p, cfg: sc, mac: mac,
			devID:  "shellyplusplugs-" + strings.ToLower(mac),
			log:    p.log.With("device", sc.ID),
			source: "init",
			hist:   []switchEv{{at: p.t}},
			done:   make(chan struct{}),
		}
		s.load = &load{id: sc.ID, power: s.powerAt, next: s.nextSwitch}
		p.addLoadLocked(s.load)
		p.shellies = append(p.shellies, s)
	}
}

// startShellies binds every plug's port and serves it; on an error it
// closes the plugs it started.
func (p *Plant) startShellies() error {
	for i, s := range p.shellies {
		if err := s.start(p.cfg.Listen); err != nil {
			for _, o := range p.shellies[:i] {
				o.close()
			}
			return fmt.Errorf("sim: start shelly %s: %w", s.cfg.ID, err)
		}
		s.log.Info("simulated shelly serving", "id", s.devID, "addr", s.Addr(), "ratedW", s.cfg.RatedW)
	}
	return nil
}

// closeShellies stops every plug and waits for its answers in flight.
func (p *Plant) closeShellies() {
	for _, s := range p.shellies {
		s.close()
	}
}

// Shellies returns the plant's plugs in config order.
func (p *Plant) Shellies() []*Shelly { return append([]*Shelly(nil), p.shellies...) }

// Shelly returns the plug with the id, or nil.
func (p *Plant) Shelly(id string) *Shelly {
	for _, s := range p.shellies {
		if s.cfg.ID == id {
			return s
		}
	}
	return nil
}

// ID returns the plug's id in the plant ("plug1").
func (s *Shelly) ID() string { return s.cfg.ID }

// DeviceID returns the id the device reports ("shellyplusplugs-<mac>").
func (s *Shelly) DeviceID() string { return s.devID }

// Addr returns the plug's host:port once started ("127.0.0.1:PORT").
func (s *Shelly) Addr() string {
	s.life.Lock()
	defer s.life.Unlock()
	return s.addr
}

// URL returns the plug's base URL once started ("http://127.0.0.1:PORT").
func (s *Shelly) URL() string {
	if a := s.Addr(); a != "" {
		return "http://" + a
	}
	return ""
}

// SetFault injects f into every request from now on; ShellyFault{}
// clears it.
func (s *Shelly) SetFault(f ShellyFault) {
	if f.Kind == ShellyFaultSlow && f.Delay <= 0 {
		f.Delay = defaultSlowDelay
	}
	s.fmu.Lock()
	s.fault = f
	s.fmu.Unlock()
}

// Fault returns the plug's fault.
func (s *Shelly) Fault() ShellyFault {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.fault
}

// ShellyState is a plug's state as its status shows it.
type ShellyState struct {
	On       bool
	PowerW   float64
	EnergyWh float64
	// TimerEnd is when a running toggle_after flips the output (wall
	// clock); zero without a timer.
	TimerEnd time.Time
}

// State returns the plug's state at the current time.
func (s *Shelly) State() ShellyState {
	p := s.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	s.syncLocked()
	st := ShellyState{On: s.on, PowerW: s.load.w, EnergyWh: s.load.energyWh}
	if s.timer.dur > 0 {
		st.TimerEnd = s.timer.startWall.Add(s.timer.dur)
	}
	return st
}

// outputAt is the output at sim time t, from the history.
func (s *Shelly) outputAt(t time.Time) bool {
	on := false
	for _, ev := range s.hist {
		if ev.at.After(t) {
			break
		}
		on = ev.on
	}
	return on
}

// powerAt is the load's draw at sim time t (the load's power hook).
func (s *Shelly) powerAt(t time.Time) float64 {
	if s.outputAt(t) {
		return s.cfg.RatedW
	}
	return 0
}

// nextSwitch is the first output change after sim time t (the load's next
// hook): a timer's flip.
func (s *Shelly) nextSwitch(t time.Time) time.Time {
	for _, ev := range s.hist {
		if ev.at.After(t) {
			return ev.at
		}
	}
	return time.Time{}
}

// syncLocked brings the plant to now and applies a toggle_after timer
// that expired; it returns the wall clock it used.
func (s *Shelly) syncLocked() time.Time {
	p := s.plant
	wall := p.cfg.Now()
	p.advanceLocked(p.simAt(wall))
	if s.timer.dur > 0 && !wall.Before(s.timer.startWall.Add(s.timer.dur)) {
		s.on = s.timer.to
		s.source = "timer"
		s.timer = shellyTimer{}
	}
	// Drop history the by-minute energies no longer need, keeping the
	// last change before the cutoff.
	cut := p.simAt(wall.Truncate(time.Minute).Add(-shellyHistory))
	i := 0
	for i+1 < len(s.hist) && !s.hist[i+1].at.After(cut) {
		i++
	}
	s.hist = s.hist[i:]
	return wall
}

// setLocked switches the output at wall time wall (after syncLocked),
// arming a toggle_after timer when after > 0; it returns the output
// before.
func (s *Shelly) setLocked(wall time.Time, on bool, after time.Duration) bool {
	p := s.plant
	was := s.on
	now := p.simAt(wall)
	// A new command replaces a running timer: drop its pending flip.
	n := len(s.hist)
	for n > 1 && s.hist[n-1].at.After(now) {
		n--
	}
	s.hist = s.hist[:n]
	if s.hist[n-1].on != on {
		s.hist = append(s.hist, switchEv{at: now, on: on})
	}
	s.on, s.source, s.timer = on, "http", shellyTimer{}
	if after > 0 {
		s.timer = shellyTimer{startWall: wall, dur: after, to: !on}
		s.hist = append(s.hist, switchEv{at: p.simAt(wall.Add(after)), on: !on})
	}
	p.flowsLocked(p.t)
	return was
}

// energyWhLocked is the energy the appliance drew between sim times a and
// b, from the history.
func (s *Shelly) energyWhLocked(a, b time.Time) float64 {
	if !b.After(a) {
		return 0
	}
	var on time.Duration
	for i, ev := range s.hist {
		if !ev.on {
			continue
		}
		from, to := ev.at, b
		if i+1 < len(s.hist) {
			to = s.hist[i+1].at
		}
		if from.Before(a) {
			from = a
		}
		if to.After(b) {
			to = b
		}
		if to.After(from) {
			on += to.Sub(from)
		}
	}
	return s.cfg.RatedW * on.Hours()
}

// start binds the plug's port and serves HTTP on it.
func (s *Shelly) start(host string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: shellyHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// The device closes the connection after each answer (RPCChannels:
	// no keepalive on HTTP).
	srv.SetKeepAlivesEnabled(false)
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	s.srv, s.addr = srv, ln.Addr().String()
	s.plant.wg.Add(1)
	s.life.Unlock()
	go func() {
		defer s.plant.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("simulated shelly stopped", "err", err)
		}
	}()
	return nil
}

// close stops the server, ends hanging answers and waits for the
// answers in flight.
func (s *Shelly) close() {
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		return
	}
	s.closed = true
	srv := s.srv
	close(s.done)
	s.life.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shellyShutdownWait)
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		cancel()
	}
	s.active.Wait()
}

// enter counts a request in flight; false once the plug is closing.
func (s *Shelly) enter() bool {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// rpcError is a Gen2 error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcFrame is a request frame (POST /rpc).
type rpcFrame struct {
	ID     json.RawMessage `json:"id"`
	Src    string          `json:"src"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// handler serves /rpc, /rpc/<Method> and /shelly.
func (s *Shelly) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/rpc", s.guard(s.serveFrame))
	mux.HandleFunc("/rpc/{method}", s.guard(s.serveMethod))
	mux.HandleFunc("GET /shelly", s.guard(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.deviceInfo())
	}))
	return mux
}

// guard counts the request in flight and applies the plug's fault.
func (s *Shelly) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			http.Error(w, "closing", http.StatusServiceUnavailable)
			return
		}
		defer s.active.Done()
		switch f := s.Fault(); f.Kind {
		case ShellyFault500:
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		case ShellyFaultGarbage:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(shellyGarbage))
			return
		case ShellyFaultHang:
			if s.onHang != nil {
				s.onHang()
			}
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			// Drop the connection without an answer.
			panic(http.ErrAbortHandler)
		case ShellyFaultSlow:
			t := time.NewTimer(f.Delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				panic(http.ErrAbortHandler)
			case <-s.done:
				panic(http.ErrAbortHandler)
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, shellyMaxBody)
		next(w, r)
	}
}

// serveFrame answers POST /rpc: a whole request frame in, a whole
// response frame out (HTTP 200 with result or error; 400 when the frame
// is not one).
func (s *Shelly) serveFrame(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a request frame", http.StatusMethodNotAllowed)
		return
	}
	var f rpcFrame
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&f); err != nil || f.Method == "" || len(f.ID) == 0 {
		msg := "Invalid request frame"
		if err != nil {
			msg += ": " + err.Error()
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"id": nil, "src": s.devID,
			"error": rpcError{Code: rpcInvalidArgument, Message: msg},
		})
		return
	}
	res, rerr := s.call(f.Method, f.Params)
	out := map[string]any{"id": f.ID, "src": s.devID}
	if f.Src != "" {
		out["dst"] = f.Src
	}
	if rerr != nil {
		out["error"] = rerr
	} else {
		out["result"] = res
	}
	writeJSON(w, http.StatusOK, out)
}

// serveMethod answers GET /rpc/<Method>?<params> and POST /rpc/<Method>
// with the params as body: the result alone, or the error object with an
// HTTP error status (the channel has no frame to tell them apart).
func (s *Shelly) serveMethod(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	var params json.RawMessage
	switch r.Method {
	case http.MethodGet:
		m := map[string]any{}
		for k, vs := range r.URL.Query() {
			v := vs[len(vs)-1]
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				x = v // a bare string
			}
			m[k] = x
		}
		params, _ = json.Marshal(m)
	case http.MethodPost:
		var raw json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
			writeJSON(w, http.StatusBadRequest, rpcError{Code: rpcInvalidArgument, Message: "Invalid params: " + err.Error()})
			return
		}
		params = raw
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	res, rerr := s.call(method, params)
	if rerr != nil {
		status := http.StatusInternalServerError
		switch rerr.Code {
		case rpcInvalidArgument:
			status = http.StatusBadRequest
		case rpcNotFound, rpcNoHandler:
			status = http.StatusNotFound
		}
		writeJSON(w, status, rerr)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeJSON writes v as the JSON answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// switchParams are the params of the Switch methods.
type switchParams struct {
	ID          *int     `json:"id"`
	On          *bool    `json:"on"`
	ToggleAfter *float64 `json:"toggle_after"`
}

// call executes one method. Method names match without regard to case.
func (s *Shelly) call(method string, raw json.RawMessage) (any, *rpcError) {
	var sp switchParams
	if len(raw) != 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, &rpcError{Code: rpcInvalidArgument, Message: "Invalid params: " + err.Error()}
		}
	}
	checkID := func() *rpcError {
		if sp.ID == nil {
			return &rpcError{Code: rpcInvalidArgument, Message: "Missing required 'id'"}
		}
		if *sp.ID != 0 {
			return &rpcError{Code: rpcNotFound, Message: fmt.Sprintf("Bad id=%d", *sp.ID)}
		}
		return nil
	}
	p := s.plant
	switch {
	case strings.EqualFold(method, "Shelly.GetDeviceInfo"):
		return s.deviceInfo(), nil
	case strings.EqualFold(method, "Switch.GetStatus"):
		if e := checkID(); e != nil {
			return nil, e
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return s.statusLocked(s.syncLocked()), nil
	case strings.EqualFold(method, "Switch.Set"):
		if e := checkID(); e != nil {
			return nil, e
		}
		if sp.On == nil {
			return nil, &rpcError{Code: rpcInvalidArgument, Message: "Missing required 'on'"}
		}
		var after time.Duration
		if sp.ToggleAfter != nil {
			ta := *sp.ToggleAfter
			if math.IsNaN(ta) || ta <= 0 || ta > 1e9 {
				return nil, &rpcError{Code: rpcInvalidArgument, Message: fmt.Sprintf("Invalid toggle_after %v", ta)}
			}
			after = time.Duration(ta * float64(time.Second))
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		wall := s.syncLocked()
		was := s.setLocked(wall, *sp.On, after)
		s.log.Debug("shelly switched", "on", *sp.On, "toggleAfter", after)
		return map[string]bool{"was_on": was}, nil
	case strings.EqualFold(method, "Switch.Toggle"):
		if e := checkID(); e != nil {
			return nil, e
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		wall := s.syncLocked()
		was := s.setLocked(wall, !s.on, 0)
		return map[string]bool{"was_on": was}, nil
	}
	return nil, &rpcError{Code: rpcNoHandler, Message: "No handler for " + method}
}

// deviceInfo is Shelly.GetDeviceInfo's result.
func (s *Shelly) deviceInfo() map[string]any {
	return map[string]any{
		"name": nil, "id": s.devID, "mac": s.mac, "model": shellyModel,
		"gen": 2, "fw_id": shellyFwID, "ver": shellyVer, "app": shellyApp,
		"auth_en": false, "auth_domain": nil,
	}
}

// shellyStatus is Switch.GetStatus's result.
type shellyStatus struct {
	ID             int               `json:"id"`
	Source         string            `json:"source"`
	Output         bool              `json:"output"`
	TimerStartedAt *float64          `json:"timer_started_at,omitempty"`
	TimerDuration  *float64          `json:"timer_duration,omitempty"`
	APower         float64           `json:"apower"`
	Voltage        float64           `json:"voltage"`
	Current        float64           `json:"current"`
	Freq           float64           `json:"freq"`
	AEnergy        shellyEnergy      `json:"aenergy"`
	Temperature    shellyTemperature `json:"temperature"`
}

type shellyEnergy struct {
	Total    float64    `json:"total"`     // Wh
	ByMinute [3]float64 `json:"by_minute"` // mWh
	MinuteTS int64      `json:"minute_ts"` // Unix seconds
}

type shellyTemperature struct {
	TC float64 `json:"tC"`
	TF float64 `json:"tF"`
}

// statusLocked renders the switch status at wall time wall (after
// syncLocked). by_minute holds the energy of the three whole minutes
// before minute_ts, the start of the current minute, newest first.
func (s *Shelly) statusLocked(wall time.Time) shellyStatus {
	p := s.plant
	w := s.load.w
	v := p.env.phaseV[0]
	st := shellyStatus{
		Source:  s.source,
		Output:  s.on,
		APower:  round(w, 1),
		Voltage: round(v, 1),
		Freq:    round(p.env.hz, 2),
		AEnergy: shellyEnergy{Total: round(s.load.energyWh, 3)},
	}
	if v > 0 {
		st.Current = round(w/v, 3)
	}
	if s.timer.dur > 0 {
		at := float64(s.timer.startWall.UnixNano()) / 1e9
		d := s.timer.dur.Seconds()
		st.TimerStartedAt, st.TimerDuration = &at, &d
	}
	m0 := wall.Truncate(time.Minute)
	st.AEnergy.MinuteTS = m0.Unix()
	for i := range st.AEnergy.ByMinute {
		a := m0.Add(-time.Duration(i+1) * time.Minute)
		b := a.Add(time.Minute)
		st.AEnergy.ByMinute[i] = round(1000*s.energyWhLocked(p.simAt(a), p.simAt(b)), 3)
	}
	tc := 28 + 12*w/math.Max(s.cfg.RatedW, 1)
	st.Temperature = shellyTemperature{TC: round(tc, 1), TF: round(tc*9/5+32, 1)}
	return st
}

// round rounds x to n decimals.
func round(x float64, n int) float64 {
	f := math.Pow10(n)
	return math.Round(x*f) / f
}
