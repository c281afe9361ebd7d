package consumer

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestKeptEncoding packs a guard state and unpacks it; a short, long or
// other version's state is refused.
func TestKeptEncoding(t *testing.T) {
	at := time.UnixMilli(1_782_036_000_000)
	k := kept{has: true, out: Output{On: true, SGReady: SGForced}, last: at,
		switches: []time.Time{at.Add(-40 * time.Minute), at},
		byRan:    []time.Duration{90 * time.Minute, 0}, byEnd: []time.Time{at.Add(5 * time.Hour), {}},
		dayOK: true, day: "2026-06-21", dayWh: 1234.5, estWh: 98765.25}
	b := k.encode()
	if want := 33 + 2*8 + 2*16; len(b) != want {
		t.Errorf("%d bytes, want %d", len(b), want)
	}
	var got kept
	if err := got.decode(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Errorf("decoded %+v, want %+v", got, k)
	}
	var none kept
	if err := none.decode((&kept{}).encode()); err != nil || !reflect.DeepEqual(none, kept{switches: []time.Time{}, byRan: []time.Duration{}, byEnd: []time.Time{}}) {
		t.Errorf("empty state: %+v, %v", none, err)
	}
	for name, bad := range map[string][]byte{"short": b[:len(b)-1], "long": append(b[:len(b):len(b)], 0), "version": append([]byte{9}, b[1:]...)} {
		if err := new(kept).decode(bad); !errors.Is(err, errKept) {
			t.Errorf("%s: %v, want errKept", name, err)
		}
	}
}
