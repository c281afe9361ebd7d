package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"plantd/plant"
	"plantd/plant/kind"
)

// kindPlant is the kind of a plant's balance source: a row of the device
// table that owns the plant's energy balance series.
const kindPlant kind.Kind = "plant"

// device is one row of the device table: a device of the API, or a plant's
// balance source (kind "plant", name = the plant id). Its fields never
// change once it is in the catalog (a new plant, kind or measures
// publishes a new device value sharing chans), so queries read them
// without the lock; chans and bal are guarded by catalog.mu.
type device struct {
	id    int64
	name  string
	plant string
	kind  kind.Kind
	// measures is, for a consumer's sub-meter, the consumer's id
	// (plant.DeviceInfo.Measures; see gridMeter).
	measures string
	// chans are the device's series by channel and input index; bal the
	// balance source's series by field.
	chans map[chKey]*series
	bal   [numBal]*series
}

// gridMeter reports whether d is a meter at its plant's grid connection,
// by plant.DeviceInfo.GridMeter's rule.
func (d *device) gridMeter() bool {
	return plant.DeviceInfo{Kind: d.kind, Measures: d.measures}.GridMeter()
}

// chKey names a channel value of a device: the channel and, for an
// indexed channel, the input (1, 2, ...; 0 for a plain channel).
type chKey struct {
	ch  plant.Channel
	idx int32
}

// series is one row of the series table: a device × channel × input (or a
// balance source × field).
type series struct {
	id   int64
	dev  *device
	name string
	idx  int
	ch   plant.Channel // a device channel; 0 for a balance field or an unknown name
	bf   balField      // a balance field when dev.kind is kindPlant
	q    float64       // resolution of means in rollups
	mm   bool          // min and max are kept in rollups
}

// catalog caches the device and series tables. The writer goroutine adds
// to it; queries read it. Entries added inside a transaction that rolls
// back are removed again (see txAdds).
type catalog struct {
	mu        sync.RWMutex
	byName    map[string]*device // API devices by id
	plantSrc  map[string]*device // balance sources by plant id
	byID      map[int64]*device
	seriesIDs map[int64]*series
}

func newCatalog() *catalog {
	return &catalog{
		byName:    map[string]*device{},
		plantSrc:  map[string]*device{},
		byID:      map[int64]*device{},
		seriesIDs: map[int64]*series{},
	}
}

// quantum is the resolution of a channel's means, mins and maxes in rollups.
func quantum(u plant.Unit) float64 {
	switch u {
	case plant.UnitW, plant.UnitVA, plant.UnitVar, plant.UnitV, plant.UnitPercent,
		plant.UnitCelsius, plant.UnitWm2, plant.UnitMS:
		return 0.01
	case plant.UnitWh, plant.UnitA:
		return 0.001
	case plant.UnitOhm:
		return 1
	}
	return 0.0001 // Hz, power factor
}

// keepMinMax lists the channels whose min and max the rollups keep: the
// total powers (the "min, max, mean for powers"). Per-phase powers,
// voltages, currents and the rest keep their mean only, which keeps a year
// of 5-minute rows of a 20-device plant small.
func keepMinMax(c plant.Channel) bool {
	switch c {
	case plant.ActivePower, plant.ReactivePower, plant.ApparentPower, plant.DCPowerInput:
		return true
	}
	return c.EnergyField()
}

// newSeries fills a series' derived fields from its name.
func newSeries(id int64, d *device, name string, idx int) *series {
	s := &series{id: id, dev: d, name: name, idx: idx, q: 0.01}
	if d.kind == kindPlant {
		s.bf = balFieldByName(name)
		return s
	}
	if c, ok := plant.ChannelByName(name); ok {
		s.ch = c
		s.q = quantum(c.Unit())
		s.mm = keepMinMax(c)
	}
	return s
}

// codecOf implements seriesCodec.
func (c *catalog) codecOf(sid int64) (float64, bool, bool) {
	c.mu.RLock()
	s := c.seriesIDs[sid]
	c.mu.RUnlock()
	if s == nil {
		return 0, false, false
	}
	return s.q, s.mm, true
}

// seriesByID returns a series, nil when unknown.
func (c *catalog) seriesByID(sid int64) *series {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.seriesIDs[sid]
}

// device returns an API device by id.
func (c *catalog) device(name string) *device {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byName[name]
}

// byRowID returns a device or balance source by its row id.
func (c *catalog) byRowID(id int64) *device {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byID[id]
}

// devices returns every device and balance source.
func (c *catalog) devices() []*device {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*device, 0, len(c.byID))
	for _, d := range c.byID {
		out = append(out, d)
	}
	return out
}

