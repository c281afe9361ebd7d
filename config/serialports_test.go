package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSerialPorts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, port, want string
	}{
		{"a character device", "/dev/null", ""},
		{"missing", "/dev/ttyUSB-nowhere", "plantd.yaml:6: devices[0].serial.port: /dev/ttyUSB-nowhere does not exist"},
		{"a plain file", file, "is not a serial device"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("plantd.yaml", []byte(`plants:
  - {id: p, name: P, timezone: UTC}
devices:
  - id: m1
    serial:
      port: `+tt.port+`
    unit: 2
`))
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckSerialPorts()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}
