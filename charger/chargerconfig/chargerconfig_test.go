package chargerconfig

import (
	"slices"
	"testing"

	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		listen, path string
		want         []string
	}{
		{":8887", "/ocpp", nil},
		{"0.0.0.0:9000", "/", nil},
		{"8887", "/ocpp", []string{`ocpp.listen: "8887" is not host:port (as in :8887)`}},
		{":8887", "ocpp", []string{`ocpp.path: "ocpp" is not a URL path (as /ocpp: a leading /, no trailing /, no space, ? or #)`}},
		{":8887", "/ocpp/", []string{`ocpp.path: "/ocpp/" is not a URL path (as /ocpp: a leading /, no trailing /, no space, ? or #)`}},
		{":8887", "/o?x", []string{`ocpp.path: "/o?x" is not a URL path (as /ocpp: a leading /, no trailing /, no space, ? or #)`}},
	} {
		var l confcheck.List
		Config{Listen: tt.listen, Path: tt.path}.Validate(confcheck.New(&l, "ocpp"))
		if !slices.Equal(l.Problems, tt.want) {
			t.Errorf("%q %q: %q, want %q", tt.listen, tt.path, l.Problems, tt.want)
		}
	}
	var o Config
	o.SetDefaults()
	if o.Listen != ":8887" || o.Path != "/ocpp" {
		t.Errorf("defaults %+v", o)
	}
}
