package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/consumer/drivers"
	"plantd/devices/template"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/internal/confcheck"
	"plantd/modbus/serialline"
	"plantd/mqtt/mqttconfig"
	"plantd/plant/kind"
)

// Validate checks the whole Config and returns every problem at once, as an
// [*Errors] sorted by line, or nil. For a Config from [Load] or [Parse]
// (which call it) each problem carries the file and the line of the
// offending key or list entry; for a Config built in code they are empty.
//
// A device's plant may be left empty when exactly one plant is configured.
// Validate does not touch the file system: the TLS and CA files are read by
// the components that use them, when they start.
func (c *Config) Validate() error {
	return errorsOf(c.validate())
}

func (c *Config) validate() []Problem {
	v := &validator{c: c}
	v.ck = confcheck.New(v, "")
	v.gateway()
	v.http()
	v.database()
	v.log()
	v.plants()
	v.devices()
	v.consumers()
	c.OCPP.Validate(v.ck.In("ocpp"))
	v.inputs()
	v.tokens()
	oauthconfig.Validate(v.ck.In("oauthClients"), c.OAuthClients)
	c.MQTT.Validate(v.ck.In("mqtt"))
	v.local()
	c.GridControl.Validate(v.ck.In("gridControl"))
	v.migrated()
	v.modbusServer()
	v.eebus()
	v.tariffs()
	v.forecast()
	v.proxies()
	return v.problems
}

type validator struct {
	c        *Config
	problems []Problem
	// ck reports to the validator from the file's root: the sections'
	// Validate get it, moved to their key (confcheck.Checker.In).
	ck confcheck.Checker
}

// Problem records a problem a section's Validate found (confcheck.Sink).
func (v *validator) Problem(field, msg string) { v.add(field, "%s", msg) }

// Where describes the entry at path (confcheck.Sink).
func (v *validator) Where(path string) string { return v.where(path) }

// add records a problem with field, at the line of field or of the nearest
// enclosing key or entry the file has, unless decoding already reported a
// problem there.
func (v *validator) add(field, format string, args ...any) {
	if v.c.isBad(field) {
		return
	}
	v.problems = append(v.problems, Problem{File: v.c.file, Line: v.c.line(field), Field: field, Message: fmt.Sprintf(format, args...)})
}

// where describes the entry at path for a message about another one:
// "devices[1] at line 20", or "devices[1]" without a line.
func (v *validator) where(path string) string {
	if l := v.c.line(path); l > 0 {
		return fmt.Sprintf("%s at line %d", path, l)
	}
	return path
}

// line returns the line of path, or of its nearest parent with one.
func (c *Config) line(path string) int {
	for p := path; ; p = parent(p) {
		if l, ok := c.lines[p]; ok {
			return l
		}
		if p == "" {
			return 0
		}
	}
}

// isBad reports whether decoding failed at path or at a parent of it.
func (c *Config) isBad(path string) bool {
	for p := path; p != ""; p = parent(p) {
		if c.bad[p] {
			return true
		}
	}
	return false
}

// parent cuts the last key or index off a field path.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

const maxIDLen = 64

var (
	idPattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	// The gateway id is the uplink's MQTT client id.
	gatewayIDPattern = mqttconfig.ClientIDPattern
)

// id checks a plant or device id, which appears in URLs and MQTT topics.
func (v *validator) id(field, id string) bool {
	switch {
	case id == "":
		v.add(field, "required")
	case len(id) > maxIDLen || !idPattern.MatchString(id):
		v.add(field, "%q is not a valid id (letters, digits and . _ ~ -, starting with a letter or digit, at most %d)", id, maxIDLen)
	default:
		return true
	}
	return false
}

