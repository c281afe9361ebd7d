package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

// The charge point twin's smart charging (OCPP 1.6 §3.13 and the
// SetChargingProfile, ClearChargingProfile and GetCompositeSchedule
// messages): the profiles it holds and the limit they make at a wall time.
// Everything here is pure: no clock, no lock, no I/O.

// Smart charging constants.
const (
	// minChargeA is IEC 61851's lowest PWM current: below it the car
	// does not charge.
	minChargeA = 6
	// maxStackLevel bounds the stack levels the twin accepts (its
	// configuration key ChargeProfileMaxStackLevel).
	maxStackLevel = 8
	// maxProfiles bounds the profiles it holds (MaxChargingProfilesInstalled).
	maxProfiles = 16
	// maxPeriods bounds a schedule's periods (ChargingScheduleMaxPeriods).
	maxPeriods = 24
	// sourceDefault names the limit when no profile applies.
	sourceDefault = "default (no profile)"
)

// chargingProfile is an installed profile: the profile as the central
// system sent it, the connector it was set on and the wall time it came.
type chargingProfile struct {
	connector int
	received  time.Time
	p         types.ChargingProfile
	sched     types.ChargingSchedule
}

// name is how the trace names the profile: "TxDefaultProfile#1 level 1".
func (c *chargingProfile) name() string {
	return fmt.Sprintf("%s#%d level %d", c.p.ChargingProfilePurpose, c.p.ChargingProfileId, c.p.StackLevel)
}

// electrics are the charger's figures a schedule's limit is converted by.
type electrics struct {
	maxA     float64 // the charger's max per phase
	voltageV float64 // per phase
	phases   int
}

// toA converts a schedule limit in unit u to amperes per phase.
func (e electrics) toA(limit float64, u types.ChargingRateUnitType) float64 {
	if u == types.ChargingRateUnitWatts {
		return limit / (e.voltageV * float64(e.phases))
	}
	return limit
}

// txView is what the profiles need of the transaction: its id (0: none)
// and its start on the wall clock (Relative schedules start there).
type txView struct {
	id    int
	start time.Time
}

// profileSet is the profiles a charge point holds.
type profileSet struct {
	list []*chargingProfile
}

// errProfile is the reason a SetChargingProfile is answered Rejected.
var errProfile = errors.New("profile rejected")

// set validates a SetChargingProfile for connector and installs it,
// replacing a profile with the same id or the same stack level and
// purpose; an error says why it is Rejected.
func (s *profileSet) set(connector int, in *types.ChargingProfile, tx txView, e electrics, now time.Time) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errProfile, fmt.Sprintf(format, a...))
	}
	if in == nil || in.ChargingSchedule == nil {
		return bad("no charging schedule")
	}
	if connector < 0 || connector > 1 {
		return bad("connector %d: the charge point has connector 1", connector)
	}
	if in.StackLevel < 0 || in.StackLevel > maxStackLevel {
		return bad("stack level %d outside 0..%d", in.StackLevel, maxStackLevel)
	}
	switch in.ChargingProfilePurpose {
	case types.ChargingProfilePurposeChargePointMaxProfile:
		if connector != 0 {
			return bad("a ChargePointMaxProfile goes on connector 0, not %d", connector)
		}
		if in.ChargingProfileKind == types.ChargingProfileKindRelative {
			return bad("a ChargePointMaxProfile cannot be Relative")
		}
	case types.ChargingProfilePurposeTxDefaultProfile:
	case types.ChargingProfilePurposeTxProfile:
		switch {
		case connector != 1:
			return bad("a TxProfile goes on connector 1, not %d", connector)
		case tx.id == 0:
			return bad("a TxProfile needs a running transaction")
		case in.TransactionId != 0 && in.TransactionId != tx.id:
			return bad("transaction %d is not the running one (%d)", in.TransactionId, tx.id)
		}
	default:
		return bad("purpose %q", in.ChargingProfilePurpose)
	}
	if in.TransactionId != 0 && in.ChargingProfilePurpose != types.ChargingProfilePurposeTxProfile {
		return bad("only a TxProfile names a transaction")
	}
	switch in.ChargingProfileKind {
	case types.ChargingProfileKindAbsolute, types.ChargingProfileKindRelative:
	case types.ChargingProfileKindRecurring:
		if in.RecurrencyKind != types.RecurrencyKindDaily && in.RecurrencyKind != types.RecurrencyKindWeekly {
			return bad("a Recurring profile needs recurrencyKind Daily or Weekly")
		}
		if in.ChargingSchedule.StartSchedule == nil {
			return bad("a Recurring profile needs a startSchedule")
		}
	default:
		return bad("kind %q", in.ChargingProfileKind)
	}
	sc := in.ChargingSchedule
	switch sc.ChargingRateUnit {
	case types.ChargingRateUnitAmperes, types.ChargingRateUnitWatts:
	default:
		return bad("charging rate unit %q: want A or W", sc.ChargingRateUnit)
	}
	if sc.Duration != nil && *sc.Duration < 0 {
		return bad("duration %d", *sc.Duration)
	}
	ps := sc.ChargingSchedulePeriod
	if len(ps) == 0 || len(ps) > maxPeriods {
		return bad("%d schedule periods: want 1..%d", len(ps), maxPeriods)
	}
	for i, p := range ps {
		switch {
		case i == 0 && p.StartPeriod != 0:
			return bad("the first period starts at %d s, not 0", p.StartPeriod)
		case i > 0 && p.StartPeriod <= ps[i-1].StartPeriod:
			return bad("period %d starts at %d s, not after period %d", i, p.StartPeriod, i-1)
		case p.Limit < 0 || math.IsNaN(p.Limit) || math.IsInf(p.Limit, 0):
			return bad("period %d: limit %v", i, p.Limit)
		case p.NumberPhases != nil && *p.NumberPhases != e.phases:
			return bad("period %d: %d phases, the charge point uses %d", i, *p.NumberPhases, e.phases)
		}
	}
	c := &chargingProfile{connector: connector, received: now, p: *in, sched: *sc}
	c.sched.ChargingSchedulePeriod = slices.Clone(ps)
	c.p.ChargingSchedule = &c.sched
	kept := make([]*chargingProfile, 0, len(s.list)+1)
	for _, o := range s.list {
		if o.p.ChargingProfileId == in.ChargingProfileId ||
			(o.p.StackLevel == in.StackLevel && o.p.ChargingProfilePurpose == in.ChargingProfilePurpose) {
			continue
		}
		kept = append(kept, o)
	}
	if len(kept) >= maxProfiles {
		return bad("%d profiles installed already", len(kept))
	}
	s.list = append(kept, c)
	return nil
}

