package sim_test

import (
	"fmt"
	"log"
	"time"

	"plantd/sim"
)

// ExampleNew starts the demo plant on free loopback ports and injects a
// fault. Device.Addr gives each device's host:port for a Modbus client.
func ExampleNew() {
	cfg := sim.DefaultConfig()
	cfg.Start = time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC) // simulated time at New
	cfg.Speed = 60                                            // a simulated minute per second
	p, err := sim.New(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for _, d := range p.Devices() {
		var ids []uint16
		for _, m := range d.Models() {
			ids = append(ids, m.ID)
		}
		fmt.Println(d.ID(), d.Label(), "unit", d.Unit(), "models", ids)
	}
	inv := p.Device("inv1")
	inv.SetFault(sim.Fault{Kind: sim.FaultSlow, Delay: 2 * time.Second})
	fmt.Println(inv.ID(), "fault:", inv.Fault())
	// Output:
	// inv1 inverter unit 1 models [1 103 120 121 122 123 126 127 129 130 132 134 135 136]
	// inv2 der-inverter unit 1 models [1 701 702 704 705 706 707 708 709 710 711]
	// meter meter unit 1 models [1 203]
	// bat battery unit 1 models [1 124 713 802]
	// wx sensor unit 1 models [1 308]
	// inv1 fault: slow 2s
}