func (v *validator) gateway() {
	id := v.c.Gateway.ID
	switch {
	case id == "":
		v.add("gateway.id", "required")
	case len(id) > maxIDLen || !gatewayIDPattern.MatchString(id):
		v.add("gateway.id", "%q is not a valid gateway id (letters, digits and . _ -, starting with a letter or digit, at most %d)", id, maxIDLen)
	}
	if m := v.c.Gateway.MemoryLimitMB; m < 0 || m > maxMemoryLimitMB {
		v.add("gateway.memoryLimitMB", "%d is outside 0..%d (0: sized to the plant)", m, maxMemoryLimitMB)
	} else if m > 0 && m < minMemoryLimitMB {
		v.add("gateway.memoryLimitMB", "%d MiB is too small to run plantd (at least %d)", m, minMemoryLimitMB)
	}
}

// Bounds of gateway.memoryLimitMB.
const (
	minMemoryLimitMB = 16
	maxMemoryLimitMB = 1 << 20
)

func (v *validator) http() {
	h := v.c.HTTP
	v.ck.Listen("http.listen", h.Listen, "127.0.0.1:8080")
	switch {
	case h.TLSCert != "" && h.TLSKey == "":
		v.add("http.tlsCert", "tlsKey is missing (give both or neither)")
	case h.TLSKey != "" && h.TLSCert == "":
		v.add("http.tlsKey", "tlsCert is missing (give both or neither)")
	}
	if r := h.RateLimit.RequestsPerSecond; !(r > 0) {
		v.add("http.rateLimit.requestsPerSecond", "%s is out of range (more than 0)", confcheck.Num(r))
	}
	if b := h.RateLimit.Burst; b < 1 {
		v.add("http.rateLimit.burst", "%d is out of range (at least 1)", b)
	}
	v.ck.Duration("http.tokenTTL", h.TokenTTL, time.Minute, 24*time.Hour)
	for i, o := range h.CORSOrigins {
		if o == "*" {
			continue
		}
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			v.add(fmt.Sprintf("http.corsOrigins[%d]", i), "%q is not an origin (scheme://host[:port]) or *", o)
		}
	}
	for i, p := range h.TrustedProxies {
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			v.add(fmt.Sprintf("http.trustedProxies[%d]", i), "%q is not an IP address or CIDR", p)
		}
	}
}

func (v *validator) database() {
	if v.c.Database.Path == "" {
		v.add("database.path", "required")
	}
	v.ck.Duration("database.rawRetention", v.c.Database.RawRetention, time.Hour, 0)
	v.ck.Duration("database.commitInterval", v.c.Database.CommitInterval, time.Second, 5*time.Minute)
}

func (v *validator) log() {
	switch v.c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		v.add("log.level", "%q is not a log level (debug, info, warn or error)", v.c.Log.Level)
	}
	switch v.c.Log.Format {
	case "text", "json":
	default:
		v.add("log.format", "%q is not a log format (text or json)", v.c.Log.Format)
	}
}

func (v *validator) plants() {
	if len(v.c.Plants) == 0 {
		v.add("plants", "at least one plant is required")
		return
	}
	ids := map[string]string{}
	for i, p := range v.c.Plants {
		path := fmt.Sprintf("plants[%d]", i)
		if v.id(path+".id", p.ID) {
			v.ck.Unique(ids, p.ID, path+".id", path, "plant id")
		}
		if p.Name == "" {
			v.add(path+".name", "required")
		}
		switch {
		case p.Timezone == "":
			v.add(path+".timezone", "required (an IANA time zone such as Europe/Berlin)")
		case p.Timezone == "Local":
			v.add(path+".timezone", "%q is not an IANA time zone", p.Timezone)
		default:
			if _, err := time.LoadLocation(p.Timezone); err != nil {
				v.add(path+".timezone", "unknown time zone %q", p.Timezone)
			}
		}
		v.location(path+".location", p.Location)
		v.installation(path+".installation", p.Installation)
		p.Battery.Validate(v.ck.In(path + ".battery"))
		for j, sh := range p.Stakeholders {
			sp := fmt.Sprintf("%s.stakeholders[%d]", path, j)
			switch sh.Role {
			case "owner", "installer", "operator", "connectedServiceProvider":
			default:
				v.add(sp+".role", "%q: want owner, installer, operator or connectedServiceProvider", sh.Role)
			}
			if sh.Name == "" {
				v.add(sp+".name", "required")
			}
		}
	}
}

