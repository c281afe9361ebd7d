package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"plantd/charger/chargerconfig"
	"plantd/consumer/consumerconfig"
	"plantd/eebus/eebusconfig"
	"plantd/forecast/forecastconfig"
	"plantd/gridcontrol/gridconfig"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/internal/confcheck"
	"plantd/modbusproxy/proxyconfig"
	"plantd/mqtt/mqttconfig"
	"plantd/plant/kind"
	"plantd/sunspecserver/serverconfig"
	"plantd/tariffs/tariffconfig"
)

// Config is plantd's configuration, as read from /etc/plantd/plantd.yaml. The
// YAML keys are the yaml tags. Defaults are described on each field and set in
// defaults.go. A Config that came from [Load] or [Parse] has its defaults
// filled in and has passed [Config.Validate].
type Config struct {
	Gateway  Gateway  `yaml:"gateway"`
	HTTP     HTTP     `yaml:"http"`
	Database Database `yaml:"database"`
	Log      Log      `yaml:"log"`
	Plants   []Plant  `yaml:"plants"`
	Devices  []Device `yaml:"devices"`
	// Inputs are the grid operator's contacts on I/O modules (input.go).
	Inputs []Input `yaml:"inputs"`
	Tokens []Token `yaml:"tokens"`
	// OAuthClients may get tokens from the OAuth2 endpoints
	// (httpapi/oauth2/oauthconfig).
	OAuthClients []oauthconfig.Client `yaml:"oauthClients"`
	// MQTT is the cloud uplink (mqtt/mqttconfig).
	MQTT mqttconfig.Config `yaml:"mqtt"`
	// GridControl is the execution of grid-control schedules
	// (gridcontrol/gridconfig).
	GridControl gridconfig.Config `yaml:"gridControl"`
	Migrated    Migrated          `yaml:"migrated"`
	// ModbusServer is the SunSpec Modbus server
	// (sunspecserver/serverconfig).
	ModbusServer serverconfig.Config `yaml:"modbusServer"`

	// Local are the integrations on the local network (local.go).
	Local Local `yaml:"local"`

	// OCPP is the central system EV chargers connect to (consumers with
	// driver ocpp); it runs only when one is configured
	// (charger/chargerconfig).
	OCPP chargerconfig.Config `yaml:"ocpp"`

	// EEBus is plantd as the controllable system of the grid operator's
	// control box, §14a LPC and LPP (eebus/eebusconfig); off by default.
	EEBus eebusconfig.Config `yaml:"eebus"`

	// Tariffs are the grid and feed-in tariffs, fixed or from day-ahead
	// market prices (tariffs/tariffconfig); off when absent.
	Tariffs *tariffconfig.Config `yaml:"tariffs"`
	// Forecast is the PV forecast (forecast/forecastconfig): on by
	// default for every plant with a location; a service optional.
	Forecast forecastconfig.Config `yaml:"forecast"`

	// Where the values came from: the file name and, by field path such as
	// "devices[2].port", the YAML line. Empty for a Config built in code.
	file  string
	lines map[string]int
	// Field paths whose value could not be decoded; Validate does not
	// report them (or anything below them) a second time.
	bad map[string]bool
}

// Gateway identifies this plantd instance.
type Gateway struct {
	// ID names the gateway towards the cloud: the MQTT client id and the
	// {gatewayId} level of the MQTT topics. Letters, digits, '.', '_' and
	// '-', at most 64. Default: "plantd-" and the first label of the host
	// name, lower-cased ("plantd-raspberrypi").
	ID string `yaml:"id"`
	// MemoryLimitMB is the soft limit of plantd's Go memory (heap, stacks,
	// runtime) in MiB, as GOMEMLIMIT: near it the garbage collector runs
	// more often instead of letting the heap grow. 0 (default) sizes it to
	// the plant: 64 MiB and 32 KiB per configured device (95 MiB for
	// 1,000 devices), a ceiling that keeps a small board safe from a
	// growing heap without squeezing normal operation (a limit near the
	// working set makes the collector run all the time: 32 MiB and 16 KiB
	// per device took 1,000 devices from 9 % to 28 % of a core). Below
	// this ceiling plantd run keeps the limit at the heap's steady size
	// with some room (cmd/plantd burstLimit, from the live heap every 5 s),
	// so that a burst such as the store's rollup is collected rather than
	// paged in. The GOMEMLIMIT environment variable, when set, wins over
	// both.
	MemoryLimitMB int `yaml:"memoryLimitMB"`
}

