package charger

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/lorenzodonini/ocpp-go/ws"
)

// wsServer is the websocket layer under ocpp-go's OCPP-J server, in place
// of ocpp-go's ws.Server, which listens on ":port" only (every interface),
// sets the address it reports from Addr without a lock while Start runs,
// and does not wait for its connections' goroutines when stopped. This
// one serves a listener its owner bound (any host:port), and shutdown
// closes every connection and returns once their goroutines have ended.
//
// A charge point connects at <path>/<id>; the check handler (the
// Central's, set through ocpp-go) decides from the id and the request
// whether to accept it. A second connection of a connected id replaces
// the first: a charger that reconnects has usually lost the old one
// without a close (power cut, NAT timeout).
type wsServer struct {
	ln       net.Listener
	path     string
	malform  func(id string, err error) // a frame ocpp-go could not handle
	upgrader websocket.Upgrader
	http     *http.Server

	// started is closed when ocpp-go's Start reaches the server, its
	// dispatcher started: only then may its Stop be called (v0.19.0
	// closes the dispatcher's channels, nil before its Start).
	started chan struct{}

	// Set by ocpp-go before Start, read by connections only after.
	onMessage    func(ws.Channel, []byte) error
	onConnect    func(ws.Channel)
	onDisconnect func(ws.Channel)
	check        func(id string, r *http.Request) bool
	basicAuth    func(user, pass string) bool
	timeouts     ws.ServerTimeoutConfig

	mu     sync.Mutex
	conns  map[string]*wsConn
	closed bool
	wg     sync.WaitGroup // every connection's goroutines
	errC   chan error
}

var _ ws.WsServer = (*wsServer)(nil)

// wsConn is one charge point's connection; it is the ws.Channel ocpp-go
// hands to the Central's handlers.
type wsConn struct {
	id     string
	remote net.Addr
	conn   *websocket.Conn
	out    chan []byte
	done   chan struct{} // closed when the connection ends
	gone   chan struct{} // closed once the disconnect handler has run
	once   sync.Once
}

func (c *wsConn) ID() string                               { return c.id }
func (c *wsConn) RemoteAddr() net.Addr                     { return c.remote }
func (c *wsConn) TLSConnectionState() *tls.ConnectionState { return nil }

// stop ends the connection: its loops see done and return.
func (c *wsConn) stop() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// pingEvery is how often the server pings a charge point; a connection
// that shows no sign of life (a frame, a ping or a pong) for three times
// that is closed.
const pingEvery = 30 * time.Second

// newWSServer returns a server of charge points under path; its owner
// sets ln before Start.
func newWSServer(path string, malform func(id string, err error)) *wsServer {
	s := &wsServer{
		path:     path,
		malform:  malform,
		conns:    map[string]*wsConn{},
		started:  make(chan struct{}),
		timeouts: ws.NewServerTimeoutConfig(),
		errC:     make(chan error),
	}
	s.timeouts.PingWait = 3 * pingEvery
	mux := http.NewServeMux()
	mux.HandleFunc(path+"/{id}", s.handle)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Start serves until shutdown; ocpp-go's port and path are ignored (the
// listener and path were given to newWSServer).
func (s *wsServer) Start(int, string) {
	close(s.started)
	_ = s.http.Serve(s.ln) // http.ErrServerClosed after shutdown
}

// Stop shuts the server down; it is what ocpp-go's Stop calls.
func (s *wsServer) Stop() { s.shutdown() }

// shutdown stops accepting, closes every connection and waits until
// their goroutines (and disconnect handlers) have ended. It may be called
// more than once.
func (s *wsServer) shutdown() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*wsConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	_ = s.http.Close()
	for _, c := range conns {
		c.stop()
	}
	s.wg.Wait()
}

func (s *wsServer) StopConnection(id string, closeErr websocket.CloseError) error {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("charge point %s is not connected", id)
	}
	_ = c.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(closeErr.Code, closeErr.Text), time.Now().Add(s.timeouts.WriteWait))
	c.stop()
	return nil
}

// Errors returns a channel nothing is sent on: errors are logged.
func (s *wsServer) Errors() <-chan error { return s.errC }