// load reads the device and series tables.
func (c *catalog) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT id, name, plant, kind, measures FROM device`)
	if err != nil {
		return fmt.Errorf("load devices: %w", err)
	}
	defer rows.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for rows.Next() {
		d := &device{chans: map[chKey]*series{}}
		if err := rows.Scan(&d.id, &d.name, &d.plant, &d.kind, &d.measures); err != nil {
			return fmt.Errorf("load devices: %w", err)
		}
		c.put(d)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load devices: %w", err)
	}
	srows, err := db.QueryContext(ctx, `SELECT id, device, channel, idx FROM series`)
	if err != nil {
		return fmt.Errorf("load series: %w", err)
	}
	defer srows.Close()
	for srows.Next() {
		var id, dev int64
		var name string
		var idx int
		if err := srows.Scan(&id, &dev, &name, &idx); err != nil {
			return fmt.Errorf("load series: %w", err)
		}
		d := c.byID[dev]
		if d == nil {
			continue
		}
		c.putSeries(newSeries(id, d, name, idx))
	}
	if err := srows.Err(); err != nil {
		return fmt.Errorf("load series: %w", err)
	}
	return nil
}

// put adds a device; the caller holds mu.
func (c *catalog) put(d *device) {
	c.byID[d.id] = d
	if d.kind == kindPlant {
		c.plantSrc[d.name] = d
	} else {
		c.byName[d.name] = d
	}
}

// putSeries adds a series; the caller holds mu.
func (c *catalog) putSeries(s *series) {
	c.seriesIDs[s.id] = s
	switch {
	case s.dev.kind == kindPlant:
		if s.bf >= 0 && s.bf < numBal {
			s.dev.bal[s.bf] = s
		}
	case s.ch != 0:
		s.dev.chans[chKey{s.ch, int32(s.idx)}] = s
	}
}

// txAdds records what a transaction added to the catalog so that a
// rollback can take it out again.
type txAdds struct {
	c       *catalog
	devs    []*device
	series  []*series
	changed []devChange
}

// devChange is a device row whose plant, kind or measures a transaction
// changed.
type devChange struct{ old *device }

// rollback removes the transaction's additions from the catalog.
func (a *txAdds) rollback() {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range a.series {
		delete(c.seriesIDs, s.id)
		if s.dev.kind == kindPlant {
			if s.bf >= 0 && s.bf < numBal && s.dev.bal[s.bf] == s {
				s.dev.bal[s.bf] = nil
			}
		} else if s.ch != 0 {
			delete(s.dev.chans, chKey{s.ch, int32(s.idx)})
		}
	}
	for _, d := range a.devs {
		delete(c.byID, d.id)
		if d.kind == kindPlant {
			delete(c.plantSrc, d.name)
		} else {
			delete(c.byName, d.name)
		}
	}
	for i := len(a.changed) - 1; i >= 0; i-- {
		c.put(a.changed[i].old)
	}
	*a = txAdds{c: c}
}

// commit forgets the additions: they stay.
func (a *txAdds) commit() { *a = txAdds{c: a.c} }

// execer is a transaction or a connection that can write.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ensureDevice returns the device row of an API device, inserting it or
// updating its plant, kind and measures as needed (a kind "" keeps the
// stored one: the device is not discovered yet).
func (a *txAdds) ensureDevice(ctx context.Context, tx execer, name, plantID string, k kind.Kind, measures string) (*device, error) {
	c := a.c
	c.mu.RLock()
	d := c.byName[name]
	c.mu.RUnlock()
	if d != nil {
		if k == "" {
			k = d.kind
		}
		if d.plant == plantID && d.kind == k && d.measures == measures {
			return d, nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE device SET plant = ?, kind = ?, measures = ? WHERE id = ?`, plantID, string(k), measures, d.id); err != nil {
			return nil, fmt.Errorf("update device %s: %w", name, err)
		}
		nd := &device{id: d.id, name: d.name, plant: plantID, kind: k, measures: measures, chans: d.chans}
		c.mu.Lock()
		c.put(nd)
		c.mu.Unlock()
		a.changed = append(a.changed, devChange{old: d})
		return nd, nil
	}
	return a.insertDevice(ctx, tx, name, plantID, k, measures)
}

// ensurePlantSrc returns the balance source of a plant.
func (a *txAdds) ensurePlantSrc(ctx context.Context, tx execer, plantID string) (*device, error) {
	c := a.c
	c.mu.RLock()
	d := c.plantSrc[plantID]
	c.mu.RUnlock()
	if d != nil {
		return d, nil
	}
	return a.insertDevice(ctx, tx, plantID, plantID, kindPlant, "")
}

func (a *txAdds) insertDevice(ctx context.Context, tx execer, name, plantID string, k kind.Kind, measures string) (*device, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO device (name, plant, kind, measures) VALUES (?, ?, ?, ?)`, name, plantID, string(k), measures)
	if err != nil {
		return nil, fmt.Errorf("insert device %s: %w", name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("insert device %s: %w", name, err)
	}
	d := &device{id: id, name: name, plant: plantID, kind: k, measures: measures, chans: map[chKey]*series{}}
	c := a.c
	c.mu.Lock()
	c.put(d)
	c.mu.Unlock()
	a.devs = append(a.devs, d)
	return d, nil
}

// ensureChan returns a device's series of a channel value.
func (a *txAdds) ensureChan(ctx context.Context, tx execer, d *device, k chKey) (*series, error) {
	a.c.mu.RLock()
	s := d.chans[k]
	a.c.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	return a.insertSeries(ctx, tx, d, k.ch.Name(), int(k.idx))
}

// ensureBal returns a balance source's series of a field.
func (a *txAdds) ensureBal(ctx context.Context, tx execer, d *device, f balField) (*series, error) {
	a.c.mu.RLock()
	s := d.bal[f]
	a.c.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	return a.insertSeries(ctx, tx, d, balNames[f], 0)
}

func (a *txAdds) insertSeries(ctx context.Context, tx execer, d *device, name string, idx int) (*series, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO series (device, channel, idx) VALUES (?, ?, ?)`, d.id, name, idx)
	if err != nil {
		return nil, fmt.Errorf("insert series %s/%s/%d: %w", d.name, name, idx, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("insert series %s/%s/%d: %w", d.name, name, idx, err)
	}
	s := newSeries(id, d, name, idx)
	a.c.mu.Lock()
	a.c.putSeries(s)
	a.c.mu.Unlock()
	a.series = append(a.series, s)
	return s, nil
}
