//go:build !nobroker

// The embedded broker is left out of the packaged binary (tag nobroker,
// broker_off.go): it serves only plantd demo, and mochi-mqtt with its
// websocket listener is 600 KB of the static binary.

package mqtt

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"syscall"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Broker is an embedded MQTT broker (mochi-mqtt) for the demo and for
// tests on machines without mosquitto: anonymous, in memory, loopback.
// A known fault of mochi v2.7.9: it refuses a SUBSCRIBE whose packet id
// equals one of its own QoS 1 publishes still in flight to that client
// (it mixes the client's and the server's id spaces), so a client that
// subscribes again while the retained messages of its first
// subscription arrive may miss the second (Home Assistant's own client
// subscribes once; a test subscriber should put its filters in one
// SUBSCRIBE). mosquitto has no such fault.
type Broker struct {
	srv  *mochi.Server
	addr string
}

// StartBroker starts an embedded broker on addr (host:port). With
// tryNext, a port in use makes it try the next ones (up to 20). logger
// receives the broker's own log at Warn and above (nil discards).
func StartBroker(addr string, tryNext bool, logger *slog.Logger) (*Broker, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, fmt.Errorf("mqtt broker: port %q: %w", ps, err)
	}
	var ln net.Listener
	for i := 0; ; i++ {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port+i)))
		if err == nil || !tryNext || port == 0 || i >= 20 || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: logger})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		ln.Close()
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	if err := srv.AddListener(listeners.NewNet("plantd", ln)); err != nil {
		ln.Close()
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	return &Broker{srv: srv, addr: ln.Addr().String()}, nil
}

// Addr is the host:port the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// Close stops the broker and disconnects its clients.
func (b *Broker) Close() error { return b.srv.Close() }
