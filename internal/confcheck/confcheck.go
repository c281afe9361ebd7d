package confcheck

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sink receives a Checker's problems. field is the whole path from the
// file's root, as "mqtt.outbox.maxRows" or "inputs[0].actions[1]".
type Sink interface {
	// Problem records one problem of field; msg is lower-case, without
	// the field's name.
	Problem(field, msg string)
	// Where describes the entry at field for a message about another
	// one: "devices[1] at line 20", or the path alone without a line.
	Where(field string) string
}

// Checker reports the problems of one section, or of a part of it, by
// path relative to where it is ([Checker.In]).
type Checker struct {
	sink   Sink
	prefix string
}

// New returns a Checker that reports to sink with paths below prefix ("":
// the file's root).
func New(sink Sink, prefix string) Checker { return Checker{sink: sink, prefix: prefix} }

// Path returns the whole path of field: prefix.field, prefix[0] for
// field "[0]", and the prefix itself for field "".
func (c Checker) Path(field string) string {
	switch {
	case c.prefix == "":
		return field
	case field == "":
		return c.prefix
	case field[0] == '[':
		return c.prefix + field
	}
	return c.prefix + "." + field
}

// In returns a Checker for the part at field.
func (c Checker) In(field string) Checker { return Checker{sink: c.sink, prefix: c.Path(field)} }

// Add reports a problem of field, its message formatted as by fmt.Sprintf.
func (c Checker) Add(field, format string, args ...any) {
	c.sink.Problem(c.Path(field), fmt.Sprintf(format, args...))
}

// Where describes the entry at field (relative to c) for a message about
// another one: "inputs[0].actions[0] at line 83".
func (c Checker) Where(field string) string { return c.sink.Where(c.Path(field)) }

// AddFunc is Add as a function value, the form consumer/drivers.Check
// takes.
func (c Checker) AddFunc() func(field, format string, args ...any) { return c.Add }

// List is a Sink that keeps the problems, for tests and for checks
// outside a file: Where gives the path alone.
type List struct {
	Problems []string // "field: msg"
}

// Problem appends "field: msg".
func (l *List) Problem(field, msg string) { l.Problems = append(l.Problems, field+": "+msg) }

// Where returns field.
func (l *List) Where(field string) string { return field }

// Unique checks that key was not used by an earlier entry of a list:
// first maps keys to the entry (relative path) that used them first.
func (c Checker) Unique(first map[string]string, key, field, entry, what string) {
	if key == "" {
		return
	}
	if prev, ok := first[key]; ok {
		c.Add(field, "duplicate %s %q (first in %s)", what, key, c.Where(prev))
		return
	}
	first[key] = entry
}

// Duration checks lo <= d <= hi (hi 0: no upper bound) and reports
// whether it is.
func (c Checker) Duration(field string, d, lo, hi time.Duration) bool {
	switch {
	case hi == 0 && d < lo:
		c.Add(field, "%s is out of range (at least %s)", FmtDuration(d), FmtDuration(lo))
	case hi != 0 && (d < lo || d > hi):
		c.Add(field, "%s is out of range (%s..%s)", FmtDuration(d), FmtDuration(lo), FmtDuration(hi))
	default:
		return true
	}
	return false
}

// OptRange checks lo <= *f <= hi when f is given.
func (c Checker) OptRange(field string, f *float64, lo, hi float64) {
	if f != nil && !(*f >= lo && *f <= hi) {
		c.Add(field, "%s is out of range (%s..%s)", Num(*f), Num(lo), Num(hi))
	}
}

// Num formats a number as briefly as it is exact.
func Num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// FmtDuration formats d as Go does, without zero minutes and seconds (1h,
// not 1h0m0s), and hours with odd seconds in seconds (65535s, not
// 18h12m15s).
func FmtDuration(d time.Duration) string {
	if d >= time.Hour && d%time.Minute != 0 && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Listen checks a listen address: host:port, the host empty (every
// interface), a name or an IP address, the port 0 (any) to 65535;
// example is shown in the message.
func (c Checker) Listen(field, addr, example string) {
	if host, port, err := net.SplitHostPort(addr); err != nil {
		c.Add(field, "%q is not host:port (as in %s)", addr, example)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		c.Add(field, "%q has no valid port", addr)
	} else if host != "" && !ValidHost(host) {
		c.Add(field, "%q has no valid host", addr)
	}
}

var hostLabel = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// ValidHost reports whether h is an IP address or a host name.
func ValidHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, label := range labels {
		if !hostLabel.MatchString(label) {
			return false
		}
	}
	// A name whose last label is all digits is a mistyped IPv4 address
	// (192.168.1.300), not a host name: no top-level domain is numeric.
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// AllowList checks an allow-list's entries (field: its key), IP addresses
// or CIDRs; with writes on, a catch-all (0.0.0.0/0, ::/0) is refused: the
// list names who may write.
func (c Checker) AllowList(field string, allow []string, writes bool) {
	for i, a := range allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			if _, err := netip.ParseAddr(a); err != nil {
				c.Add(fmt.Sprintf("%s[%d]", field, i), "%q is not an IP address or CIDR", a)
			}
			continue
		}
		if writes && p.Bits() == 0 {
			c.Add(fmt.Sprintf("%s[%d]", field, i), "%q allows every address, and writes is true: list the masters that may write (e.g. 192.168.10.20 or 192.168.10.0/24)", a)
		}
	}
}

// AllowPrefixes returns an allow-list's addresses and CIDRs as prefixes
// (an address as its /32 or /128); entries that are neither are left out
// (validation refused them).
func AllowPrefixes(allow []string) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range allow {
		if p, err := netip.ParsePrefix(a); err == nil {
			out = append(out, p.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		}
	}
	return out
}

// MaxConns bounds a Modbus server's or proxy's maxConnsPerClient (and
// the SunSpec server's maxConns).
const MaxConns = 1024

// ConnsPerClient checks a maxConnsPerClient (1..MaxConns).
func (c Checker) ConnsPerClient(field string, n int) {
	if n < 1 || n > MaxConns {
		c.Add(field, "%d is out of range (1..%d)", n, MaxConns)
	}
}

// Roles of API tokens, OAuth clients, the MQTT uplink's remote control,
// Home Assistant's commands and the SunSpec server's writes, lowest
// first.
const (
	RoleStandard     = "standard"
	RoleInstaller    = "installer"
	RoleGridOperator = "gridoperator"
)

// RoleRank orders the roles: standard 1, installer 2, gridoperator 3, and
// 0 for a string that is no role. The one ordering of roles, for the
// HTTP API's checks, grid control's precedence and Home Assistant's
// commands.
func RoleRank(role string) int {
	switch role {
	case RoleStandard:
		return 1
	case RoleInstaller:
		return 2
	case RoleGridOperator:
		return 3
	}
	return 0
}

// Role checks a role: standard, installer or gridoperator.
func (c Checker) Role(field, role string) {
	switch role {
	case RoleStandard, RoleInstaller, RoleGridOperator:
	case "":
		c.Add(field, "required (standard, installer or gridoperator)")
	default:
		c.Add(field, "%q is not a role (standard, installer or gridoperator)", role)
	}
}

var sha256Pattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// SHA256 checks the hex SHA-256 of a secret (64 digits, either case) and
// reports whether it is one.
func (c Checker) SHA256(field, s string) bool {
	switch {
	case s == "":
		c.Add(field, "required (the hex SHA-256 of the secret, 64 digits)")
	case !sha256Pattern.MatchString(s):
		c.Add(field, "%q is not a hex SHA-256 (64 hex digits)", s)
	default:
		return true
	}
	return false
}