// HTTP configures the HTTP API server.
type HTTP struct {
	// Listen is the host:port to serve on. Default "127.0.0.1:8080". An
	// empty host listens on all interfaces.
	Listen string `yaml:"listen"`
	// TLSCert and TLSKey are PEM files; both or neither. With them the
	// server speaks HTTPS. The files are read when the server starts.
	TLSCert string `yaml:"tlsCert"`
	TLSKey  string `yaml:"tlsKey"`
	// RateLimit limits the requests of each credential.
	RateLimit RateLimit `yaml:"rateLimit"`
	// TrustedProxies are the IP addresses or CIDRs of reverse proxies in
	// front of plantd whose X-Forwarded-For names the client. Default none:
	// forwarding headers are ignored.
	TrustedProxies []string `yaml:"trustedProxies"`
	// CORSOrigins are the web origins ("https://portal.example.com", or
	// "*" for any) whose pages may call the API from a browser. Default
	// none: CORS off.
	CORSOrigins []string `yaml:"corsOrigins"`
	// OpenOps serves /healthz and /metrics to any address, not only to
	// clients on this machine. Default false.
	OpenOps bool `yaml:"openOps"`
	// TokenTTL is the lifetime of OAuth2 access tokens issued by POST
	// /oauth2/token, 1m..24h. Default 300s.
	TokenTTL time.Duration `yaml:"tokenTTL"`
}

// RateLimit is a token bucket per credential (token or OAuth client).
type RateLimit struct {
	// RequestsPerSecond refills the bucket; > 0. Default 20.
	RequestsPerSecond float64 `yaml:"requestsPerSecond"`
	// Burst is the bucket's size; >= 1. Default 40.
	Burst int `yaml:"burst"`
}

// Database configures the SQLite store.
type Database struct {
	// Path of the SQLite file. Default "/var/lib/plantd/plantd.db".
	Path string `yaml:"path"`
	// RawRetention is how long raw samples are kept; rollups are kept
	// forever. At least 1h. Default 168h (7 days).
	RawRetention time.Duration `yaml:"rawRetention"`
	// CommitInterval is how often the writer commits, 1s..5m. A device's
	// raw samples are stored as one compressed chunk per minute, written
	// at the first commit after the minute is complete (or after the
	// device was quiet for 15 s): a crash of plantd (kill -9) loses at
	// most a device's samples of the last minute plus CommitInterval (70 s
	// at the default), a power cut that plus what the kernel had not yet
	// written back. Log entries commit within a second; schedules,
	// grid-control state, rollups and the MQTT outbox at once. Default
	// 10s.
	CommitInterval time.Duration `yaml:"commitInterval"`
}

// Log configures log/slog output on stderr.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is text or json. Default text.
	Format string `yaml:"format"`
}

// SlogLevel returns Level as a slog.Level (info for an unknown level).
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Plant is one PV plant served by this gateway.
type Plant struct {
	// ID is the plant id of the API (a string, often digits such as
	// "7190000"); required, unique among plants. Letters, digits, '.', '_',
	// '~' and '-', not starting with a punctuation character, at most 64.
	ID string `yaml:"id"`
	// Name is shown by the API; required.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Timezone is the plant's IANA time zone ("Europe/Berlin"); required.
	// It decides where the plant's days, months and years begin.
	Timezone     string       `yaml:"timezone"`
	Location     Location     `yaml:"location"`
	Installation Installation `yaml:"installation"`
	// Stakeholders are the people and companies with a role at the plant
	// (GET .../stakeholders).
	Stakeholders []Stakeholder `yaml:"stakeholders"`
	// Battery is the home energy manager's battery priority
	// (consumer/consumerconfig.Battery).
	Battery consumerconfig.Battery `yaml:"battery"`
}

// Stakeholder is a person or company with a role at a plant.
type Stakeholder struct {
	// Role: owner, installer, operator or connectedServiceProvider.
	Role string `yaml:"role"`
	// Name is required.
	Name  string `yaml:"name"`
	Email string `yaml:"email"`
	Phone string `yaml:"phone"`
}

// Zone loads the plant's time zone. It cannot fail for a validated Config.
func (p Plant) Zone() (*time.Location, error) {
	return time.LoadLocation(p.Timezone)
}