func (v *validator) location(path string, l Location) {
	v.ck.OptRange(path+".latitude", l.Latitude, -90, 90)
	v.ck.OptRange(path+".longitude", l.Longitude, -180, 180)
	if l.CurrencyCode3 != "" && !currencyPattern.MatchString(l.CurrencyCode3) {
		v.add(path+".currencyCode3", "%q is not an ISO 4217 currency code (three upper-case letters)", l.CurrencyCode3)
	}
}

func (v *validator) installation(path string, in Installation) {
	v.nonNegative(path+".peakPowerW", in.PeakPowerW)
	v.nonNegative(path+".dcPowerInputMaxW", in.DCPowerInputMaxW)
	v.nonNegative(path+".co2SavingsFactor", in.CO2SavingsFactor)
	if d := in.StartUp; !d.IsZero() {
		if t := d.In(time.UTC); t.Year() != d.Year || t.Month() != d.Month || t.Day() != d.Day {
			v.add(path+".startUp", "%04d-%02d-%02d is not a valid date", d.Year, d.Month, d.Day)
		}
	}
	v.ck.OptRange(path+".azimuth", in.Azimuth, 0, 360)
	v.ck.OptRange(path+".collectorSlope", in.CollectorSlope, 0, 90)
	names := map[string]string{}
	for i, a := range in.PVModuleAreas {
		ap := fmt.Sprintf("%s.pvModuleAreas[%d]", path, i)
		if a.Name == "" {
			v.add(ap+".name", "required")
		}
		v.ck.Unique(names, a.Name, ap+".name", ap, "module area name")
		if a.Azimuth == nil {
			v.add(ap+".azimuth", "required (0..360, 0 = north, 180 = south)")
		}
		v.ck.OptRange(ap+".azimuth", a.Azimuth, 0, 360)
		if a.CollectorSlope == nil {
			v.add(ap+".collectorSlope", "required (0..90, 0 = flat)")
		}
		v.ck.OptRange(ap+".collectorSlope", a.CollectorSlope, 0, 90)
		v.nonNegative(ap+".peakPowerW", a.PeakPowerW)
		if a.ModuleCount < 0 {
			v.add(ap+".moduleCount", "%d is out of range (at least 0)", a.ModuleCount)
		}
	}
}

// UnitRule says which Modbus unit ids ValidUnit accepts.
const UnitRule = "0..247 or 255"

// ValidUnit is the one rule for Modbus unit ids, of the config and of
// plantd scan: 0 (broadcast, which some Modbus TCP devices answer),
// 1..247 (Modbus serial addresses) and 255 (Modbus TCP's "this device",
// which some devices answer only to); 248..254 are reserved by Modbus.
func ValidUnit(u int) bool { return u >= 0 && u <= 247 || u == 255 }

