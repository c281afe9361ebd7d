package drivers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"plantd/consumer"
)

// Shelly is the Driver of one switch of a Shelly Gen2/Gen3 device (a Plus
// Plug S, a Plus 1PM, a Pro 4PM's channel) over its RPC on HTTP: each call
// is a POST of a whole request frame to <base>/rpc, answered by a
// response frame with the request's id and either a result or an error
// object {code, message}.
//
//   - protocol: https://shelly-api-docs.shelly.cloud/gen2/General/RPCProtocol
//   - HTTP channel: https://shelly-api-docs.shelly.cloud/gen2/General/RPCChannels
//   - Switch.Set, Switch.GetStatus and the switch status:
//     https://shelly-api-docs.shelly.cloud/gen2/ComponentsAndServices/Switch
//
// Read is Switch.GetStatus: output is the output, apower (W) the power and
// aenergy.total (Wh) the lifetime energy where the device meters them.
// Set is Switch.Set with on and, when switching on with a watchdog,
// toggle_after: the device switches itself off that many seconds later
// unless the next Set renews the timer first.
//
// Devices with authentication enabled (HTTP digest, RPCChannels above) are
// not supported yet: a base URL with credentials is refused, and a device
// asking for them answers 401, an error of the poll.
type Shelly struct {
	base     string // the base URL as configured, for messages
	rpc      string // base + "/rpc"
	switchID int
	client   *http.Client
	own      bool // client made here: Close drops its idle connections
	watchdog time.Duration
	seq      atomic.Uint64 // request frame ids
}

var _ consumer.Driver = (*Shelly)(nil)

// Shelly driver limits.
const (
	// shellyMaxAnswer bounds the answer body read; a switch status is
	// well under 1 KiB.
	shellyMaxAnswer = 64 << 10
	// shellyQuoteMax is how much of a bad answer an error quotes.
	shellyQuoteMax = 100
	// shellyClientTimeout bounds a request of the default client when the
	// caller's ctx has no deadline.
	shellyClientTimeout = 10 * time.Second
	// shellySrc names plantd as the source of its request frames (the
	// frame's required src).
	shellySrc = "plantd"
)

