package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

// The charge point twin's answers to the central system's requests.
// ocpp-go calls them on its connection's reading goroutine: they change
// the state and answer, and never send a request themselves (its answer
// could not be read); the session sends what follows (a status).

// smartHandler answers the Smart Charging profile.
type smartHandler struct{ cp *ChargePoint }

// OnSetChargingProfile installs a profile: Accepted, or Rejected with the
// reason logged (an unsupported rate unit or number of phases, a TxProfile
// without its transaction, ...).
func (h smartHandler) OnSetChargingProfile(r *smartcharging.SetChargingProfileRequest) (*smartcharging.SetChargingProfileConfirmation, error) {
	cp := h.cp
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if err := cp.profiles.set(r.ConnectorId, r.ChargingProfile, cp.tx, cp.electrics(), time.Now()); err != nil {
		cp.log.Warn("charging profile rejected", "connector", r.ConnectorId, "err", err)
		return smartcharging.NewSetChargingProfileConfirmation(smartcharging.ChargingProfileStatusRejected), nil
	}
	pr := r.ChargingProfile
	cp.log.Info("charging profile set", "connector", r.ConnectorId, "id", pr.ChargingProfileId,
		"purpose", pr.ChargingProfilePurpose, "stackLevel", pr.StackLevel)
	cp.updateLocked()
	cp.wake()
	return smartcharging.NewSetChargingProfileConfirmation(smartcharging.ChargingProfileStatusAccepted), nil
}

// OnClearChargingProfile removes the profiles the request selects:
// Accepted when it removed any, Unknown else.
func (h smartHandler) OnClearChargingProfile(r *smartcharging.ClearChargingProfileRequest) (*smartcharging.ClearChargingProfileConfirmation, error) {
	cp := h.cp
	cp.mu.Lock()
	defer cp.mu.Unlock()
	n := cp.profiles.clear(r)
	cp.log.Info("charging profiles cleared", "count", n)
	if n == 0 {
		return smartcharging.NewClearChargingProfileConfirmation(smartcharging.ClearChargingProfileStatusUnknown), nil
	}
	cp.updateLocked()
	cp.wake()
	return smartcharging.NewClearChargingProfileConfirmation(smartcharging.ClearChargingProfileStatusAccepted), nil
}

// OnGetCompositeSchedule answers the effective limit from now for the
// duration asked, in A unless W is asked; connector 0 and 1 alike (the
// charger has one connector).
func (h smartHandler) OnGetCompositeSchedule(r *smartcharging.GetCompositeScheduleRequest) (*smartcharging.GetCompositeScheduleConfirmation, error) {
	cp := h.cp
	if r.ConnectorId > 1 {
		return smartcharging.NewGetCompositeScheduleConfirmation(smartcharging.GetCompositeScheduleStatusRejected), nil
	}
	unit := r.ChargingRateUnit
	if unit == "" {
		unit = types.ChargingRateUnitAmperes
	}
	now := time.Now().Truncate(time.Second)
	cp.mu.Lock()
	periods := cp.profiles.composite(now, time.Duration(r.Duration)*time.Second, cp.tx, cp.electrics(), unit)
	cp.mu.Unlock()
	conf := smartcharging.NewGetCompositeScheduleConfirmation(smartcharging.GetCompositeScheduleStatusAccepted)
	conn := r.ConnectorId
	conf.ConnectorId = &conn
	conf.ScheduleStart = types.NewDateTime(now)
	d := r.Duration
	conf.ChargingSchedule = &types.ChargingSchedule{Duration: &d, StartSchedule: types.NewDateTime(now),
		ChargingRateUnit: unit, ChargingSchedulePeriod: periods}
	return conf, nil
}

// coreHandler answers the Core profile's requests to a charge point: the
// configuration keys a central system reads for smart charging, and a
// refusal (or NotSupported) for what the twin does not simulate.
type coreHandler struct{ cp *ChargePoint }

// OnChangeAvailability is Rejected: the twin stays operative.
func (coreHandler) OnChangeAvailability(*core.ChangeAvailabilityRequest) (*core.ChangeAvailabilityConfirmation, error) {
	return core.NewChangeAvailabilityConfirmation(core.AvailabilityStatusRejected), nil
}