func (v *validator) devices() {
	plants, _ := v.c.ids()
	ids := map[string]string{}
	addrs := map[string]string{}    // host:port unit -> path
	endpoints := map[string]int{}   // host:port -> index
	serialLines := map[string]int{} // serial port -> index
	for i, d := range v.c.Devices {
		path := fmt.Sprintf("devices[%d]", i)
		if v.id(path+".id", d.ID) {
			v.ck.Unique(ids, d.ID, path+".id", path, "device id")
		}
		switch {
		case d.Plant == "" && len(v.c.Plants) > 1:
			v.add(path+".plant", "required when more than one plant is configured")
		case d.Plant == "" || plants[d.Plant] || len(v.c.Plants) == 0:
		case v.c.Migrated.Plants[d.Plant] != "":
			v.add(path+".plant", "plant %q was migrated to %q", d.Plant, v.c.Migrated.Plants[d.Plant])
		default:
			v.add(path+".plant", "unknown plant %q", d.Plant)
		}
		var hostOK bool
		inbound := d.Consumer != nil && drivers.Inbound(d.Consumer.Driver)
		switch {
		case d.Serial != nil:
			hostOK = v.serial(path, d)
		case inbound && d.Host == "":
			// The device connects to plantd: no address to reach it at.
		default:
			hostOK = v.host(path+".host", d.Host, "a host name or IP address, or give serial")
		}
		portOK := d.Serial != nil || inbound || d.Port >= 1 && d.Port <= 65535
		if !portOK {
			v.add(path+".port", "%d is not a TCP port", d.Port)
		}
		v.framing(path, d)
		unitOK := ValidUnit(d.Unit)
		if !unitOK {
			v.add(path+".unit", "%d is not a Modbus unit id (%s)", d.Unit, UnitRule)
		}
		if d.ProductID < 0 {
			v.add(path+".productId", "%d is not a product id (a positive number, or omit it)", d.ProductID)
		}
		if d.Kind != "" && !d.Kind.Polled() {
			v.add(path+".kind", "%q is not a device kind (inverter, meter, battery, sensor or consumer)", d.Kind)
		}
		if d.Template != "" {
			t, ok := template.Lookup(d.Template)
			switch {
			case !ok:
				v.add(path+".template", "%q is not a device template (%s)", d.Template, strings.Join(template.Names(), ", "))
			case d.Kind != "" && d.Kind != t.Kind:
				v.add(path+".kind", "%q: template %s is of kind %s", d.Kind, t.Name, t.Kind)
			case d.Base != nil:
				v.add(path+".base", "a template device has no SunSpec base address")
			}
		}
		if d.Base != nil && *d.Base != 0 && *d.Base != 40000 && *d.Base != 50000 {
			v.add(path+".base", "%d is not a SunSpec base address (0, 40000 or 50000)", *d.Base)
		}
		v.ck.Duration(path+".pollInterval", d.PollInterval, 250*time.Millisecond, time.Hour)
		v.ck.Duration(path+".timeout", d.Timeout, 100*time.Millisecond, 30*time.Second)
		v.ck.Duration(path+".connectDelay", d.ConnectDelay, 0, 10*time.Second)
		if !d.Enabled || !hostOK || !portOK || inbound {
			continue
		}
		endpoint := net.JoinHostPort(canonicalHost(d.Host), strconv.Itoa(d.Port))
		if d.Serial != nil {
			endpoint = d.Serial.Port
			if prev, ok := serialLines[endpoint]; ok && *v.c.Devices[prev].Serial != *d.Serial {
				v.add(path+".serial", "%s differs from the serial settings of %s, on the same line %s",
					describeSerial(d.Serial), v.where(fmt.Sprintf("devices[%d]", prev)), endpoint)
			} else if !ok {
				serialLines[endpoint] = i
			}
		}
		if unitOK && d.Kind != kind.Consumer {
			// Consumers on one relay module share its unit: their
			// coils are checked by consumers().
			addr := fmt.Sprintf("%s unit %d", endpoint, d.Unit)
			if prev, ok := addrs[addr]; ok {
				v.add(path, "%s is already polled as %s", addr, v.where(prev))
			} else {
				addrs[addr] = path
			}
		}
		// Devices behind one address share one connection, and so its
		// connect delay (modbus.EndpointConfig).
		if prev, ok := endpoints[endpoint]; !ok {
			endpoints[endpoint] = i
		} else if p := v.c.Devices[prev]; framingOf(p) != framingOf(d) {
			v.add(path+".framing", "%s differs from the framing %s of %s, which shares the connection to %s",
				framingOf(d), framingOf(p), v.where(fmt.Sprintf("devices[%d]", prev)), endpoint)
		} else if p.ConnectDelay != d.ConnectDelay {
			v.add(path+".connectDelay", "%s differs from the %s of %s, which shares the connection to %s",
				confcheck.FmtDuration(d.ConnectDelay), confcheck.FmtDuration(p.ConnectDelay), v.where(fmt.Sprintf("devices[%d]", prev)), endpoint)
		}
	}
}

