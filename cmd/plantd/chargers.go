package main

import (
	"fmt"
	"log/slog"
	"net"

	"plantd/charger"
	"plantd/config"
	"plantd/consumer"
	"plantd/consumer/drivers"
	"plantd/plant/kind"
)

// newCentral builds the OCPP central system of the config's chargers (nil
// when none is enabled), on ln when the caller bound it (the demo), else
// on ocpp.listen.
func newCentral(cfg *config.Config, ln net.Listener, log *slog.Logger) (*chargePoints, error) {
	var points []charger.Point
	phases := map[string]int{}
	for _, dc := range cfg.Devices {
		c := dc.Consumer
		if dc.Kind != kind.Consumer || c == nil || !dc.Enabled || c.Driver != drivers.NameOCPP {
			continue
		}
		points = append(points, charger.Point{ID: c.ChargePointID, Password: c.Password, Phases: c.Phases,
			MaxCurrentA: c.MaxCurrent, FallbackCurrentA: c.Fallback(), Validity: c.Watchdog})
		phases[c.ChargePointID] = c.Phases
	}
	if len(points) == 0 {
		return nil, nil
	}
	central, err := charger.New(charger.Config{Listen: cfg.OCPP.Listen, Listener: ln, Path: cfg.OCPP.Path}, points, log.With("component", "ocpp"))
	if err != nil {
		return nil, fmt.Errorf("ocpp: %w", err)
	}
	return &chargePoints{Central: central, phases: phases}, nil
}

// chargePoints adapts the central system to the charger driver
// (drivers.ChargePoints).
type chargePoints struct {
	*charger.Central
	phases map[string]int // by charge point id
}

// Reading is a charger's last reported state; an error while it is not
// connected (the consumer is then offline).
func (c *chargePoints) Reading(id string) (consumer.Reading, error) {
	st, err := c.Status(id)
	if err != nil {
		return consumer.Reading{}, err
	}
	if !st.Connected {
		return consumer.Reading{}, fmt.Errorf("%w (it connects to plantd's OCPP central system)", charger.ErrNotConnected)
	}
	r := consumer.Reading{PowerW: st.PowerW, HasPower: st.HasPower, EnergyWh: st.EnergyWh, HasEnergy: st.HasEnergy,
		Charger: &consumer.ChargerState{Status: st.State, SoC: st.SoC, HasSoC: st.HasSoC, Plugged: st.Plugged()}}
	r.Output.Phases = c.phases[id]
	if st.HasCurrent {
		r.Output.CurrentA, r.Output.On = st.CurrentA, st.CurrentA > 0
	}
	return r, nil
}
