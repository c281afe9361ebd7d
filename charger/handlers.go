package charger

import (
	"fmt"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/firmware"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

// handler answers the charge points' requests (ocpp-go calls it on a
// goroutine of its own per request).
type handler struct{ c *Central }

var (
	_ core.CentralSystemHandler     = handler{}
	_ firmware.CentralSystemHandler = handler{}
)

// update runs f on the state of the charge point id under the lock and
// stamps it; after a request that is no BootNotification it starts the
// connection's setup. It returns false for an id not configured (the
// websocket check keeps those out).
func (h handler) update(id string, boot bool, f func(p *point)) bool {
	c := h.c
	p := c.points[id]
	if p == nil {
		return false
	}
	now := c.cfg.Now()
	c.mu.Lock()
	p.st.Updated = now
	if f != nil {
		f(p)
	}
	if boot {
		// A rebooted charger may have lost its profiles: plantd knows
		// of none until the fallback is back.
		p.setupDone, p.fallback, p.limitTo = false, false, now
	}
	c.mu.Unlock()
	if !boot {
		c.startSetup(p)
	}
	return true
}

func (h handler) now() *types.DateTime { return types.NewDateTime(h.c.cfg.Now()) }

// OnBootNotification accepts the charge point; its setup follows its
// next message.
func (h handler) OnBootNotification(id string, req *core.BootNotificationRequest) (*core.BootNotificationConfirmation, error) {
	if !h.update(id, true, nil) {
		return nil, fmt.Errorf("unknown charge point %q", id)
	}
	h.c.points[id].log.Info("charge point booted", "vendor", req.ChargePointVendor, "model", req.ChargePointModel,
		"serial", req.ChargePointSerialNumber, "firmware", req.FirmwareVersion)
	return core.NewBootNotificationConfirmation(h.now(), int(HeartbeatInterval.Seconds()), core.RegistrationStatusAccepted), nil
}

// OnHeartbeat answers with the time: chargers set their clocks from it.
func (h handler) OnHeartbeat(id string, _ *core.HeartbeatRequest) (*core.HeartbeatConfirmation, error) {
	h.update(id, false, nil)
	return core.NewHeartbeatConfirmation(h.now()), nil
}

// OnStatusNotification records the configured connector's status.
func (h handler) OnStatusNotification(id string, req *core.StatusNotificationRequest) (*core.StatusNotificationConfirmation, error) {
	h.update(id, false, func(p *point) {
		if req.ConnectorId != p.cfg.ConnectorID {
			return
		}
		if p.st.State != string(req.Status) {
			p.log.Info("charge point status", "state", req.Status, "errorCode", req.ErrorCode, "info", req.Info)
		}
		p.st.State, p.st.ErrorCode = string(req.Status), string(req.ErrorCode)
		if req.Status == core.ChargePointStatusAvailable {
			p.st.Transaction, p.tx = false, 0
		}
	})
	return core.NewStatusNotificationConfirmation(), nil
}

// OnMeterValues records the configured connector's meter values, within
// a transaction or not.
func (h handler) OnMeterValues(id string, req *core.MeterValuesRequest) (*core.MeterValuesConfirmation, error) {
	h.update(id, false, func(p *point) {
		if req.ConnectorId != p.cfg.ConnectorID {
			return
		}
		readMeterValues(req.MeterValue).apply(&p.st)
		if req.TransactionId != nil && *req.TransactionId != 0 {
			p.st.Transaction, p.tx = true, *req.TransactionId
		}
	})
	return core.NewMeterValuesConfirmation(), nil
}

// OnStartTransaction accepts every id tag: plantd does not authorize
// cars, the charger (or its RFID list) does.
func (h handler) OnStartTransaction(id string, req *core.StartTransactionRequest) (*core.StartTransactionConfirmation, error) {
	var tx int
	h.update(id, false, func(p *point) {
		tx = h.c.nextTx
		h.c.nextTx++
		if req.ConnectorId == p.cfg.ConnectorID {
			p.st.Transaction, p.tx = true, tx
			p.st.EnergyWh, p.st.HasEnergy = float64(req.MeterStart), true
			p.log.Info("transaction started", "transaction", tx, "meterStartWh", req.MeterStart)
		}
	})
	return core.NewStartTransactionConfirmation(types.NewIdTagInfo(types.AuthorizationStatusAccepted), tx), nil
}

// OnStopTransaction ends the transaction.
func (h handler) OnStopTransaction(id string, req *core.StopTransactionRequest) (*core.StopTransactionConfirmation, error) {
	h.update(id, false, func(p *point) {
		if req.TransactionId != p.tx {
			return // another connector's, or one before a restart of plantd
		}
		readMeterValues(req.TransactionData).apply(&p.st)
		p.st.Transaction, p.tx = false, 0
		p.st.EnergyWh, p.st.HasEnergy = float64(req.MeterStop), true
		p.log.Info("transaction stopped", "transaction", req.TransactionId, "meterStopWh", req.MeterStop, "reason", req.Reason)
	})
	conf := core.NewStopTransactionConfirmation()
	if req.IdTag != "" {
		conf.IdTagInfo = types.NewIdTagInfo(types.AuthorizationStatusAccepted)
	}
	return conf, nil
}

// OnAuthorize accepts every id tag (see OnStartTransaction).
func (h handler) OnAuthorize(id string, _ *core.AuthorizeRequest) (*core.AuthorizeConfirmation, error) {
	h.update(id, false, nil)
	return core.NewAuthorizationConfirmation(types.NewIdTagInfo(types.AuthorizationStatusAccepted)), nil
}

// OnDataTransfer knows no vendor.
func (h handler) OnDataTransfer(id string, req *core.DataTransferRequest) (*core.DataTransferConfirmation, error) {
	h.update(id, false, nil)
	if p := h.c.points[id]; p != nil {
		p.log.Debug("data transfer refused: unknown vendor", "vendor", req.VendorId, "message", req.MessageId)
	}
	return core.NewDataTransferConfirmation(core.DataTransferStatusUnknownVendorId), nil
}

// OnDiagnosticsStatusNotification logs the status.
func (h handler) OnDiagnosticsStatusNotification(id string, req *firmware.DiagnosticsStatusNotificationRequest) (*firmware.DiagnosticsStatusNotificationConfirmation, error) {
	h.update(id, false, nil)
	if p := h.c.points[id]; p != nil {
		p.log.Info("diagnostics upload status", "status", req.Status)
	}
	return firmware.NewDiagnosticsStatusNotificationConfirmation(), nil
}

// OnFirmwareStatusNotification logs the status.
func (h handler) OnFirmwareStatusNotification(id string, req *firmware.FirmwareStatusNotificationRequest) (*firmware.FirmwareStatusNotificationConfirmation, error) {
	h.update(id, false, nil)
	if p := h.c.points[id]; p != nil {
		p.log.Info("firmware update status", "status", req.Status)
	}
	return firmware.NewFirmwareStatusNotificationConfirmation(), nil
}