// serial checks a serial device's line settings; ok when its port can
// key the line.
func (v *validator) serial(path string, d Device) bool {
	sp := path + ".serial"
	if d.Host != "" {
		v.add(path+".host", "give host (a TCP device) or serial (an RS485 device), not both")
	}
	ok := true
	s := d.Serial
	switch {
	case s.Port == "":
		v.add(sp+".port", "required (the line's device, e.g. /dev/ttyUSB0)")
		ok = false
	case !strings.HasPrefix(s.Port, "/") && !strings.HasPrefix(strings.ToUpper(s.Port), "COM"):
		v.add(sp+".port", "%q is not a serial device path (/dev/ttyUSB0, /dev/serial/by-id/...)", s.Port)
		ok = false
	}
	if !slices.Contains(serialline.StandardBauds, s.Baud) {
		v.add(sp+".baud", "%d is not a standard rate (%s)", s.Baud, joinInts(serialline.StandardBauds))
	}
	if s.Parity != "N" && s.Parity != "E" && s.Parity != "O" {
		v.add(sp+".parity", "%q is not a parity (N, E or O)", s.Parity)
	}
	if s.StopBits != 1 && s.StopBits != 2 {
		v.add(sp+".stopBits", "%d stop bits (want 1 or 2)", s.StopBits)
	}
	if d.Unit == 0 || d.Unit > 247 {
		v.add(path+".unit", "%d is not the address of a device on a serial line (1..247; 0 is the broadcast)", d.Unit)
	}
	if d.ConnectDelay != 0 {
		v.add(path+".connectDelay", "a serial line has no connect (connectDelay is for TCP)")
	}
	return ok
}

// framing checks a device's framing; false when it is not one.
func (v *validator) framing(path string, d Device) bool {
	switch d.Framing {
	case "", FramingTCP:
	case FramingRTU:
		if d.Serial != nil {
			v.add(path+".framing", "a serial device speaks RTU already (framing is for a TCP address)")
		}
	default:
		v.add(path+".framing", "%q is not a framing (tcp, or rtu for RTU over TCP)", d.Framing)
		return false
	}
	return true
}

// sameEndpoint reports whether two TCP devices share one connection.
func sameEndpoint(a, b Device) bool {
	return a.Port == b.Port && canonicalHost(a.Host) == canonicalHost(b.Host)
}

// framingOf is a device's framing, "tcp" when not given.
func framingOf(d Device) string {
	if d.Framing == "" {
		return FramingTCP
	}
	return d.Framing
}

