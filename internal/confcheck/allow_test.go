package confcheck

import (
	"net/netip"
	"testing"
)

func TestAllowPrefixes(t *testing.T) {
	allow := []string{"192.168.1.7", "10.1.2.3/16", "::1", "::ffff:192.0.2.9", "2001:db8::/32"}
	got := AllowPrefixes(allow)
	want := []string{"192.168.1.7/32", "10.1.0.0/16", "::1/128", "192.0.2.9/32", "2001:db8::/32"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("%s: %v, want %s", allow[i], p, want[i])
		}
	}
	for _, tc := range []struct {
		addr string
		in   bool
	}{{"192.168.1.7", true}, {"192.168.1.8", false}, {"10.1.200.1", true}, {"10.2.0.1", false}, {"::1", true}, {"192.0.2.9", true}} {
		a := netip.MustParseAddr(tc.addr)
		in := false
		for _, p := range got {
			in = in || p.Contains(a)
		}
		if in != tc.in {
			t.Errorf("%s allowed: %v, want %v", tc.addr, in, tc.in)
		}
	}
}
