package modbus

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSerialConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  SerialConfig
		want string // "" valid, else the start of the error
	}{
		{SerialConfig{}, ""},
		{SerialConfig{Baud: 19200, DataBits: 8, Parity: "E", StopBits: 1}, ""},
		{SerialConfig{Baud: 115200, Parity: "o", StopBits: 2}, ""},
		{SerialConfig{Baud: 9601}, "baud 9601 is not a standard rate"},
		{SerialConfig{DataBits: 9}, "dataBits 9"},
		{SerialConfig{Parity: "M"}, `parity "M"`},
		{SerialConfig{StopBits: 3}, "stopBits 3"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestSerialFrameGap(t *testing.T) {
	tests := []struct {
		baud int
		want time.Duration
	}{
		{1200, 32083333 * time.Nanosecond},
		{9600, 4010416 * time.Nanosecond},
		{19200, 2005208 * time.Nanosecond},
		{38400, 1750 * time.Microsecond},
		{115200, 1750 * time.Microsecond},
		{0, 4010416 * time.Nanosecond}, // the default 9600
	}
	for _, tt := range tests {
		if got := (SerialConfig{Baud: tt.baud}).FrameGap(); got != tt.want {
			t.Errorf("baud %d: FrameGap() = %v, want %v", tt.baud, got, tt.want)
		}
	}
	// An endpoint keeps the larger of its FrameGap and the line's.
	for _, tt := range []struct {
		cfg  EndpointConfig
		want time.Duration
	}{
		{EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU}, 4010416 * time.Nanosecond},
		{EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU, FrameGap: 10 * time.Millisecond}, 10 * time.Millisecond},
		{EndpointConfig{Address: "h", Transport: TransportRTUOverTCP}, 0},
		{EndpointConfig{Address: "h", Transport: TransportRTUOverTCP, FrameGap: 5 * time.Millisecond}, 5 * time.Millisecond},
		{EndpointConfig{Address: "h", FrameGap: 5 * time.Millisecond}, 0},
	} {
		if got := tt.cfg.withDefaults().frameGap(); got != tt.want {
			t.Errorf("%+v: gap %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

func TestEndpointConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  EndpointConfig
		want string
	}{
		{EndpointConfig{Address: "10.0.0.2"}, ""},
		{EndpointConfig{Address: "10.0.0.2:8899", Transport: TransportRTUOverTCP}, ""},
		{EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU, Serial: SerialConfig{Baud: 19200}}, ""},
		{EndpointConfig{Address: ""}, `address ":502": want host:port`},
		{EndpointConfig{Address: " ", Transport: TransportRTU}, "address: want the serial device's path"},
		{EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU, Serial: SerialConfig{Baud: 9601}}, "serial: baud 9601"},
		{EndpointConfig{Address: "h", Transport: "rtu-over-udp"}, `transport "rtu-over-udp": want tcp, rtu-over-tcp or rtu`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

// TestPoolKeysByTransport checks that the pool keeps one endpoint per
// transport and address, and that a serial path keeps its spelling.
func TestPoolKeysByTransport(t *testing.T) {
	pool := newTestPool(t)
	tcp := pool.Endpoint(EndpointConfig{Address: "10.0.0.2"})
	rot := pool.Endpoint(EndpointConfig{Address: "10.0.0.2:502", Transport: TransportRTUOverTCP})
	bus := pool.Endpoint(EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU, Serial: SerialConfig{Baud: 19200}})
	if tcp == rot || pool.Endpoint(EndpointConfig{Address: "10.0.0.2:502", Transport: TransportTCP}) != tcp {
		t.Error("TCP and RTU over TCP at one address must be two endpoints, and TCP one")
	}
	if pool.Endpoint(EndpointConfig{Address: "/dev/ttyUSB0", Transport: TransportRTU, Serial: SerialConfig{Baud: 19200}}) != bus {
		t.Error("two endpoints for one serial line")
	}
	if bus.Address() != "/dev/ttyUSB0" || bus.Transport() != TransportRTU || bus.Config().Serial != (SerialConfig{Baud: 19200, DataBits: 8, Parity: "N", StopBits: 1}) {
		t.Errorf("serial endpoint config %+v", bus.Config())
	}
	st := pool.Stats()
	if len(st) != 3 || st[0].Address != "/dev/ttyUSB0" || st[1].Transport != TransportRTUOverTCP || st[2].Transport != TransportTCP {
		t.Errorf("Stats() = %+v, want 3 endpoints sorted by address, then transport", st)
	}
}

// TestInvalidEndpoint checks that requests on an endpoint with an invalid
// config fail with ErrInvalid and do no I/O.
func TestInvalidEndpoint(t *testing.T) {
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: "/dev/null", Transport: TransportRTU, Serial: SerialConfig{Parity: "X"}})
	_, err := ep.Unit(1, 0).ReadHoldingRegisters(t.Context(), 0, 1, nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `parity "X"`) || IsRetryable(err) {
		t.Errorf("err = %v, want ErrInvalid naming the parity", err)
	}
	if st := ep.Stats(); st.Requests != 0 || st.Connects != 0 || st.ConnectFailures != 0 {
		t.Errorf("stats %+v: an invalid endpoint did I/O", st)
	}
}
