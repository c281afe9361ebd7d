package tariffs

import (
	"slices"
	"time"

	"plantd/store"
	"plantd/tariffs/tariffconfig"
)

// Slot is the price of a time slot as the owner pays it (Import) and is
// paid (FeedIn), EUR/kWh, after surcharge, VAT and offset.
type Slot struct {
	Start  time.Time `json:"startUtc"`
	End    time.Time `json:"endUtc"`
	Import float64   `json:"importEurPerKWh"`
	FeedIn float64   `json:"feedInEurPerKWh"`
	// Source is the market's source ("entsoe:10Y1001A1001A82H") when a
	// market price is in the slot, else "fixed".
	Source string `json:"source"`
	// Stale: the slot's market price is one of the last good ones, kept
	// while the provider fails.
	Stale bool `json:"stale,omitempty"`
	// MarketEURPerMWh is the market price in the slot, as published
	// (absent without one).
	MarketEURPerMWh *float64 `json:"marketEurPerMWh,omitempty"`
}

// SourceFixed is a slot's Source without a market price.
const SourceFixed = "fixed"

// Slots returns the slots that cover [from, to), in time order: at the
// market's resolution where a market price is used, cut at the
// time-of-use windows' edges and at every full hour where the fixed
// prices are. A slot whose price is unknown (a market price missing and
// no fixed fallback) is left out.
func (s *Service) Slots(from, to time.Time) []Slot {
	s.mu.Lock()
	stale := s.status.Stale
	i, _ := slices.BinarySearchFunc(s.prices, from, func(p store.Price, t time.Time) int {
		if !p.End.After(t) {
			return -1
		}
		return 1
	})
	var market []store.Price
	for ; i < len(s.prices) && s.prices[i].Start.Before(to); i++ {
		market = append(market, s.prices[i])
	}
	s.mu.Unlock()

	im, fi := s.cfg.Import, s.cfg.FeedIn
	var out []Slot
	for at := from; at.Before(to); {
		var mp *store.Price
		for len(market) > 0 && !market[0].End.After(at) {
			market = market[1:]
		}
		if len(market) > 0 && !market[0].Start.After(at) {
			mp = &market[0]
		}
		end := to
		if mp != nil {
			end = minTime(end, mp.End)
		} else if len(market) > 0 {
			end = minTime(end, market[0].Start)
		}
		if !im.Market || !fi.Market || mp == nil {
			end = minTime(end, s.nextEdge(at))
		}
		slot := Slot{Start: at.UTC(), End: end.UTC(), Source: SourceFixed}
		known := true
		if mp != nil && (im.Market || fi.Market) {
			v := mp.EURPerMWh
			slot.Source, slot.Stale, slot.MarketEURPerMWh = s.source, stale, &v
		}
		switch {
		case im.Market && mp != nil:
			slot.Import = (mp.EURPerMWh/1000 + im.Surcharge) * (1 + im.VAT/100)
		case len(s.windows) > 0:
			slot.Import = priceAt(s.windows, at.In(s.deps.Location))
		default:
			known = false
		}
		switch {
		case fi.Market && mp != nil:
			slot.FeedIn = mp.EURPerMWh/1000 + fi.Offset
		case fi.Fixed != nil:
			slot.FeedIn = *fi.Fixed
		default:
			known = false
		}
		if known {
			out = append(out, slot)
		}
		at = end
	}
	return out
}

// Current returns the slot of the instant now (false: its price is
// unknown).
func (s *Service) Current() (Slot, bool) {
	now := s.deps.Now()
	slots := s.Slots(now, now.Add(time.Nanosecond))
	if len(slots) == 0 {
		return Slot{}, false
	}
	return slots[0], true
}

// priceAt is the price of the last window that covers the local time l.
func priceAt(windows []tariffconfig.Window, l time.Time) float64 {
	var price float64
	m := l.Hour()*60 + l.Minute()
	wd := l.Weekday()
	for _, w := range windows {
		if covered(w, wd, m) {
			price = w.Price
		}
	}
	return price
}

// covered reports whether w covers minute m of weekday wd: a window that
// wraps midnight covers the night after each of its days.
func covered(w tariffconfig.Window, wd time.Weekday, m int) bool {
	if w.From < w.To {
		return w.Days[wd] && m >= w.From && m < w.To
	}
	return w.Days[wd] && m >= w.From || w.Days[(wd+6)%7] && m < w.To
}

// nextEdge is the first instant after at where a fixed price may change:
// the next full hour or a window's edge.
func (s *Service) nextEdge(at time.Time) time.Time {
	next := at.Truncate(time.Hour).Add(time.Hour)
	l := at.In(s.deps.Location)
	for d := range 2 {
		day := time.Date(l.Year(), l.Month(), l.Day()+d, 0, 0, 0, 0, s.deps.Location)
		for _, w := range s.windows {
			for _, m := range []int{w.From, w.To} {
				t := time.Date(day.Year(), day.Month(), day.Day(), m/60, m%60, 0, 0, s.deps.Location)
				if t.After(at) && t.Before(next) {
					next = t
				}
			}
		}
	}
	return next
}
