package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"plantd/devices/template"
	"plantd/internal/proctest"
	"plantd/sim"
)

// TestAssignPorts: the TCP devices get PORT, PORT+1, ... in order
// (devices behind one gateway share its port), the devices on a serial
// line none, and the Shelly plug the next port.
func TestAssignPorts(t *testing.T) {
	serial := func() sim.Config {
		c := sim.DemoConfig()
		on := []string{serialMeter}
		for i, name := range template.Names() {
			c.Devices = append(c.Devices, sim.DeviceConfig{ID: name, Template: name, Unit: byte(2 + i)})
			on = append(on, name)
		}
		c.Serial = []sim.SerialConfig{{Path: "/dev/null", Devices: on}}
		return c
	}
	scale, err := sim.ScaleConfig(6, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  sim.Config
		want string // id=port of every device, then the plugs
	}{
		{"demo", sim.DemoConfig(), "inv1=100 inv2=101 meter=102 bat=103 wx=104 io=105 heatmeter=106 rcr=107 plug=108"},
		{"serial", serial(), "inv1=100 inv2=101 meter=0 bat=102 wx=103 io=104 heatmeter=105 rcr=106 " +
			strings.Join(func() []string {
				var s []string
				for _, n := range template.Names() {
					s = append(s, n+"=0")
				}
				return s
			}(), " ") + " plug=107"},
		{"gateways", scale, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			assignPorts(&cfg, 100)
			var got []string
			ports := map[int]string{}
			for _, d := range cfg.Devices {
				got = append(got, fmt.Sprintf("%s=%d", d.ID, d.Port))
				if d.Port == 0 {
					continue
				}
				if other, ok := ports[d.Port]; ok && (d.Endpoint == "" || other != d.Endpoint) {
					t.Errorf("port %d twice: %s and %s", d.Port, other, d.ID)
				}
				ports[d.Port] = d.Endpoint
			}
			for _, s := range cfg.Shellies {
				got = append(got, fmt.Sprintf("%s=%d", s.ID, s.Port))
				if s.Port == 0 {
					t.Errorf("plug %s has no port", s.ID)
				}
				if _, ok := ports[s.Port]; ok {
					t.Errorf("plug %s on a device's port %d", s.ID, s.Port)
				}
			}
			if tt.want != "" && strings.Join(got, " ") != tt.want {
				t.Errorf("ports\n%s\nwant\n%s", strings.Join(got, " "), tt.want)
			}
			if tt.name == "gateways" && len(ports) != 2 {
				t.Errorf("%d ports for the scale plant's two gateways: %v", len(ports), got)
			}
		})
	}
}

// TestSimListenPinsEveryTwin runs "plantd sim --listen 127.0.0.1:P" (also
// with --serial on a pty) and "plantd demo --sim-listen 127.0.0.1:P": every
// Modbus device is at P, P+1, ... and the Shelly plug at the next port;
// with --serial the meter and the template devices are on the line.
func TestSimListenPinsEveryTwin(t *testing.T) {
	t.Parallel() // its own processes, ports and ptys
	dir := t.TempDir()
	tcp := []string{"inv1", "inv2", "meter", "bat", "wx", "io", "heatmeter", "rcr"}
	for _, tt := range []struct {
		name   string
		args   func(listen string) []string
		ready  *regexp.Regexp
		serial bool
	}{
		{"sim", func(l string) []string { return []string{"sim", "--listen", l} }, simReadyRE, false},
		{"sim --serial", func(l string) []string {
			_, b := socatPair(t, dir)
			return []string{"sim", "--listen", l, "--serial", b}
		}, simReadyRE, true},
		{"demo", func(l string) []string {
			return []string{"demo", "--sim-listen", l, "--listen", "127.0.0.1:0", "--db", dir + "/demo.db", "--mqtt", "off",
				"--sunspec", "off", "--ocpp", "off"}
		}, regexp.MustCompile(`^The live energy balance`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			port := proctest.FreePorts(t, len(tcp)+1)
			p := proctest.Start(t, exec.Command(binPath, tt.args(fmt.Sprintf("127.0.0.1:%d", port))...))
			out := p.WaitStdout(tt.ready, 20*time.Second)
			next := port
			for _, id := range tcp {
				if tt.serial && id == serialMeter {
					continue
				}
				want := fmt.Sprintf("127.0.0.1:%d", next)
				next++
				if !regexp.MustCompile(`(?m)^ *` + id + ` .* ` + regexp.QuoteMeta(want) + `( |$)`).MatchString(out) {
					t.Errorf("%s not at %s:\n%s", id, want, out)
				}
			}
			if plug := fmt.Sprintf("127.0.0.1:%d", next); !regexp.MustCompile(`(?m)^ *plug .*` + regexp.QuoteMeta(plug) + `( |$)`).MatchString(out) {
				t.Errorf("the plug not at %s:\n%s", plug, out)
			}
			if tt.serial {
				for _, id := range append([]string{serialMeter}, template.Names()...) {
					if !regexp.MustCompile(`(?m)^` + id + ` .*\(RTU \d+ baud\)$`).MatchString(out) {
						t.Errorf("%s not on the serial line:\n%s", id, out)
					}
				}
			}
			if tt.name == "demo" {
				// Every twin polled: the plug among them.
				p.WaitLog(regexp.MustCompile(`ready: `), 20*time.Second)
			}
			p.Stop(os.Interrupt, 10*time.Second)
		})
	}
}
