package sim

import (
	"fmt"
	"math"
	"time"
)

// LoadKind is what a simulated load is.
type LoadKind string

// The load kinds.
const (
	// LoadHeater is an immersion heater behind one relay: it draws its
	// RatedW while its coil is on.
	LoadHeater LoadKind = "heater"
	// LoadSGReady is a heat pump with an SG-Ready input on two adjacent
	// relays, A = Coil and B = Coil+1: (A, B) = (1, 0) state 1 locked,
	// (0, 0) 2 normal, (0, 1) 3 recommended, (1, 1) 4 forced; it draws
	// StateW[state-1].
	LoadSGReady LoadKind = "sgready"
)

// Load defaults.
const (
	defaultHeaterW = 3000
)

// defaultSGReadyW are an SG-Ready heat pump's draws in states 1..4.
var defaultSGReadyW = [4]float64{0, 700, 1600, 2400}

// LoadConfig is one switchable load on a relay board.
type LoadConfig struct {
	// ID names the load (a sub-meter's Measures names it). Required,
	// unique among loads and devices.
	ID string
	// Kind is LoadHeater or LoadSGReady.
	Kind LoadKind
	// Board is the ID of the relay board (a device with Relay) whose coils
	// switch the load.
	Board string
	// Coil is the board's coil (0..7) that switches a heater, or an
	// SG-Ready pump's contact A (0..6; B is Coil+1). Two loads never
	// share a coil.
	Coil int
	// RatedW is a heater's draw while on (default 3000); not for an
	// SG-Ready pump.
	RatedW float64
	// StateW are an SG-Ready pump's draws in states 1..4 (default 0, 700,
	// 1600, 2400 W); not for a heater.
	StateW [4]float64
}

// loadsWithDefaults checks the loads against the devices (already
// checked) and fills their defaults.
func loadsWithDefaults(in []LoadConfig, devs []DeviceConfig) ([]LoadConfig, error) {
	bad := func(format string, a ...any) ([]LoadConfig, error) {
		return nil, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	boards := map[string]bool{}
	devIDs := map[string]bool{}
	for _, d := range devs {
		devIDs[d.ID] = true
		boards[d.ID] = d.Relay
	}
	loads := append([]LoadConfig(nil), in...)
	ids := map[string]bool{}
	type coilKey struct {
		board string
		coil  int
	}
	coils := map[coilKey]string{}
	for i := range loads {
		l := &loads[i]
		field := fmt.Sprintf("loads[%d]", i)
		switch {
		case l.ID == "":
			return bad("%s.id: missing", field)
		case ids[l.ID]:
			return bad("%s.id %q: used twice", field, l.ID)
		case devIDs[l.ID]:
			return bad("%s.id %q: a device has this id", field, l.ID)
		}
		ids[l.ID] = true
		relay, known := boards[l.Board]
		switch {
		case !known:
			return bad("%s.board %q: no such device", field, l.Board)
		case !relay:
			return bad("%s.board %q: not a relay board", field, l.Board)
		}
		used := []int{l.Coil}
		switch l.Kind {
		case LoadHeater:
			if l.StateW != ([4]float64{}) {
				return bad("%s.stateW: only an SG-Ready heat pump has states", field)
			}
			if l.RatedW == 0 {
				l.RatedW = defaultHeaterW
			}
			if l.RatedW < 0 || l.RatedW > maxRatedW || math.IsNaN(l.RatedW) {
				return bad("%s.ratedW %v outside 0..%d", field, l.RatedW, maxRatedW)
			}
			if l.Coil < 0 || l.Coil >= RelayChannels {
				return bad("%s.coil %d outside 0..%d", field, l.Coil, RelayChannels-1)
			}
		case LoadSGReady:
			if l.RatedW != 0 {
				return bad("%s.ratedW: an SG-Ready heat pump draws stateW", field)
			}
			if l.StateW == ([4]float64{}) {
				l.StateW = defaultSGReadyW
			}
			for s, w := range l.StateW {
				if w < 0 || w > maxRatedW || math.IsNaN(w) {
					return bad("%s.stateW[%d] %v outside 0..%d", field, s, w, maxRatedW)
				}
			}
			if l.Coil < 0 || l.Coil+1 >= RelayChannels {
				return bad("%s.coil %d: an SG-Ready pump takes coils %d and %d, want them inside 0..%d",
					field, l.Coil, l.Coil, l.Coil+1, RelayChannels-1)
			}
			used = append(used, l.Coil+1)
		default:
			return bad("%s.kind %q: want heater or sgready", field, l.Kind)
		}
		for _, c := range used {
			k := coilKey{l.Board, c}
			if other, ok := coils[k]; ok {
				return bad("%s.coil: coil %d of %s already switches %s", field, c, l.Board, other)
			}
			coils[k] = l.ID
		}
	}
	for i, d := range devs {
		if d.Measures != "" && !ids[d.Measures] {
			return bad("devices[%d].measures %q: no such load", i, d.Measures)
		}
	}
	return loads, nil
}

// maxW is the most the load draws.
func (c LoadConfig) maxW() float64 {
	if c.Kind == LoadHeater {
		return c.RatedW
	}
	return max(c.StateW[0], c.StateW[1], c.StateW[2], c.StateW[3])
}

// sgReadyState is the SG-Ready state of the contact pair (A, B).
func sgReadyState(a, b bool) int {
	switch {
	case a && !b:
		return 1
	case !a && !b:
		return 2
	case !a && b:
		return 3
	default:
		return 4
	}
}

// appliance is a load of Config.Loads with its board.
type appliance struct {
	cfg   LoadConfig
	board *relayBoard
	load  *load
}

// state is the SG-Ready state at t (0 for a heater).
func (a *appliance) state(t time.Time) int {
	if a.cfg.Kind != LoadSGReady {
		return 0
	}
	return sgReadyState(a.board.coilAt(a.cfg.Coil, t), a.board.coilAt(a.cfg.Coil+1, t))
}

// power is the draw at t from the board's coils.
func (a *appliance) power(t time.Time) float64 {
	if a.cfg.Kind == LoadSGReady {
		return a.cfg.StateW[a.state(t)-1]
	}
	if a.board.coilAt(a.cfg.Coil, t) {
		return a.cfg.RatedW
	}
	return 0
}

// addAppliancesLocked registers the config's loads with their boards and
// points the sub-meters at them. Called by New once the devices exist.
func (p *Plant) addAppliancesLocked() {
	byID := map[string]*appliance{}
	for _, lc := range p.cfg.Loads {
		a := &appliance{cfg: lc, board: p.Device(lc.Board).relay}
		a.load = &load{id: lc.ID, power: a.power}
		byID[lc.ID] = a
		p.appliances = append(p.appliances, a)
		p.addLoadLocked(a.load)
	}
	for _, d := range p.meters {
		if id := d.cfg.Measures; id != "" {
			d.met.measures = byID[id].load
		}
	}
}

// LoadState is a simulated load's state at one instant.
type LoadState struct {
	Time     time.Time // simulated time
	PowerW   float64
	EnergyWh float64 // since the plant started
	// SGReady is an SG-Ready pump's state (1..4); 0 for a heater.
	SGReady int
}

// Load returns the state of the load with the id at the current
// simulated time; false when there is none.
func (p *Plant) Load(id string) (LoadState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.appliances {
		if a.cfg.ID != id {
			continue
		}
		p.advanceLocked(p.simNow())
		return LoadState{Time: p.t, PowerW: a.load.w, EnergyWh: a.load.energyWh, SGReady: a.state(p.t)}, true
	}
	return LoadState{}, false
}