func (s *wsServer) SetMessageHandler(h func(ws.Channel, []byte) error) { s.onMessage = h }
func (s *wsServer) SetNewClientHandler(h func(ws.Channel))             { s.onConnect = h }
func (s *wsServer) SetDisconnectedClientHandler(h func(ws.Channel))    { s.onDisconnect = h }
func (s *wsServer) SetTimeoutConfig(c ws.ServerTimeoutConfig)          { s.timeouts = c }
func (s *wsServer) SetBasicAuthHandler(h func(user, pass string) bool) { s.basicAuth = h }
func (s *wsServer) SetCheckOriginHandler(h func(*http.Request) bool)   { s.upgrader.CheckOrigin = h }
func (s *wsServer) SetCheckClientHandler(h func(string, *http.Request) bool) {
	s.check = h
}

func (s *wsServer) AddSupportedSubprotocol(p string) {
	if !slices.Contains(s.upgrader.Subprotocols, p) {
		s.upgrader.Subprotocols = append(s.upgrader.Subprotocols, p)
	}
}

// Addr returns the listener's address.
func (s *wsServer) Addr() *net.TCPAddr {
	a, _ := s.ln.Addr().(*net.TCPAddr)
	return a
}

// Connections returns nil: ocpp-go's OCPP-J layer does not call it, and
// a ws.WebSocket cannot be made outside its package.
func (s *wsServer) Connections(string) *ws.WebSocket { return nil }

// Write queues data for the charge point id.
func (s *wsServer) Write(id string, data []byte) error {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("charge point %s is not connected", id)
	}
	select {
	case c.out <- data:
		return nil
	case <-c.done:
		return fmt.Errorf("charge point %s disconnected", id)
	}
}

// handle is the HTTP handler of <path>/{id}: it checks the charge point,
// upgrades and runs the connection's read loop.
func (s *wsServer) handle(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.basicAuth != nil {
		user, pass, ok := r.BasicAuth()
		if !ok || !s.basicAuth(user, pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="plantd"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	if s.check != nil && !s.check(id, r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="plantd"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if offered := websocket.Subprotocols(r); len(s.upgrader.Subprotocols) > 0 &&
		!slices.ContainsFunc(offered, func(p string) bool { return slices.Contains(s.upgrader.Subprotocols, p) }) {
		s.malform(id, fmt.Errorf("no supported websocket subprotocol in %q (want %q)", offered, s.upgrader.Subprotocols))
		http.Error(w, "unsupported subprotocol", http.StatusBadRequest)
		return
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	old := s.conns[id]
	s.mu.Unlock()
	defer s.wg.Done()
	if old != nil {
		old.stop()
		<-old.gone
	}

	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered with an HTTP error
	}
	c := &wsConn{
		id: id, remote: conn.RemoteAddr(), conn: conn,
		out: make(chan []byte, 8), done: make(chan struct{}), gone: make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed || s.conns[id] != nil {
		// Shut down, or a third connection of id won the race.
		s.mu.Unlock()
		_ = conn.Close()
		return
	}
	s.conns[id] = c
	s.mu.Unlock()

	if s.onConnect != nil {
		s.onConnect(c)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.writeLoop(c)
	}()
	s.readLoop(c)

	c.stop()
	s.mu.Lock()
	if s.conns[id] == c {
		delete(s.conns, id)
	}
	s.mu.Unlock()
	if s.onDisconnect != nil {
		s.onDisconnect(c)
	}
	close(c.gone)
}

// alive moves the connection's read deadline on.
func (s *wsServer) alive(c *wsConn) {
	if s.timeouts.PingWait > 0 {
		_ = c.conn.SetReadDeadline(time.Now().Add(s.timeouts.PingWait))
	}
}

// readLoop hands each frame to ocpp-go until the connection ends.
func (s *wsServer) readLoop(c *wsConn) {
	c.conn.SetPingHandler(func(data string) error {
		s.alive(c)
		err := c.conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.timeouts.WriteWait))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	c.conn.SetPongHandler(func(string) error { s.alive(c); return nil })
	s.alive(c)
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		s.alive(c)
		if s.onMessage == nil {
			continue
		}
		if err := s.onMessage(c, data); err != nil {
			s.malform(c.id, err)
		}
	}
}

// writeLoop writes queued frames and pings until the connection ends.
func (s *wsServer) writeLoop(c *wsConn) {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case data := <-c.out:
			_ = c.conn.SetWriteDeadline(time.Now().Add(s.timeouts.WriteWait))
			if err := c.conn.WriteMessage(websocket.TextMessage, data); err != nil {
				c.stop()
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.timeouts.WriteWait)); err != nil {
				c.stop()
				return
			}
		}
	}
}