func describeSerial(s *Serial) string {
	return fmt.Sprintf("%d %d%s%d", s.Baud, 8, s.Parity, s.StopBits)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

func (v *validator) tokens() {
	names, hashes := map[string]string{}, map[string]string{}
	for i, t := range v.c.Tokens {
		path := fmt.Sprintf("tokens[%d]", i)
		if t.Name == "" {
			v.add(path+".name", "required")
		}
		v.ck.Unique(names, t.Name, path+".name", path, "token name")
		if v.ck.SHA256(path+".sha256", t.SHA256) {
			if prev, ok := hashes[strings.ToLower(t.SHA256)]; ok {
				v.add(path+".sha256", "same token as %s", v.where(prev))
			} else {
				hashes[strings.ToLower(t.SHA256)] = path
			}
		}
		v.ck.Role(path+".role", t.Role)
	}
}

// ids returns the sets of the plants' and the devices' ids.
func (c *Config) ids() (plants, devices map[string]bool) {
	plants = make(map[string]bool, len(c.Plants))
	for _, p := range c.Plants {
		plants[p.ID] = true
	}
	devices = make(map[string]bool, len(c.Devices))
	for _, d := range c.Devices {
		devices[d.ID] = true
	}
	return plants, devices
}

func (v *validator) migrated() {
	plants, devices := v.c.ids()
	v.migrations("migrated.plants", "plant", v.c.Migrated.Plants, plants)
	v.migrations("migrated.devices", "device", v.c.Migrated.Devices, devices)
}

func (v *validator) migrations(path, what string, m map[string]string, live map[string]bool) {
	olds := make([]string, 0, len(m))
	for old := range m {
		olds = append(olds, old)
	}
	slices.Sort(olds)
	for _, old := range olds {
		field, to := path+"."+old, m[old]
		switch {
		case len(old) > maxIDLen || !idPattern.MatchString(old):
			v.add(field, "%q is not a valid id (letters, digits and . _ ~ -, starting with a letter or digit, at most %d)", old, maxIDLen)
		case live[old]:
			v.add(field, "old id %q is still a configured %s", old, what)
		case to == "":
			v.add(field, "required (the new %s id)", what)
		case !live[to]:
			v.add(field, "new id %q is not a configured %s", to, what)
		}
	}
}

func (v *validator) nonNegative(field string, f float64) {
	if !(f >= 0) {
		v.add(field, "%s is out of range (at least 0)", confcheck.Num(f))
	}
}

// host checks the host of a Modbus TCP device or module (field) and
// reports whether it is valid; required says what an empty one should be.
func (v *validator) host(field, host, required string) bool {
	switch {
	case host == "":
		v.add(field, "required (%s)", required)
	case hasPort(host):
		v.add(field, "%q includes a port (give it as port)", host)
	case !confcheck.ValidHost(host):
		v.add(field, "%q is not a host name or IP address", host)
	default:
		return true
	}
	return false
}

// hasPort reports whether h looks like host:port rather than a host.
func hasPort(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return false // an IPv6 address has colons of its own
	}
	_, port, err := net.SplitHostPort(h)
	return err == nil && port != ""
}

// canonicalHost returns the form of a valid host that makes equal hosts
// equal: IP addresses as netip prints them, names lower-cased.
func canonicalHost(h string) string {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String()
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// CheckSerialPorts reports the serial lines of enabled devices whose port
// does not exist or is no character device, with the file and line, as
// an [*Errors] (nil: all there). Unlike Validate it looks at the file
// system: plantd run calls it at start (an installer's check-config on a
// laptop has no such ports). A line that disappears later (a USB adapter
// unplugged) is the transport's to recover.
func (c *Config) CheckSerialPorts() error {
	var probs []Problem
	seen := map[string]bool{}
	for i, d := range c.Devices {
		if d.Serial == nil || !d.Enabled || seen[d.Serial.Port] {
			continue
		}
		seen[d.Serial.Port] = true
		field := fmt.Sprintf("devices[%d].serial.port", i)
		msg := ""
		switch fi, err := os.Stat(d.Serial.Port); {
		case errors.Is(err, os.ErrNotExist):
			msg = fmt.Sprintf("%s does not exist (adapter unplugged, or another name: ls /dev/serial/by-id/)", d.Serial.Port)
		case err != nil:
			msg = fmt.Sprintf("%s: %v", d.Serial.Port, err)
		case fi.Mode()&os.ModeCharDevice == 0:
			msg = fmt.Sprintf("%s is not a serial device (a character device)", d.Serial.Port)
		default:
			continue
		}
		probs = append(probs, Problem{File: c.file, Line: c.line(field), Field: field, Message: msg})
	}
	if len(probs) == 0 {
		return nil
	}
	return &Errors{Problems: probs}
}
