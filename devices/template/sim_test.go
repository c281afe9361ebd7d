package template_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"plantd/devices/template"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
)

// noon is a clear summer noon at the sim's site: PV, load and grid all
// flow, and the clock stands still, so the image does not change between
// a read and the sim's account of it.
var noon = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)

// templatePlant starts the default simulated plant plus one device of
// every embedded template, each at a port of its own, reached through
// transport: Modbus TCP, RTU over TCP (each port a converter), or RTU on
// one serial line (one end of a socat pty pair; the device's path is
// then the other end, returned as line).
func templatePlant(t *testing.T, transport modbus.Transport) (p *sim.Plant, line string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Now = func() time.Time { return noon }
	cfg.Start = noon
	cfg.ClearSky = true
	var ids []string
	for i, name := range template.Names() {
		d := sim.DeviceConfig{ID: "t-" + name, Template: name, Unit: 3}
		switch transport {
		case modbus.TransportRTUOverTCP:
			d.RTUOverTCP = true
		case modbus.TransportRTU:
			d.Unit = byte(2 + i) // one bus: an address each
		}
		cfg.Devices = append(cfg.Devices, d)
		ids = append(ids, d.ID)
	}
	if transport == modbus.TransportRTU {
		a, b := socatPair(t)
		cfg.Serial = []sim.SerialConfig{{Path: a, Baud: 115200, Devices: ids}}
		line = b
	}
	return simtest.Start(t, cfg), line
}

// socatPair makes a pty pair with socat and returns its two ends.
func socatPair(t *testing.T) (a, b string) {
	t.Helper()
	dir := t.TempDir()
	p := proctest.StartPTYPair(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	return p.A, p.B
}

// TestSimImages reads every template's simulator image through plantd's
// Modbus TCP client and the template decoder: the device is identified,
// and every point decodes to what the simulator wrote.
func TestSimImages(t *testing.T) {
	for _, transport := range []modbus.Transport{modbus.TransportTCP, modbus.TransportRTUOverTCP, modbus.TransportRTU} {
		t.Run(string(transport), func(t *testing.T) { testSimImages(t, transport) })
	}
}

func testSimImages(t *testing.T, transport modbus.Transport) {
	p, line := templatePlant(t, transport)
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	all, err := template.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range all {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			d := simtest.Device(t, p, "t-"+tp.Name)
			ep := modbus.EndpointConfig{Address: d.Addr(), Transport: transport, Timeout: 2 * time.Second}
			if transport == modbus.TransportRTU {
				ep.Address, ep.Serial = line, modbus.SerialConfig{Baud: 115200}
			}
			c := pool.Endpoint(ep).Unit(d.Unit(), 2*time.Second)
			var regs template.Registers
			if err := tp.Read(t.Context(), c, &regs, true); err != nil {
				t.Fatal(err)
			}
			if err := tp.Check(&regs); err != nil {
				t.Fatalf("identification: %v", err)
			}
			values, texts, ok := d.TemplateValues()
			if !ok {
				t.Fatal("not a template device")
			}
			nonZero := 0
			for i := range tp.Points {
				pt := &tp.Points[i]
				if !pt.Numeric() {
					got, _ := tp.Text(pt, &regs)
					if want := texts[pt.Name]; got != want {
						t.Errorf("%s = %q, sim wrote %q", pt.Name, got, want)
					}
					continue
				}
				got, ok := tp.Value(pt, &regs)
				want, wrote := values[pt.Name]
				if !ok || !wrote || got != want {
					t.Errorf("%s = %v (%v), sim wrote %v (%v)", pt.Name, got, ok, want, wrote)
				}
				if got != 0 {
					nonZero++
				}
			}
			if nonZero == 0 {
				t.Error("every point reads 0")
			}
			// A poll after identification reads the poll blocks only and
			// keeps the nameplate.
			if err := tp.Read(t.Context(), c, &regs, false); err != nil {
				t.Fatal(err)
			}
			if pl := tp.Plate(&regs); pl.Manufacturer == "" || pl.Model == "" {
				t.Errorf("nameplate %+v", pl)
			}
		})
	}
}

// TestSimRefusesWrites: a template device is read-only, and a read outside
// its blocks is an illegal data address.
func TestSimRefusesWrites(t *testing.T) {
	p, _ := templatePlant(t, modbus.TransportTCP)
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	d := simtest.Device(t, p, "t-sun2000")
	c := pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: 2 * time.Second}).Unit(d.Unit(), 2*time.Second)
	if err := c.WriteRegisters(t.Context(), 32080, []uint16{1}); modbus.Classify(err) != modbus.ClassUnsupported {
		t.Errorf("write = %v, want an illegal function", err)
	}
	if _, err := c.ReadHoldingRegisters(t.Context(), 40000, 2, nil); modbus.Classify(err) != modbus.ClassUnsupported {
		t.Errorf("read outside the map = %v, want an illegal data address", err)
	}
	if _, err := c.ReadInputRegisters(t.Context(), 32080, 2, nil); modbus.Classify(err) != modbus.ClassUnsupported {
		t.Errorf("input registers of a holding map = %v, want an illegal data address", err)
	}
}

// TestCheck: identification conditions that do not hold are
// ErrNotIdentified and name the point.
func TestCheck(t *testing.T) {
	tests := []struct {
		name, template, point string
		value                 float64
		text                  string
		ok                    bool
	}{
		{"meter at 50 Hz", "sdm120", "frequency", 50, "", true},
		{"meter at 0 Hz", "sdm120", "frequency", 0, "", false},
		// An SDM630 needs a mains voltage on L2 and L3 besides the
		// frequency (its own image, with all three, passes TestSimImages).
		{"three-phase meter with L1 only", "sdm630", "frequency", 50, "", false},
		{"huawei model", "sun2000", "model", 0, "SUN2000-10KTL-M1", true},
		{"another model", "sun2000", "model", 0, "SG10RT", false},
		{"sungrow SH10RT", "sungrow_sh", "deviceType", 0x0E03, "", true},
		{"sungrow SG string inverter", "sungrow_sh", "deviceType", 0x0E0F, "", false},
		{"e3dc magic", "e3dc", "magic", 0xE3DC, "", true},
		{"no magic", "e3dc", "magic", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, _ := template.Lookup(tt.template)
			regs := template.Registers{Blocks: make([][]uint16, len(tp.Blocks))}
			for i, b := range tp.Blocks {
				regs.Blocks[i] = make([]uint16, b.Count)
			}
			for i := range tp.Points {
				pt := &tp.Points[i]
				bi := tp.BlockOf(i)
				w := regs.Blocks[bi][pt.Address-tp.Blocks[bi].Address:][:pt.Size()]
				switch {
				case pt.Name == tt.point && tt.text != "":
					pt.EncodeText(tt.text, w)
				case pt.Name == tt.point:
					pt.Encode(tt.value, w)
				}
			}
			err := tp.Check(&regs)
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, template.ErrNotIdentified) {
				t.Errorf("Check = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
