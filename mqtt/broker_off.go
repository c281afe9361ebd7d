//go:build nobroker

package mqtt

import "log/slog"

// Broker is not in a build with the tag nobroker; see broker.go.
type Broker struct{}

// StartBroker fails with ErrNoBroker: the build has no embedded broker.
func StartBroker(addr string, tryNext bool, logger *slog.Logger) (*Broker, error) {
	return nil, ErrNoBroker
}

// Addr is empty.
func (b *Broker) Addr() string { return "" }

// Close does nothing.
func (b *Broker) Close() error { return nil }
