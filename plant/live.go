package plant

import (
	"cmp"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"plantd/plant/kind"
)

// historyLen is the number of recent polls successRate looks at.
const historyLen = 64

// Live is the live state cache: the last values, health and communication
// state of every configured device, fed by poller Samples. Apply is safe
// for concurrent use with itself and with every read method.
type Live struct {
	now func() time.Time

	// plants and plantIx are built by NewLive and only read after.
	plants  []Plant
	plantIx map[string]int
	// idx is the device index: replaced whole by SetDevices (under setMu),
	// never modified, so that readers need no lock.
	idx   atomic.Pointer[index]
	setMu sync.Mutex

	dropped atomic.Uint64
	// changes counts the updates of the state (Apply, SetDevices); see
	// Changes.
	changes atomic.Uint64
	log     *slog.Logger // plausibility verdicts; nil: none
}

// Changes returns a number that grows with every update of the live state
// (a poll applied, a device list replaced). A reader that takes it before
// reading sees in its read every update the number counts, so an answer
// built after Changes returned n stays right while Changes returns n,
// except for what depends on the clock alone (the balance's time, a
// device turning stale).
func (l *Live) Changes() uint64 { return l.changes.Load() }

// index finds the device entries.
type index struct {
	devs    []*deviceState // config order
	byID    map[string]*deviceState
	byPlant map[string][]*deviceState
}

// buildIndex indexes devs (of a duplicate id the first wins), taking the
// entries of old whose DeviceInfo is the same, with their state.
func buildIndex(old *index, devs []DeviceInfo) *index {
	x := &index{byID: make(map[string]*deviceState, len(devs)), byPlant: map[string][]*deviceState{}}
	for _, di := range devs {
		if _, dup := x.byID[di.ID]; dup {
			continue
		}
		var d *deviceState
		if old != nil {
			if o := old.byID[di.ID]; o != nil && o.conf.same(di) {
				d = o
			}
		}
		if d == nil {
			d = &deviceState{info: di, conf: di}
		}
		x.devs = append(x.devs, d)
		x.byID[di.ID] = d
		x.byPlant[di.PlantID] = append(x.byPlant[di.PlantID], d)
	}
	return x
}

// same reports whether two configured devices are the same.
func (d DeviceInfo) same(o DeviceInfo) bool {
	return d.ID == o.ID && d.PlantID == o.PlantID && d.Name == o.Name && d.Kind == o.Kind && d.DeactivatedAt.Equal(o.DeactivatedAt)
}

// deviceState is one device's entry. mu guards everything but info.
type deviceState struct {
	// info is fixed when the entry is made, except info.Kind: a device
	// configured without a kind takes the kind discovery found, set under
	// mu. conf is info as configured.
	info DeviceInfo
	conf DeviceInfo

	mu        sync.Mutex
	disc      Discovery  // the device layer's description, nil until known
	plate     *Nameplate // what discovery learned, in the API's words
	state     CommState
	restarted bool      // the poller started the device anew (Restarted)
	lastPoll  time.Time // last sample of any outcome
	lastOK    time.Time // last successful sample: lastUpdateUtc, lastContactUtc
	lastErr   error
	lastErrAt time.Time
	hist      uint64 // bit 0 = the last poll; 1 = success
	polls     int    // polls in hist, at most historyLen
	vals      values
	status    DeviceStatus
	// Plausibility: the bounds of the device (computed from boundsOf, its
	// nameplate), the channels the last poll dropped, and the count of
	// dropped values per channel.
	bounds      *bounds
	boundsOf    *Nameplate
	badChans    chanMask
	implausible *[numChannels]uint64 // nil until a value was dropped
	// consumer is the last reading of a consumer device (hasConsumer).
	consumer    ConsumerReading
	hasConsumer bool
	// okPolls counts the successful polls applied; polled holds the
	// registers of the control models (controlModels) as the last of
	// them read them (PolledRegs).
	okPolls uint64
	polled  []polledModel
}

// polledModel is one control model's registers as a poll read them.
type polledModel struct {
	id   uint16
	regs []uint16
}

// controlModels are the poll models that carry the controls grid control
// holds (123 the classic limit, connection and power factor; 704 the DER
// limit and power factors): Live keeps a copy of their registers.
var controlModels = [...]uint16{123, 704}

// NewLive builds the cache for the given plants and devices (validated by
// the config: ids unique, plant ids known; of a duplicate id the first
// wins). now is the clock of balance times (nil = time.Now).
func NewLive(plants []Plant, devs []DeviceInfo, now func() time.Time) *Live {
	if now == nil {
		now = time.Now
	}
	l := &Live{
		now:     now,
		plants:  slices.Clone(plants),
		plantIx: make(map[string]int, len(plants)),
	}
	for i, p := range l.plants {
		if _, dup := l.plantIx[p.ID]; !dup {
			l.plantIx[p.ID] = i
		}
	}
	l.idx.Store(buildIndex(nil, devs))
	return l
}

