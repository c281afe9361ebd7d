package charger

import (
	"context"
	"fmt"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

// Stack levels and profile ids. A profile with the id, or the stack level
// and purpose, of one the charger has replaces it (OCPP 1.6 §3.13.2), so
// each SetCurrent replaces the last and each connection's fallback the
// last fallback.
const (
	fallbackLevel     = 0
	limitLevel        = 1
	fallbackProfileID = 1
	limitProfileID    = 2
)

// Meter value configuration asked for on each connection.
const (
	sampleIntervalS = "10"
	sampledData     = "Energy.Active.Import.Register,Power.Active.Import,Current.Import,Current.Offered,SoC"
)

// fallbackProfile is the level-0 TxDefaultProfile: Relative (it has no
// start time, so the charger's clock does not matter), no duration and
// no validTo: the charger keeps it until it is replaced.
func fallbackProfile(p Point) *types.ChargingProfile {
	period := types.NewChargingSchedulePeriod(0, p.FallbackCurrentA)
	period.NumberPhases = &p.Phases
	return &types.ChargingProfile{
		ChargingProfileId:      fallbackProfileID,
		StackLevel:             fallbackLevel,
		ChargingProfilePurpose: types.ChargingProfilePurposeTxDefaultProfile,
		ChargingProfileKind:    types.ChargingProfileKindRelative,
		ChargingSchedule:       types.NewChargingSchedule(types.ChargingRateUnitAmperes, period),
	}
}

// limitProfile is the level-1 TxDefaultProfile of a SetCurrent: Absolute
// from now for validity (validFrom, validTo, startSchedule and duration
// agree, so that a charger that reads only one of them ends it too).
// OCPP-J timestamps have whole seconds: now is truncated to the second,
// the duration rounded up.
func limitProfile(now time.Time, validity time.Duration, amps float64, phases int) *types.ChargingProfile {
	from := now.Truncate(time.Second)
	to := now.Add(validity)
	durationS := int((to.Sub(from) + time.Second - 1) / time.Second)
	period := types.NewChargingSchedulePeriod(0, amps)
	period.NumberPhases = &phases
	schedule := types.NewChargingSchedule(types.ChargingRateUnitAmperes, period)
	schedule.StartSchedule = types.NewDateTime(from)
	schedule.Duration = &durationS
	return &types.ChargingProfile{
		ChargingProfileId:      limitProfileID,
		StackLevel:             limitLevel,
		ChargingProfilePurpose: types.ChargingProfilePurposeTxDefaultProfile,
		ChargingProfileKind:    types.ChargingProfileKindAbsolute,
		ValidFrom:              types.NewDateTime(from),
		ValidTo:                types.NewDateTime(from.Add(time.Duration(durationS) * time.Second)),
		ChargingSchedule:       schedule,
	}
}

// answer is a charge point's answer to a request, bridged from ocpp-go's
// callback.
type answer[T any] struct {
	conf T
	err  error
}

// call sends a request with send (one of ocpp-go's CentralSystem
// methods, given a callback) and waits for the answer or ctx. The
// callback never blocks: ocpp-go calls it from its own goroutines, and
// from its disconnect handler for the requests left unanswered.
func call[T any](ctx context.Context, c *Central, p *point, op string, send func(callback func(T, error)) error) (T, error) {
	var zero T
	c.mu.Lock()
	connected := p.conn != nil
	c.mu.Unlock()
	if !connected {
		return zero, fmt.Errorf("charger %s: %s: %w", p.cfg.ID, op, ErrNotConnected)
	}
	done := make(chan answer[T], 1)
	err := send(func(conf T, err error) { done <- answer[T]{conf, err} })
	if err == nil {
		select {
		case a := <-done:
			if a.err == nil {
				return a.conf, nil
			}
			err = a.err
		case <-ctx.Done():
			return zero, fmt.Errorf("charger %s: %s: %w", p.cfg.ID, op, ctx.Err())
		}
	}
	c.mu.Lock()
	connected = p.conn != nil
	c.mu.Unlock()
	if !connected {
		return zero, fmt.Errorf("charger %s: %s: %w (%w)", p.cfg.ID, op, ErrNotConnected, err)
	}
	return zero, fmt.Errorf("charger %s: %s: %w", p.cfg.ID, op, err)
}

// setProfile sends profile to p's connector and waits for the answer.
func (c *Central) setProfile(ctx context.Context, p *point, profile *types.ChargingProfile) error {
	conf, err := call(ctx, c, p, "set charging profile", func(cb func(*smartcharging.SetChargingProfileConfirmation, error)) error {
		return c.cs.SetChargingProfile(p.cfg.ID, cb, p.cfg.ConnectorID, profile)
	})
	if err != nil {
		return err
	}
	if conf.Status != smartcharging.ChargingProfileStatusAccepted {
		return fmt.Errorf("charger %s: set charging profile (level %d, %g A): %s: %w",
			p.cfg.ID, profile.StackLevel, profile.ChargingSchedule.ChargingSchedulePeriod[0].Limit, conf.Status, ErrRejected)
	}
	return nil
}

// startSetup runs setup for p's current connection once, in a goroutine
// of Run: after the charger's first message that is no BootNotification
// (it sends one once it has the BootNotification's answer, or, on a
// reconnection without a boot, at once), so that plantd's requests never
// come before the answer to the boot.
func (c *Central) startSetup(p *point) {
	c.mu.Lock()
	start := p.conn != nil && !p.setupDone && !c.stopping
	p.setupDone = true
	ctx := c.runCtx
	if start {
		c.wg.Add(1) // under the lock: Run sets stopping before it waits
	}
	c.mu.Unlock()
	if !start {
		return
	}
	go func() {
		defer c.wg.Done()
		c.setup(ctx, p)
	}()
}

// setup installs p's fallback profile and asks for its meter values.
func (c *Central) setup(ctx context.Context, p *point) {
	err := c.setProfile(ctx, p, fallbackProfile(p.cfg))
	c.mu.Lock()
	p.fallback = err == nil
	switch {
	case err == nil:
		if p.st.LastError == "fallback profile rejected" {
			p.st.LastError = ""
		}
	case ctx.Err() != nil:
	default:
		p.st.LastError = "fallback profile rejected"
	}
	c.mu.Unlock()
	switch {
	case err == nil:
		p.log.Info("fallback profile installed", "fallbackCurrentA", p.cfg.FallbackCurrentA, "phases", p.cfg.Phases)
	case ctx.Err() != nil:
		return
	default:
		p.log.Warn("charge point did not take the fallback profile: plantd cannot guarantee the fallback current if it stops",
			"fallbackCurrentA", p.cfg.FallbackCurrentA, "err", err)
	}
	for _, kv := range [][2]string{{"MeterValueSampleInterval", sampleIntervalS}, {"MeterValuesSampledData", sampledData}} {
		conf, err := call(ctx, c, p, "change configuration "+kv[0], func(cb func(*core.ChangeConfigurationConfirmation, error)) error {
			return c.cs.ChangeConfiguration(p.cfg.ID, cb, kv[0], kv[1])
		})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.log.Debug("meter value configuration failed", "key", kv[0], "err", err)
		case conf.Status != core.ConfigurationStatusAccepted:
			p.log.Debug("meter value configuration not taken", "key", kv[0], "value", kv[1], "status", conf.Status)
		}
	}
}