// OnChangeConfiguration: the keys are read-only (Rejected), unknown ones
// NotSupported.
func (h coreHandler) OnChangeConfiguration(r *core.ChangeConfigurationRequest) (*core.ChangeConfigurationConfirmation, error) {
	if _, ok := h.config()[r.Key]; ok {
		return core.NewChangeConfigurationConfirmation(core.ConfigurationStatusRejected), nil
	}
	return core.NewChangeConfigurationConfirmation(core.ConfigurationStatusNotSupported), nil
}

// OnClearCache is Accepted: the twin has no cache to clear.
func (coreHandler) OnClearCache(*core.ClearCacheRequest) (*core.ClearCacheConfirmation, error) {
	return core.NewClearCacheConfirmation(core.ClearCacheStatusAccepted), nil
}

// OnDataTransfer knows no vendor.
func (coreHandler) OnDataTransfer(*core.DataTransferRequest) (*core.DataTransferConfirmation, error) {
	return core.NewDataTransferConfirmation(core.DataTransferStatusUnknownVendorId), nil
}

// config is the twin's configuration keys (all read-only).
func (h coreHandler) config() map[string]string {
	c := h.cp.cfg
	return map[string]string{
		"NumberOfConnectors":                      "1",
		"MeterValueSampleInterval":                strconv.Itoa(int(c.MeterInterval / time.Second)),
		"MeterValuesSampledData":                  "Energy.Active.Import.Register,Power.Active.Import,Current.Import,Current.Offered,SoC",
		"ChargeProfileMaxStackLevel":              strconv.Itoa(maxStackLevel),
		"ChargingScheduleAllowedChargingRateUnit": "Current,Power",
		"ChargingScheduleMaxPeriods":              strconv.Itoa(maxPeriods),
		"MaxChargingProfilesInstalled":            strconv.Itoa(maxProfiles),
		"ConnectorSwitch3to1PhaseSupported":       "false",
		"SupportedFeatureProfiles":                "Core,SmartCharging",
	}
}

// OnGetConfiguration answers the keys asked (all when none), unknown keys
// as such.
func (h coreHandler) OnGetConfiguration(r *core.GetConfigurationRequest) (*core.GetConfigurationConfirmation, error) {
	all := h.config()
	keys := r.Key
	if len(keys) == 0 {
		for k := range all {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	var known []core.ConfigurationKey
	var unknown []string
	for _, k := range keys {
		v, ok := all[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		known = append(known, core.ConfigurationKey{Key: k, Readonly: true, Value: &v})
	}
	conf := core.NewGetConfigurationConfirmation(known)
	conf.UnknownKey = unknown
	return conf, nil
}

// OnRemoteStartTransaction is Rejected: the car starts its transaction
// when plugged in (Plug).
func (coreHandler) OnRemoteStartTransaction(*core.RemoteStartTransactionRequest) (*core.RemoteStartTransactionConfirmation, error) {
	return core.NewRemoteStartTransactionConfirmation(types.RemoteStartStopStatusRejected), nil
}

// OnRemoteStopTransaction is Rejected: the transaction ends when the car
// is unplugged (Plug).
func (coreHandler) OnRemoteStopTransaction(*core.RemoteStopTransactionRequest) (*core.RemoteStopTransactionConfirmation, error) {
	return core.NewRemoteStopTransactionConfirmation(types.RemoteStartStopStatusRejected), nil
}

// OnReset is Rejected.
func (coreHandler) OnReset(*core.ResetRequest) (*core.ResetConfirmation, error) {
	return core.NewResetConfirmation(core.ResetStatusRejected), nil
}

// OnUnlockConnector is NotSupported (a fixed cable).
func (coreHandler) OnUnlockConnector(*core.UnlockConnectorRequest) (*core.UnlockConnectorConfirmation, error) {
	return core.NewUnlockConnectorConfirmation(core.UnlockStatusNotSupported), nil
}

// The handlers' compile-time checks.
var (
	_ smartcharging.ChargePointHandler = smartHandler{}
	_ core.ChargePointHandler          = coreHandler{}
)