// Location is the plant's address and position. All fields are optional;
// the API omits what is not given.
type Location struct {
	// Latitude in degrees, -90..90.
	Latitude *float64 `yaml:"latitude"`
	// Longitude in degrees, -180..180.
	Longitude    *float64 `yaml:"longitude"`
	Country      string   `yaml:"country"`
	FederalState string   `yaml:"federalState"`
	City         string   `yaml:"city"`
	ZipCode      string   `yaml:"zipCode"`
	Street       string   `yaml:"street"`
	StreetNo     string   `yaml:"streetNo"`
	// CurrencyCode3 is an ISO 4217 code: three upper-case letters ("EUR").
	CurrencyCode3 string `yaml:"currencyCode3"`
}

// Installation describes the PV installation of a plant.
type Installation struct {
	// PeakPowerW is the plant's peak power in W; >= 0, 0 = not given.
	PeakPowerW float64 `yaml:"peakPowerW"`
	// DCPowerInputMaxW is the most DC power the plant's inverters take in,
	// in W (the API's dcPowerInputMax; SunSpec has no point for it); >= 0,
	// 0 = not given.
	DCPowerInputMaxW float64 `yaml:"dcPowerInputMaxW"`
	// CO2SavingsFactor in g/kWh; >= 0. Default 400.
	CO2SavingsFactor float64 `yaml:"co2SavingsFactor"`
	// StartUp is the day the plant started feeding in.
	StartUp Date `yaml:"startUp"`
	// Azimuth in degrees, 0..360 (0 = north, 180 = south); nil = not given.
	Azimuth *float64 `yaml:"azimuth"`
	// CollectorSlope in degrees, 0..90 (0 = flat); nil = not given.
	CollectorSlope *float64 `yaml:"collectorSlope"`
	// PVModuleAreas lists the module areas (newer-platform plants).
	PVModuleAreas []PVModuleArea `yaml:"pvModuleAreas"`
}

// PVModuleArea is one area of PV modules with one orientation.
type PVModuleArea struct {
	// Name is required and unique within the plant.
	Name string `yaml:"name"`
	// Azimuth (0..360) and CollectorSlope (0..90) in degrees are required.
	Azimuth        *float64 `yaml:"azimuth"`
	CollectorSlope *float64 `yaml:"collectorSlope"`
	// PeakPowerW in W, >= 0; 0 = not given.
	PeakPowerW float64 `yaml:"peakPowerW"`
	// ModuleCount >= 0; 0 = not given.
	ModuleCount int `yaml:"moduleCount"`
}

// Device is one Modbus TCP (SunSpec) device to poll.
type Device struct {
	// ID is the device id of the API; required, unique among devices. Same
	// characters as a plant id.
	ID string `yaml:"id"`
	// Plant is the id of the plant the device belongs to. It may be
	// omitted when exactly one plant is configured; it is then set to it.
	Plant string `yaml:"plant"`
	// Name is shown by the API. Default: the id.
	Name string `yaml:"name"`
	// Host is the device's (or its Modbus gateway's) host name or IP
	// address, without a port; required unless Serial is given.
	Host string `yaml:"host"`
	// Framing is how requests travel to Host: "tcp" (Modbus TCP, the
	// default) or "rtu" (RTU frames with a CRC through a serial/Ethernet
	// converter in transparent mode: RTU over TCP).
	Framing string `yaml:"framing"`
	// Serial, instead of Host, puts the device on a serial line (Modbus
	// RTU over RS485); devices on one port share it (one master per bus)
	// and must give the same settings.
	Serial *Serial `yaml:"serial,omitempty"`
	// Port is the Modbus TCP port, 1..65535. Default 502.
	Port int `yaml:"port"`
	// Unit is the Modbus unit id: 0..247 or 255. Default 1.
	Unit int `yaml:"unit"`
	// Kind, when given (inverter, meter, battery or sensor: a kind that is
	// polled), overrides the kind discovered from the device's SunSpec
	// models.
	Kind kind.Kind `yaml:"kind"`
	// Template, when given, names the device template of a device that
	// speaks no SunSpec (plantd/devices/template: sdm630, sdm72, sdm120,
	// sun2000, sungrow_sh, e3dc): it is polled by its template's register
	// map instead of SunSpec discovery, and its kind is the template's.
	Template string `yaml:"template"`
	// Base, when given (0, 40000 or 50000), is the SunSpec base address;
	// discovery then skips probing. nil = probe 40000, 0, 50000.
	Base *int `yaml:"base"`
	// PollInterval between polls, 250ms..1h. Default 5s.
	PollInterval time.Duration `yaml:"pollInterval"`
	// Timeout of each Modbus request, 100ms..30s. Default 2s.
	Timeout time.Duration `yaml:"timeout"`
	// ConnectDelay is waited after connecting, before the first request,
	// 0..10s. Default 0. Enabled devices at one host:port share one
	// connection, so they must give the same value.
	ConnectDelay time.Duration `yaml:"connectDelay"`
	// Enabled false keeps the device in the API (and its history) but does
	// not poll it: it is listed as deactivated (isActive false,
	// deactivatedAt the time plantd first saw it disabled, kept in the
	// database; see httpapi/README.md). Default true.
	Enabled bool `yaml:"enabled"`
	// ProductID is the vendor's numeric product id the cloud API reports
	// as the device's productId; 0 = not known (omitted).
	ProductID int `yaml:"productId"`
	// Consumer is the home energy manager's settings of a device of kind
	// consumer (required for it, refused for other kinds);
	// consumer/consumerconfig.
	Consumer *consumerconfig.Config `yaml:"consumer,omitempty"`
	// Proxy is the device's Modbus TCP proxy for third parties
	// (proxyconfig.Settings); nil: none.
	Proxy *proxyconfig.Settings `yaml:"proxy,omitempty"`
}

