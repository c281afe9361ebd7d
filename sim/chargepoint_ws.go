package sim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/lorenzodonini/ocpp-go/ws"
)

// wsClient is the twin's WebSocket client, ocpp-go's ws.WsClient on
// gorilla/websocket. ocpp-go v0.19.0's own client closes its send queue
// while its dispatcher may still send on it (ws.Client.cleanup against
// Write: a data race under -race, and a "send on closed channel" panic
// when the central system drops the connection mid-request). This one
// writes on the caller's goroutine under a lock, so a write after the
// end fails with an error instead. It does not reconnect: Run does, with
// a new client per connection.
type wsClient struct {
	mu             sync.Mutex
	conn           *websocket.Conn
	connected      bool
	stopping       bool
	done           chan struct{} // closed when the read loop ended
	onMessage      func([]byte) error
	onDisconnected func(error)
	header         http.Header
	subprotocol    string
	dialOptions    []func(*websocket.Dialer)
	timeouts       ws.ClientTimeoutConfig

	writeMu sync.Mutex // one writer at a time (gorilla's rule)
	errs    chan error // never written: ocpp-go's error channel is optional
}

var _ ws.WsClient = (*wsClient)(nil)

func newWSClient() *wsClient {
	return &wsClient{header: http.Header{}, timeouts: ws.NewClientTimeoutConfig(), errs: make(chan error)}
}

// errNotConnected is Write's error once the connection ended.
var errNotConnected = errors.New("websocket not connected")

func (c *wsClient) Start(url string) error {
	c.mu.Lock()
	d := websocket.Dialer{HandshakeTimeout: c.timeouts.HandshakeTimeout}
	if c.subprotocol != "" {
		d.Subprotocols = []string{c.subprotocol}
	}
	for _, o := range c.dialOptions {
		o(&d)
	}
	header := c.header.Clone()
	c.mu.Unlock()
	conn, resp, err := d.Dial(url, header)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
			return fmt.Errorf("%w (HTTP %s)", err, resp.Status)
		}
		return err
	}
	c.mu.Lock()
	c.conn, c.connected, c.stopping, c.done = conn, true, false, make(chan struct{})
	done := c.done
	c.mu.Unlock()
	go c.read(conn, done)
	return nil
}

// read hands each message to the handler until the connection ends, then
// reports the end (unless Stop asked for it: Stop reports it then).
func (c *wsClient) read(conn *websocket.Conn, done chan struct{}) {
	defer close(done)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.connected = false
			stopping, h := c.stopping, c.onDisconnected
			c.mu.Unlock()
			conn.Close()
			if !stopping && h != nil {
				h(err)
			}
			return
		}
		c.mu.Lock()
		h := c.onMessage
		c.mu.Unlock()
		if h != nil {
			_ = h(data) // ocpp-go answers a bad frame itself where it can
		}
	}
}

// StartWithRetries is Start once: the twin's Run does the retrying.
func (c *wsClient) StartWithRetries(url string) { _ = c.Start(url) }

// Stop closes the connection, waits for the read loop and reports the end
// to the disconnected handler, which ocppj.Client.Stop waits for.
func (c *wsClient) Stop() {
	c.mu.Lock()
	conn, done := c.conn, c.done
	c.connected, c.stopping = false, true
	c.mu.Unlock()
	if conn != nil {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = conn.Close()
	}
	if done != nil {
		<-done
	}
	c.mu.Lock()
	h := c.onDisconnected
	c.mu.Unlock()
	if h != nil {
		h(nil)
	}
}

func (c *wsClient) Errors() <-chan error { return c.errs }

func (c *wsClient) SetMessageHandler(h func(data []byte) error) {
	c.mu.Lock()
	c.onMessage = h
	c.mu.Unlock()
}

func (c *wsClient) SetTimeoutConfig(t ws.ClientTimeoutConfig) {
	c.mu.Lock()
	c.timeouts = t
	c.mu.Unlock()
}

func (c *wsClient) SetDisconnectedHandler(h func(err error)) {
	c.mu.Lock()
	c.onDisconnected = h
	c.mu.Unlock()
}

// SetReconnectedHandler is kept for the interface: this client never
// reconnects by itself.
func (c *wsClient) SetReconnectedHandler(func()) {}

func (c *wsClient) IsConnected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

// Write sends one text frame on the caller's goroutine.
func (c *wsClient) Write(data []byte) error {
	c.mu.Lock()
	conn, ok := c.conn, c.connected
	wt := c.timeouts.WriteWait
	c.mu.Unlock()
	if !ok {
		return errNotConnected
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if wt > 0 {
		_ = conn.SetWriteDeadline(time.Now().Add(wt))
	}
	if err := conn.WriteMessage(websocket.TextMessage, data); err != nil {
		return fmt.Errorf("websocket write: %w", err)
	}
	return nil
}

// AddOption takes a func(*websocket.Dialer), as ocpp-go's client does.
func (c *wsClient) AddOption(o interface{}) {
	if f, ok := o.(func(*websocket.Dialer)); ok {
		c.mu.Lock()
		c.dialOptions = append(c.dialOptions, f)
		c.mu.Unlock()
	}
}

func (c *wsClient) SetRequestedSubProtocol(p string) {
	c.mu.Lock()
	c.subprotocol = p
	c.mu.Unlock()
}

func (c *wsClient) SetBasicAuth(user, password string) {
	c.SetHeaderValue("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

func (c *wsClient) SetHeaderValue(key, value string) {
	c.mu.Lock()
	c.header.Set(key, value)
	c.mu.Unlock()
}