// SetDevices replaces the device list (a config reload) while the cache is
// in use. A device whose DeviceInfo is unchanged keeps its state; one that
// is new or changed starts empty; one no longer listed is gone from every
// read, and its later samples are dropped.
func (l *Live) SetDevices(devs []DeviceInfo) {
	l.setMu.Lock()
	defer l.setMu.Unlock()
	l.idx.Store(buildIndex(l.idx.Load(), devs))
	l.changes.Add(1)
}

// Apply records one poll of one device: on success its channel values,
// operating state and events replace the previous ones; on failure the
// previous values stay (the sample's State says whether they are still
// fresh) and the error is kept. A sample for a device the cache does not
// know is dropped and counted (Dropped). A sample without State is taken as
// online when it succeeded and offline when it failed. Apply keeps nothing
// of the sample's readings and registers, which the poller reuses.
//
// Apply returns what changed (nil, the common case, when nothing did):
// an [Event] when the device's communication state changed (online,
// stale, offline; the first poll of a device is a change from
// StateUnknown), or when the device was online before and after the poll
// and its health changed. It is plantd's one detector of these
// transitions.
func (l *Live) Apply(s Sample) []Event {
	d := l.idx.Load().byID[s.Device]
	if d == nil {
		l.dropped.Add(1)
		return nil
	}
	t := s.Time
	if t.IsZero() {
		t = l.now()
	}
	state := s.State
	if state == StateUnknown {
		state = StateOnline
		if s.Err != nil {
			state = StateOffline
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Counted while d is locked, after the update (deferred calls run last
	// in, first out): a reader that saw the new count sees the update.
	defer l.changes.Add(1)
	prev, prevHealth := d.state, HealthNotAvailable
	if d.restarted {
		prev, d.restarted = StateUnknown, false
	} else {
		prevHealth, _ = health(d.info.Active(), d.state, d.status)
	}
	l.update(d, s, t, state)
	return d.events(s, t, prev, prevHealth)
}

// update applies a sample to d (locked).
func (l *Live) update(d *deviceState, s Sample, t time.Time, state CommState) {
	d.hist <<= 1
	if s.Err == nil {
		d.hist |= 1
	}
	if d.polls < historyLen {
		d.polls++
	}
	d.state = state
	d.lastPoll = t
	if s.Nameplate != nil {
		d.plate, d.disc = s.Nameplate, s.Discovered
		if d.info.Kind == "" {
			if k, err := kind.Parse(string(s.Nameplate.Kind)); err == nil {
				d.info.Kind = k
			}
		}
	}
	if s.Err != nil {
		d.lastErr, d.lastErrAt = s.Err, t
		return
	}
	d.lastOK = t
	d.okPolls++
	switch {
	case s.Consumer != nil:
		d.consumer = *s.Consumer
		d.hasConsumer = true
		d.vals.putConsumer(s.Consumer)
	default:
		d.vals.putReadings(s.Readings)
		d.keepControlModels(s.Registers)
	}
	if d.bounds == nil || d.boundsOf != d.plate {
		d.bounds, d.boundsOf = boundsFor(d.plate), d.plate
	}
	l.noteImplausible(d, d.vals.check(d.bounds))
	d.status = s.Status
}

// keepControlModels copies the registers of the control models among
// models (the poller's buffers) into d's own, reused from poll to poll; a
// control model the poll no longer read is forgotten. d is locked.
func (d *deviceState) keepControlModels(models []ModelRegisters) {
	n := 0
	for _, m := range models {
		if !slices.Contains(controlModels[:], m.Model) {
			continue
		}
		if n == len(d.polled) {
			d.polled = append(d.polled, polledModel{})
		}
		pm := &d.polled[n]
		pm.id, pm.regs = m.Model, append(pm.regs[:0], m.Regs...)
		n++
	}
	d.polled = d.polled[:n]
}

// PolledRegs appends to dst the registers (header included) of a control
// model (123 or 704) as the device's latest successful poll read them,
// and returns the number of that poll: the device's successful polls
// applied, from 1 (0: none yet). regs is nil when that poll did not read
// the model (model 0 asks for the number only). Grid control compares the
// controls it holds with them, without a Modbus request of its own; by
// the number it tells a poll that began after its own write (polls of a
// device never overlap, so the second one applied after the write began
// after it).
func (l *Live) PolledRegs(id string, model uint16, dst []uint16) (regs []uint16, poll uint64) {
	d := l.idx.Load().byID[id]
	if d == nil {
		return nil, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.polled {
		if d.polled[i].id == model {
			return append(dst[:0], d.polled[i].regs...), d.okPolls
		}
	}
	return nil, d.okPolls
}

// events returns the changes of d (locked, s applied) since its state prev
// and health prevHealth: a change of the communication state, or of the
// health of a device online before and after.
func (d *deviceState) events(s Sample, t time.Time, prev CommState, prevHealth Health) []Event {
	h, reason := health(d.info.Active(), d.state, d.status)
	if prev == d.state && (d.state != StateOnline || h == prevHealth) {
		return nil
	}
	e := Event{Time: t, PlantID: d.info.PlantID, DeviceID: d.info.ID, State: d.state, Prev: prev,
		Health: h, HealthReason: reason, Err: s.Err}
	if s.Nameplate != nil {
		e.Nameplate = d.plate
	}
	return []Event{e}
}

// Restarted notes that the poller started the given devices anew (a
// config reload changed how they are polled: address, unit, interval,
// ...), so that it discovers them again: the next sample of each is a
// change of state from StateUnknown, as a device's first sample is, even
// when the state is the same. What the API shows of them stays until
// then. Unknown ids are ignored.
func (l *Live) Restarted(ids ...string) {
	x := l.idx.Load()
	for _, id := range ids {
		if d := x.byID[id]; d != nil {
			d.mu.Lock()
			d.restarted = true
			d.mu.Unlock()
		}
	}
}

// kind returns the device's kind (from the config, else from discovery;
// "" until either is known).
func (d *deviceState) kind() kind.Kind {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.info.Kind
}

// Dropped returns how many samples named a device the cache does not know.
func (l *Live) Dropped() uint64 { return l.dropped.Load() }

// Plants returns the plants in config order.
func (l *Live) Plants() []Plant { return slices.Clone(l.plants) }

// Plant returns the plant with the given id.
func (l *Live) Plant(id string) (Plant, bool) {
	i, ok := l.plantIx[id]
	if !ok {
		return Plant{}, false
	}
	return l.plants[i], true
}

// Communication is a device's communication status (DESIGN §4
// communication).
type Communication struct {
	Status CommStatus
	// State is the poller's communication state after the last poll.
	State CommState
	// LastContact is the time of the last successful poll (zero: never).
	LastContact time.Time
	// LastPoll is the time of the last poll of any outcome (zero: never).
	LastPoll time.Time
	// LastError is the error of the last failed poll, kept after the
	// device recovers (nil: none yet); LastErrorTime is when it happened.
	LastError     error
	LastErrorTime time.Time
	// SuccessRate is the share of successful polls among the last Polls
	// (at most 64) polls, 0..1; 0 when Polls is 0.
	SuccessRate float64
	Polls       int
}

// DeviceLive is the live view of one device.
type DeviceLive struct {
	Info DeviceInfo
	// Discovered is the device layer's description of the device (for a
	// SunSpec device its *sunspec.Device: models, platform, capabilities,
	// ratings), for grid control, which writes the device's models; nil
	// until the device was discovered. plant never looks into it.
	Discovered Discovery
	// Nameplate is what discovery learned in the words the API shows; nil
	// until the device was discovered.
	Nameplate *Nameplate
	// LastUpdate is the time of the values (the last successful poll; the
	// API's lastUpdateUtc); zero when there are none.
	LastUpdate time.Time
	// Readings are the device's channel values in API order (channel, then
	// input index). A value the device does not implement is absent.
	Readings []Reading
	Health   Health
	// HealthReason says what decided Health ("St FAULT", "Evt1
	// GROUND_FAULT", "offline", "stale"); "" for Ok.
	HealthReason string
	Comm         Communication
	// Consumer is a consumer device's last reading (switching state,
	// SG-Ready state, whether its consumption is estimated); nil for other
	// devices and before the first successful poll.
	Consumer *ConsumerReading
}

// Value returns the value of a plain channel (for an indexed channel, the
// value of input 1).
func (d *DeviceLive) Value(c Channel) (float64, bool) {
	for _, r := range d.Readings {
		if r.Channel == c && r.Index <= 1 {
			return r.Value, true
		}
	}
	return 0, false
}

// Inputs returns the readings of an indexed channel, by input.
func (d *DeviceLive) Inputs(c Channel) []Reading {
	var out []Reading
	for _, r := range d.Readings {
		if r.Channel == c {
			out = append(out, r)
		}
	}
	return out
}

// Device returns the live view of one device.
func (l *Live) Device(id string) (DeviceLive, bool) {
	d := l.idx.Load().byID[id]
	if d == nil {
		return DeviceLive{}, false
	}
	return l.snapshot(d, true), true
}

// Value returns a device's latest value of a plain channel and the time
// of its last successful poll (ok false: none), without copying its
// other readings.
func (l *Live) Value(id string, c Channel) (v float64, at time.Time, ok bool) {
	d := l.idx.Load().byID[id]
	if d == nil || c <= 0 || c >= numChannels || c.Indexed() {
		return 0, time.Time{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lastOK.IsZero() || d.vals.setBy[c] == 0 {
		return 0, time.Time{}, false
	}
	return d.vals.scalar[c], d.lastOK, true
}

// Devices returns the live views of a plant's devices in config order.
func (l *Live) Devices(plantID string) ([]DeviceLive, error) {
	if _, ok := l.plantIx[plantID]; !ok {
		return nil, fmt.Errorf("live devices of plant %q: %w", plantID, ErrUnknownPlant)
	}
	return l.appendDevices(nil, plantID, true), nil
}

// DeviceStatuses is Devices without the readings: identity, health and
// communication only, for device lists that must be cheap.
func (l *Live) DeviceStatuses(plantID string) ([]DeviceLive, error) {
	return l.AppendDeviceStatuses(nil, plantID)
}

// AppendDeviceStatuses is DeviceStatuses appending to dst, for a caller
// that asks every second and keeps its slice (pass dst[:0]): the grid-control
// cycle reads every device each second, and a new slice per cycle was
// 1.6 MB/s of garbage at 5,000 devices.
func (l *Live) AppendDeviceStatuses(dst []DeviceLive, plantID string) ([]DeviceLive, error) {
	if _, ok := l.plantIx[plantID]; !ok {
		return dst, fmt.Errorf("live devices of plant %q: %w", plantID, ErrUnknownPlant)
	}
	return l.appendDevices(dst, plantID, false), nil
}

func (l *Live) appendDevices(dst []DeviceLive, plantID string, readings bool) []DeviceLive {
	ds := l.idx.Load().byPlant[plantID]
	if dst == nil {
		dst = make([]DeviceLive, 0, len(ds))
	}
	for _, d := range ds {
		dst = append(dst, l.snapshot(d, readings))
	}
	return dst
}

// snapshot copies a device's state out under its lock; the readings only
// when asked.
func (l *Live) snapshot(d *deviceState, readings bool) DeviceLive {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.info.Kind == kind.Gateway {
		// plantd itself: reachable and working whenever anyone asks.
		now := l.now()
		dl := DeviceLive{Info: d.info, LastUpdate: now, Health: HealthOk,
			Comm: Communication{Status: CommOk, State: StateOnline, LastContact: now, LastPoll: now, SuccessRate: 1, Polls: 1}}
		if !d.info.Active() {
			dl.Health, dl.HealthReason = HealthOff, "deactivated"
		}
		return dl
	}
	dl := DeviceLive{
		Info:       d.info,
		Discovered: d.disc,
		Nameplate:  d.plate,
		LastUpdate: d.lastOK,
	}
	dl.Health, dl.HealthReason = health(d.info.Active(), d.state, d.status)
	rate := 0.0
	if d.polls > 0 {
		mask := uint64(1)<<d.polls - 1
		if d.polls == historyLen {
			mask = ^uint64(0)
		}
		rate = float64(bits.OnesCount64(d.hist&mask)) / float64(d.polls)
	}
	dl.Comm = Communication{
		Status:        commStatus(d.state, d.lastErr, rate, d.polls),
		State:         d.state,
		LastContact:   d.lastOK,
		LastPoll:      d.lastPoll,
		LastError:     d.lastErr,
		LastErrorTime: d.lastErrAt,
		SuccessRate:   rate,
		Polls:         d.polls,
	}
	if d.hasConsumer {
		c := d.consumer
		dl.Consumer = &c
	}
	if d.lastOK.IsZero() || !readings {
		return dl
	}
	dl.Readings = d.readings()
	return dl
}

// Readings returns a device's info and a new slice of its latest readings
// (nil before its first good poll), without the rest of its live view: the
// poller's sink stores them after every sample.
func (l *Live) Readings(id string) (DeviceInfo, []Reading, bool) {
	d := l.idx.Load().byID[id]
	if d == nil {
		return DeviceInfo{}, nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lastOK.IsZero() {
		return d.info, nil, true
	}
	return d.info, d.readings(), true
}

// readings returns a new slice of the device's latest readings in channel
// order. The caller holds d.mu.
func (d *deviceState) readings() []Reading {
	n := len(d.vals.inputs)
	for c := Channel(1); c < numChannels; c++ {
		if d.vals.setBy[c] != 0 && !c.Indexed() {
			n++
		}
	}
	rs := make([]Reading, 0, n)
	for c := Channel(1); c < numChannels; c++ {
		if d.vals.setBy[c] != 0 && !c.Indexed() {
			rs = append(rs, Reading{Channel: c, Value: d.vals.scalar[c]})
		}
	}
	rs = append(rs, d.vals.inputs...)
	slices.SortStableFunc(rs, func(a, b Reading) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Index, b.Index))
	})
	return rs
}
