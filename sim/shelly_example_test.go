package sim_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"time"

	"plantd/plant/kind"
	"plantd/sim"
)

// ExamplePlant_Shelly starts a plant with a Shelly plug and switches it on
// for a minute over the plug's HTTP RPC, as curl would.
func ExamplePlant_Shelly() {
	now := time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)
	p, err := sim.New(sim.Config{
		Now:      func() time.Time { return now }, // a wall clock standing still
		Devices:  []sim.DeviceConfig{{ID: "meter", Kind: kind.Meter}},
		Shellies: []sim.ShellyConfig{{ID: "boiler", RatedW: 2000}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	plug := p.Shelly("boiler")
	get := func(path string) map[string]any {
		resp, err := http.Get(plug.URL() + path)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			log.Fatal(err)
		}
		return m
	}
	fmt.Println(get("/rpc/Switch.Set?id=0&on=true&toggle_after=60"))
	st := get("/rpc/Switch.GetStatus?id=0")
	fmt.Println(st["output"], st["apower"], st["timer_duration"])
	// Output:
	// map[was_on:false]
	// true 2000 60
}