// Serial is a serial line's settings (devices[].serial).
type Serial struct {
	// Port is the line's device path (/dev/ttyUSB0, /dev/ttyAMA0,
	// /dev/serial/by-id/...); required.
	Port string `yaml:"port"`
	// Baud is the line's rate, one of serialline.StandardBauds (1200 ..
	// 230400). Default 9600.
	Baud int `yaml:"baud"`
	// Parity is N, E or O. Default N (most RS485 meters ship with 8N1;
	// the Modbus serial line spec's default is E).
	Parity string `yaml:"parity"`
	// StopBits is 1 or 2. Default 1.
	StopBits int `yaml:"stopBits"`
}

func (s *Serial) setDefaults() {
	s.Baud, s.Parity, s.StopBits = 9600, "N", 1
}

// The framings of a TCP device.
const (
	FramingTCP = "tcp"
	FramingRTU = "rtu"
)

// Address returns the device's Modbus endpoint: host:port, or the serial
// line's device path.
func (d Device) Address() string {
	if d.Serial != nil {
		return d.Serial.Port
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Roles for [Token.Role] and oauthconfig.Client.Role, lowest first
// (internal/confcheck's, which every section that names a role checks
// with).
const (
	RoleStandard     = confcheck.RoleStandard
	RoleInstaller    = confcheck.RoleInstaller
	RoleGridOperator = confcheck.RoleGridOperator
)

// RoleRank orders the roles: standard 1, installer 2, gridoperator 3, and
// 0 for a string that is no role (confcheck.RoleRank).
func RoleRank(role string) int { return confcheck.RoleRank(role) }

// Token is a bearer token of the HTTP API. The config holds only the token's
// SHA-256, never the token.
type Token struct {
	// Name identifies the token in logs; required, unique.
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the token (64 hex digits, see
	// [TokenHash]); unique. Either letter case is accepted, so compare the
	// decoded bytes (or lower-case both sides).
	SHA256 string `yaml:"sha256"`
	// Role is standard, installer or gridoperator.
	Role string `yaml:"role"`
}

// TokenHash returns the hex SHA-256 of a bearer token or client secret, the
// form [Token.SHA256] and oauthconfig.Client.SecretSHA256 hold.
func TokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Migrated maps ids that changed (e.g. when a plant moved to the newer
// platform) from old to new; requests on an old id are redirected. An old id
// must not also be a live id; a new id must be a configured one.
type Migrated struct {
	Plants  map[string]string `yaml:"plants"`
	Devices map[string]string `yaml:"devices"`
}

// Date is a calendar day, written YYYY-MM-DD.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// IsZero reports whether d is the zero Date (not given).
func (d Date) IsZero() bool { return d == Date{} }

// String returns d as YYYY-MM-DD, or "" for the zero Date.
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}

// In returns the start of the day d in loc.
func (d Date) In(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// MarshalYAML writes d as YYYY-MM-DD (null for the zero Date), the form
// Parse reads.
func (d Date) MarshalYAML() (any, error) {
	if d.IsZero() {
		return nil, nil
	}
	return d.String(), nil
}
