package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

// ControlDefault is a device's control model as plantd first read it,
// before grid control wrote to it: the default the fallback restores.
type ControlDefault struct {
	DeviceID string
	Model    uint16
	Addr     uint16
	Read     time.Time
	Regs     []uint16
}

// ControlDefaults returns the stored defaults of a device, by model.
func (s *Store) ControlDefaults(ctx context.Context, deviceID string) (map[uint16]ControlDefault, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	rows, err := db.QueryContext(ctx, `SELECT model, addr, read, regs FROM control_default WHERE device = ?`, deviceID)
	if err != nil {
		return nil, fmt.Errorf("store: control defaults of %s: %w", deviceID, classify(err))
	}
	defer rows.Close()
	out := map[uint16]ControlDefault{}
	for rows.Next() {
		d := ControlDefault{DeviceID: deviceID}
		var read int64
		var blob []byte
		if err := rows.Scan(&d.Model, &d.Addr, &read, &blob); err != nil {
			return nil, fmt.Errorf("store: control defaults of %s: %w", deviceID, err)
		}
		if len(blob)%2 != 0 {
			return nil, fmt.Errorf("store: control default %s model %d: %d bytes", deviceID, d.Model, len(blob))
		}
		d.Read = time.UnixMilli(read).UTC()
		d.Regs = make([]uint16, len(blob)/2)
		for i := range d.Regs {
			d.Regs[i] = binary.BigEndian.Uint16(blob[2*i:])
		}
		out[d.Model] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: control defaults of %s: %w", deviceID, err)
	}
	return out, nil
}

// PutControlDefault stores a device's default of one model unless one is
// stored already: the first contact wins, so that a value plantd wrote is
// never taken for the device's own.
func (s *Store) PutControlDefault(ctx context.Context, d ControlDefault) error {
	if d.DeviceID == "" || len(d.Regs) == 0 {
		return fmt.Errorf("%w: control default needs a device and registers", ErrBadQuery)
	}
	blob := make([]byte, 2*len(d.Regs))
	for i, r := range d.Regs {
		binary.BigEndian.PutUint16(blob[2*i:], r)
	}
	if d.Read.IsZero() {
		d.Read = s.cfg.Now()
	}
	return s.exec(ctx, fmt.Sprintf("put control default %s model %d", d.DeviceID, d.Model),
		`INSERT OR IGNORE INTO control_default (device, model, addr, read, regs) VALUES (?, ?, ?, ?, ?)`,
		d.DeviceID, d.Model, d.Addr, d.Read.UnixMilli(), blob)
}

// SetControlOwned records that plantd owns (wrote and has not restored) a
// control of a device, or no longer does.
func (s *Store) SetControlOwned(ctx context.Context, deviceID, control string, owned bool) error {
	if owned {
		return s.exec(ctx, "own control "+control+" of "+deviceID,
			`INSERT OR IGNORE INTO control_owner (device, control) VALUES (?, ?)`, deviceID, control)
	}
	return s.exec(ctx, "release control "+control+" of "+deviceID,
		`DELETE FROM control_owner WHERE device = ? AND control = ?`, deviceID, control)
}

// OwnedControls returns, per device, the controls plantd owns.
func (s *Store) OwnedControls(ctx context.Context) (map[string][]string, error) {
	return s.byDevice(ctx, "owned controls", `SELECT device, control FROM control_owner ORDER BY device, control`)
}

// byDevice runs a query of (device, name) rows and groups the names by
// device.
func (s *Store) byDevice(ctx context.Context, what, query string) (map[string][]string, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, classify(err))
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var dev, name string
		if err := rows.Scan(&dev, &name); err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, classify(err))
		}
		out[dev] = append(out[dev], name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, classify(err))
	}
	return out, nil
}

// SetDeviceQuirk records a behaviour grid control learned of a device
// (first sighting kept), or forgets it.
func (s *Store) SetDeviceQuirk(ctx context.Context, deviceID, quirk string, on bool) error {
	if on {
		return s.exec(ctx, "record quirk "+quirk+" of "+deviceID,
			`INSERT OR IGNORE INTO device_quirk (device, quirk, since) VALUES (?, ?, ?)`, deviceID, quirk, s.cfg.Now().UnixMilli())
	}
	return s.exec(ctx, "forget quirk "+quirk+" of "+deviceID,
		`DELETE FROM device_quirk WHERE device = ? AND quirk = ?`, deviceID, quirk)
}

// DeviceQuirks returns, per device, the quirks recorded.
func (s *Store) DeviceQuirks(ctx context.Context) (map[string][]string, error) {
	return s.byDevice(ctx, "device quirks", `SELECT device, quirk FROM device_quirk ORDER BY device, quirk`)
}