// clear removes the profiles a ClearChargingProfile selects: the one with
// Id when given (the other fields are then ignored), else every profile
// matching the given connector, purpose and stack level. It returns how
// many it removed.
func (s *profileSet) clear(r *smartcharging.ClearChargingProfileRequest) int {
	match := func(c *chargingProfile) bool {
		if r.Id != nil {
			return c.p.ChargingProfileId == *r.Id
		}
		return (r.ConnectorId == nil || *r.ConnectorId == c.connector) &&
			(r.ChargingProfilePurpose == "" || r.ChargingProfilePurpose == c.p.ChargingProfilePurpose) &&
			(r.StackLevel == nil || *r.StackLevel == c.p.StackLevel)
	}
	return s.remove(match)
}

// remove drops the profiles match selects and returns how many.
func (s *profileSet) remove(match func(*chargingProfile) bool) int {
	n := len(s.list)
	s.list = slices.DeleteFunc(s.list, match)
	return n - len(s.list)
}

// scheduleStart is when the profile's schedule (its current recurrence)
// starts for an evaluation at t; false when it has not started yet.
// A Relative schedule starts with the transaction, or at t when none runs
// (its first period shows what a transaction starting now would get).
func (c *chargingProfile) scheduleStart(t time.Time, tx txView) (time.Time, bool) {
	switch c.p.ChargingProfileKind {
	case types.ChargingProfileKindRelative:
		if tx.id == 0 {
			return t, true
		}
		return tx.start, !t.Before(tx.start)
	case types.ChargingProfileKindRecurring:
		base := c.sched.StartSchedule.Time
		if t.Before(base) {
			return base, false
		}
		every := 24 * time.Hour
		if c.p.RecurrencyKind == types.RecurrencyKindWeekly {
			every = 7 * 24 * time.Hour
		}
		return base.Add(t.Sub(base) / every * every), true
	default: // Absolute: the start given, else the profile's arrival
		start := c.received
		if c.sched.StartSchedule != nil {
			start = c.sched.StartSchedule.Time
		}
		return start, !t.Before(start)
	}
}

// at returns the profile's limit in its unit at t and whether it applies:
// validFrom ≤ t < validTo and t inside the schedule's duration.
func (c *chargingProfile) at(t time.Time, tx txView) (float64, bool) {
	if c.p.ValidFrom != nil && t.Before(c.p.ValidFrom.Time) {
		return 0, false
	}
	if c.p.ValidTo != nil && !t.Before(c.p.ValidTo.Time) {
		return 0, false
	}
	start, ok := c.scheduleStart(t, tx)
	if !ok {
		return 0, false
	}
	off := t.Sub(start)
	if d := c.sched.Duration; d != nil && off >= time.Duration(*d)*time.Second {
		return 0, false
	}
	limit := c.sched.ChargingSchedulePeriod[0].Limit
	for _, p := range c.sched.ChargingSchedulePeriod[1:] {
		if off < time.Duration(p.StartPeriod)*time.Second {
			break
		}
		limit = p.Limit
	}
	return limit, true
}