// NewShelly returns the driver of switch switchID (0 for a one-channel
// device) of the Shelly at baseURL ("http://192.0.2.10"). client nil uses
// a client of its own with a 10 s timeout; every request also carries the
// ctx of the call. watchdog is the device's fail-safe time: whole seconds,
// sent as toggle_after with every Set that switches on; 0 disables it.
func NewShelly(baseURL string, switchID int, client *http.Client, watchdog time.Duration) (*Shelly, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("consumer: shelly url %q: %w", baseURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("consumer: shelly url %q: want http:// or https://", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("consumer: shelly url %q: no host", baseURL)
	case u.User != nil:
		return nil, fmt.Errorf("consumer: shelly url %q: credentials given, digest authentication is not supported yet", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("consumer: shelly url %q: want no query or fragment", baseURL)
	}
	if switchID < 0 {
		return nil, fmt.Errorf("consumer: shelly %s: switch id %d: want 0 or more", baseURL, switchID)
	}
	if watchdog < 0 || watchdog%time.Second != 0 {
		return nil, fmt.Errorf("consumer: shelly %s: watchdog %v: want whole seconds (toggle_after), or 0 for none", baseURL, watchdog)
	}
	base := strings.TrimSuffix(baseURL, "/")
	s := &Shelly{base: base, rpc: base + "/rpc", switchID: switchID, client: client, watchdog: watchdog}
	if s.client == nil {
		s.client = &http.Client{Timeout: shellyClientTimeout}
		s.own = true
	}
	return s, nil
}

// Watchdog returns the toggle_after time Set arms when switching on.
func (s *Shelly) Watchdog() time.Duration { return s.watchdog }

// Close drops the idle connections of the driver's own client.
func (s *Shelly) Close() error {
	if s.own {
		s.client.CloseIdleConnections()
	}
	return nil
}

// shellyStatus is the part of Switch.GetStatus's result the driver reads;
// pointers tell a missing field from a zero.
type shellyStatus struct {
	ID      *int     `json:"id"`
	Output  *bool    `json:"output"`
	APower  *float64 `json:"apower"`
	AEnergy *struct {
		Total *float64 `json:"total"`
	} `json:"aenergy"`
}

// Read reads the switch's status.
func (s *Shelly) Read(ctx context.Context) (consumer.Reading, error) {
	const method = "Switch.GetStatus"
	var st shellyStatus
	if err := s.call(ctx, method, map[string]any{"id": s.switchID}, &st); err != nil {
		return consumer.Reading{}, err
	}
	if st.Output == nil {
		return consumer.Reading{}, s.bad(method, "status has no output")
	}
	if st.ID != nil && *st.ID != s.switchID {
		return consumer.Reading{}, s.bad(method, fmt.Sprintf("status of switch %d, asked for %d", *st.ID, s.switchID))
	}
	r := consumer.Reading{Output: consumer.Output{On: *st.Output}}
	if st.APower != nil && shellyFinite(*st.APower) {
		r.PowerW, r.HasPower = *st.APower, true
	}
	if st.AEnergy != nil && st.AEnergy.Total != nil && shellyFinite(*st.AEnergy.Total) {
		r.EnergyWh, r.HasEnergy = *st.AEnergy.Total, true
	}
	return r, nil
}

// Set switches the output; switching on with a watchdog arms toggle_after.
// A Shelly switch has no SG-Ready states: out.SGReady must be 0.
func (s *Shelly) Set(ctx context.Context, out consumer.Output) error {
	const method = "Switch.Set"
	if out.SGReady != 0 {
		return fmt.Errorf("consumer: shelly %s: SG-Ready state %d: a switch is on or off", s.base, out.SGReady)
	}
	params := map[string]any{"id": s.switchID, "on": out.On}
	if out.On && s.watchdog > 0 {
		params["toggle_after"] = int64(s.watchdog / time.Second)
	}
	var res struct {
		WasOn *bool `json:"was_on"`
	}
	return s.call(ctx, method, params, &res)
}

// rpcRequest is a request frame.
type rpcRequest struct {
	ID     uint64 `json:"id"`
	Src    string `json:"src"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// rpcResponse is a response frame.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *ShellyRPCError `json:"error"`
}

// ShellyRPCError is the error object of a Shelly's response frame, wrapped (with
// ErrBadAnswer) by the error of the call it answered.
type ShellyRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *ShellyRPCError) Error() string {
	return fmt.Sprintf("rpc error %d %s", e.Code, shellyQuote([]byte(e.Message)))
}

// call POSTs one request frame and decodes the result into res.
func (s *Shelly) call(ctx context.Context, method string, params, res any) error {
	id := s.seq.Add(1)
	body, err := json.Marshal(rpcRequest{ID: id, Src: shellySrc, Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("consumer: shelly %s %s: encode: %w", s.base, method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.rpc, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("consumer: shelly %s %s: %w", s.base, method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("consumer: shelly %s %s: %w", s.base, method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, shellyMaxAnswer+1))
	if err != nil {
		return fmt.Errorf("consumer: shelly %s %s: read answer: %w", s.base, method, err)
	}
	if len(data) > shellyMaxAnswer {
		return s.bad(method, fmt.Sprintf("answer longer than %d bytes: %s", shellyMaxAnswer, shellyQuote(data)))
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return s.bad(method, fmt.Sprintf("HTTP %s (the device has authentication enabled; digest authentication is not supported yet): %s", resp.Status, shellyQuote(data)))
	}
	if resp.StatusCode != http.StatusOK {
		return s.bad(method, fmt.Sprintf("HTTP %s: %s", resp.Status, shellyQuote(data)))
	}
	var f rpcResponse
	if err := json.Unmarshal(data, &f); err != nil {
		return s.bad(method, fmt.Sprintf("answer is not a JSON frame (%v): %s", err, shellyQuote(data)))
	}
	if f.Error != nil {
		return fmt.Errorf("consumer: shelly %s %s: %w: %w", s.base, method, f.Error, consumer.ErrBadAnswer)
	}
	if got := string(bytes.TrimSpace(f.ID)); got != strconv.FormatUint(id, 10) {
		return s.bad(method, fmt.Sprintf("answer to request id %s, sent %d: %s", shellyQuote([]byte(got)), id, shellyQuote(data)))
	}
	if len(f.Result) == 0 || string(f.Result) == "null" {
		return s.bad(method, fmt.Sprintf("frame has neither result nor error: %s", shellyQuote(data)))
	}
	if err := json.Unmarshal(f.Result, res); err != nil {
		return s.bad(method, fmt.Sprintf("result does not decode (%v): %s", err, shellyQuote(f.Result)))
	}
	return nil
}

// bad returns an error wrapping ErrBadAnswer that names the device, the
// method and what was wrong.
func (s *Shelly) bad(method, what string) error {
	return fmt.Errorf("consumer: shelly %s %s: %s: %w", s.base, method, what, consumer.ErrBadAnswer)
}

// shellyQuote returns b, cut to shellyQuoteMax bytes, as a Go string literal
// (control characters escaped), with the full length when cut.
func shellyQuote(b []byte) string {
	if len(b) <= shellyQuoteMax {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(b[:shellyQuoteMax])), len(b))
}

func shellyFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Fallback is off: toggle_after switches the plug off.
func (s *Shelly) Fallback() consumer.Output { return consumer.Output{} }
