package serverconfig

import (
	"slices"
	"testing"

	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	known := func(id string) bool { return id == "p1" }
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"off: nothing checked", func(m *Config) { m.Listen, m.UnitID = "", 0 }, nil},
		{"on", func(*Config) {}, nil},
		{"unknown plant", func(m *Config) { m.Plant = "p2" }, []string{`modbusServer.plant: unknown plant "p2"`}},
		{"no plant", func(m *Config) { m.Plant = "" }, []string{"modbusServer.plant: required when more than one plant is configured"}},
		{"writes without allow", func(m *Config) { m.Writes = true }, []string{
			"modbusServer.allow: required when writes is true: list the addresses of the masters that may write the limit " +
				"(allow: [192.168.10.20] or a CIDR), or set writes: false"}},
		{"writes to everyone", func(m *Config) { m.Writes, m.Allow = true, []string{"0.0.0.0/0"} }, []string{
			`modbusServer.allow[0]: "0.0.0.0/0" allows every address, and writes is true: list the masters that may write (e.g. 192.168.10.20 or 192.168.10.0/24)`}},
		{"unit, role, bounds", func(m *Config) { m.UnitID, m.Role, m.MaxConns, m.MaxConnsPerClient = 248, "standard", 0, 1025 }, []string{
			"modbusServer.unitId: 248 is not a Modbus unit id of a server (1..247)",
			`modbusServer.role: "standard" is not a role that may send schedules (gridoperator or installer)`,
			"modbusServer.maxConns: 0 is out of range (1..1024)",
			"modbusServer.maxConnsPerClient: 1025 is out of range (1..1024)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m Config
			m.SetDefaults()
			m.Listen, m.Plant = ":1502", "p1"
			tt.modify(&m)
			var l confcheck.List
			m.Validate(confcheck.New(&l, "modbusServer"), known)
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