// next returns the first instant after t at which the profile's
// contribution may change (a validity bound, a period start, the end of
// the duration, the next recurrence); zero when none.
func (c *chargingProfile) next(t time.Time, tx txView) time.Time {
	var best time.Time
	consider := func(x time.Time) {
		if x.After(t) && (best.IsZero() || x.Before(best)) {
			best = x
		}
	}
	if c.p.ValidFrom != nil {
		consider(c.p.ValidFrom.Time)
	}
	if c.p.ValidTo != nil {
		consider(c.p.ValidTo.Time)
	}
	if c.p.ChargingProfileKind == types.ChargingProfileKindRelative && tx.id == 0 {
		return best // no transaction: its schedule does not run
	}
	start, _ := c.scheduleStart(t, tx)
	for _, p := range c.sched.ChargingSchedulePeriod {
		consider(start.Add(time.Duration(p.StartPeriod) * time.Second))
	}
	if d := c.sched.Duration; d != nil {
		consider(start.Add(time.Duration(*d) * time.Second))
	}
	if c.p.ChargingProfileKind == types.ChargingProfileKindRecurring {
		every := 24 * time.Hour
		if c.p.RecurrencyKind == types.RecurrencyKindWeekly {
			every = 7 * 24 * time.Hour
		}
		if !t.Before(start) {
			consider(start.Add(every))
		} else {
			consider(start)
		}
	}
	return best
}

// limit is the effective limit at one instant.
type limit struct {
	A      float64 // per phase
	Source string  // the profile that sets it, or sourceDefault
}

// effective returns the charge point's limit at t for connector 1: the
// TxProfile of the running transaction with the highest stack level that
// applies, else the TxDefaultProfile (connector 0 or 1; at equal level
// connector 1's) with the highest level that applies, else the charger's
// max; then the lower of that and the ChargePointMaxProfile that applies
// with the highest level; never above the charger's max.
func (s *profileSet) effective(t time.Time, tx txView, e electrics) limit {
	best := func(purpose types.ChargingProfilePurposeType) (*chargingProfile, float64) {
		var win *chargingProfile
		var winA float64
		for _, c := range s.list {
			if c.p.ChargingProfilePurpose != purpose {
				continue
			}
			if purpose == types.ChargingProfilePurposeTxProfile && (tx.id == 0 || (c.p.TransactionId != 0 && c.p.TransactionId != tx.id)) {
				continue
			}
			v, ok := c.at(t, tx)
			if !ok {
				continue
			}
			if win == nil || c.p.StackLevel > win.p.StackLevel ||
				(c.p.StackLevel == win.p.StackLevel && c.connector > win.connector) {
				win, winA = c, e.toA(v, c.sched.ChargingRateUnit)
			}
		}
		return win, winA
	}
	out := limit{A: e.maxA, Source: sourceDefault}
	c, a := best(types.ChargingProfilePurposeTxProfile)
	if c == nil {
		c, a = best(types.ChargingProfilePurposeTxDefaultProfile)
	}
	if c != nil {
		out = limit{A: a, Source: c.name()}
	}
	if m, ma := best(types.ChargingProfilePurposeChargePointMaxProfile); m != nil && (c == nil || ma < out.A) {
		out = limit{A: ma, Source: m.name()}
	}
	if out.A > e.maxA {
		out = limit{A: e.maxA, Source: out.Source + fmt.Sprintf(", capped at the charger's %g A", e.maxA)}
	}
	return out
}

// next returns the first instant after t at which the effective limit may
// change; zero when no profile has a boundary ahead.
func (s *profileSet) next(t time.Time, tx txView) time.Time {
	var best time.Time
	for _, c := range s.list {
		if x := c.next(t, tx); !x.IsZero() && (best.IsZero() || x.Before(best)) {
			best = x
		}
	}
	return best
}

// composite returns the composite schedule from t for d: periods (offsets
// in whole seconds) with the effective limit in unit u, merged where the
// limit does not change.
func (s *profileSet) composite(t time.Time, d time.Duration, tx txView, e electrics, u types.ChargingRateUnitType) []types.ChargingSchedulePeriod {
	end := t.Add(d)
	var out []types.ChargingSchedulePeriod
	for at := t; at.Before(end) || at.Equal(t); {
		a := s.effective(at, tx, e).A
		v := a
		if u == types.ChargingRateUnitWatts {
			v = a * e.voltageV * float64(e.phases)
		}
		v = math.Round(v*10) / 10
		if len(out) == 0 || out[len(out)-1].Limit != v {
			out = append(out, types.ChargingSchedulePeriod{StartPeriod: int(at.Sub(t) / time.Second), Limit: v})
		}
		nx := s.next(at, tx)
		if nx.IsZero() {
			break
		}
		at = nx
	}
	// Two changes within one second share the offset: keep the later.
	merged := out[:0]
	for _, p := range out {
		if n := len(merged); n > 0 && merged[n-1].StartPeriod == p.StartPeriod {
			merged[n-1] = p
			continue
		}
		merged = append(merged, p)
	}
	return merged
}
