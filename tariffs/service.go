package tariffs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"plantd/internal/backoff"
	"plantd/store"
	"plantd/tariffs/tariffconfig"
)

// Store keeps the fetched prices (a *store.Store).
type Store interface {
	PutPrices(ctx context.Context, prices []store.Price) error
	Prices(ctx context.Context, source string, from, to time.Time) ([]store.Price, error)
}

// Deps are the service's collaborators.
type Deps struct {
	// Location is the plant's time zone: the windows' and the horizon's
	// (required).
	Location *time.Location
	// Store keeps the prices (required with a market).
	Store Store
	// Client makes the requests (nil: one with RequestTimeout); a test
	// passes its TLS server's client.
	Client *http.Client
	// Now is the clock of the data, the horizon's (nil: time.Now);
	// WallClock spaces the requests (nil: time.Now).
	Now, WallClock func() time.Time
	// Logger (nil: none).
	Logger *slog.Logger
}

// Fetch limits.
const (
	// MinRequestInterval is the least time between two requests to the
	// provider.
	MinRequestInterval = time.Hour
	// RequestTimeout bounds a request, the answer read included.
	RequestTimeout = 30 * time.Second
	// MaxDocumentBytes is the most of an answer that is read.
	MaxDocumentBytes = 4 << 20
	// PublishHourUTC is when the next day's prices are expected: the day
	// ahead auction's results come around 13:00 CET, 12:00 UTC.
	PublishHourUTC = 12
	// idleCheck is how often Run looks whether the horizon moved (a
	// check of what it holds, no request).
	idleCheck = time.Minute
)

// failureWait is the wait after consecutive failures (never less than
// MinRequestInterval).
var failureWait = backoff.Exp{First: time.Hour, Max: 4 * time.Hour}

// Status is the fetcher's state.
type Status struct {
	// Source is the market's ("entsoe:10Y1001A1001A82H"); empty without
	// a market.
	Source string
	// Stale: the last request failed; the prices held are the last good
	// ones.
	Stale bool
	// LastFetch is the last request that brought prices, LastAttempt the
	// last request, NextAttempt the earliest next one (zero: none yet or
	// none due); LastError the last failure's error ("" none since the
	// last success).
	LastFetch, LastAttempt, NextAttempt time.Time
	LastError                           string
	// Requests and Failures count since the start.
	Requests, Failures uint64
	// HeldUntil is the end of the last market price held (zero: none).
	HeldUntil time.Time
}

// Service fetches, keeps and prices the tariffs. Its methods are safe
// for concurrent use.
type Service struct {
	cfg     tariffconfig.Config
	windows []tariffconfig.Window
	deps    Deps
	log     *slog.Logger
	source  string
	request func(from, to time.Time) (*http.Request, error)
	parse   func(io.Reader) ([]store.Price, error)

	mu       sync.Mutex
	prices   []store.Price // market prices from yesterday on, in time order
	status   Status
	failures int // consecutive
}

// New returns the service of a validated config.
func New(cfg tariffconfig.Config, deps Deps) (*Service, error) {
	if deps.Location == nil {
		return nil, errors.New("tariffs: no time zone")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.WallClock == nil {
		deps.WallClock = time.Now
	}
	if deps.Client == nil {
		deps.Client = &http.Client{Timeout: RequestTimeout}
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, windows: cfg.Import.Windows(), deps: deps, log: deps.Logger}
	if m := cfg.Market; m != nil {
		if deps.Store == nil {
			return nil, errors.New("tariffs: a market needs a store")
		}
		s.source = m.Source()
		base := m.MarketURL()
		switch m.Provider {
		case tariffconfig.ProviderENTSOE:
			s.request = func(from, to time.Time) (*http.Request, error) { return entsoeRequest(base, m.Zone, m.Token, from, to) }
			s.parse = ParseENTSOE
		case tariffconfig.ProviderAWATTar:
			s.request = func(from, to time.Time) (*http.Request, error) { return awattarRequest(base, from, to) }
			s.parse = ParseAWATTar
		default:
			return nil, fmt.Errorf("tariffs: unknown provider %q", m.Provider)
		}
	}
	s.status.Source = s.source
	return s, nil
}

// Config is the tariff the service prices with.
func (s *Service) Config() tariffconfig.Config { return s.cfg }

// Location is the plant's time zone.
func (s *Service) Location() *time.Location { return s.deps.Location }

// Status returns the fetcher's state.
func (s *Service) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	if n := len(s.prices); n > 0 {
		st.HeldUntil = s.prices[n-1].End
	}
	return st
}

// Run fetches the market prices until ctx ends; without a market it
// only waits. It reads the stored prices first.
func (s *Service) Run(ctx context.Context) error {
	if s.source == "" {
		<-ctx.Done()
		return nil
	}
	if err := s.Load(ctx); err != nil {
		s.log.Warn("tariffs: stored prices unreadable; fetching them", "source", s.source, "err", err)
	}
	for {
		wake := s.Step(ctx)
		t := time.NewTimer(max(wake.Sub(s.deps.WallClock()), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Load reads the stored prices of the horizon and the day before. The
// latest fetch among them counts as the last request, so that a restart
// does not ask again within the hour.
func (s *Service) Load(ctx context.Context) error {
	today, _, dayAfter := s.days(s.deps.Now())
	ps, err := s.deps.Store.Prices(ctx, s.source, today.AddDate(0, 0, -1), dayAfter)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.merge(ps, today.AddDate(0, 0, -1))
	for _, p := range ps {
		if p.FetchedAt.After(s.status.LastFetch) {
			s.status.LastFetch = p.FetchedAt
		}
	}
	if next := s.status.LastFetch.Add(MinRequestInterval); !s.status.LastFetch.IsZero() && next.After(s.status.NextAttempt) {
		s.status.NextAttempt = next
	}
	return nil
}

// days returns the local midnights of today, tomorrow and the day after.
func (s *Service) days(now time.Time) (today, tomorrow, dayAfter time.Time) {
	l := now.In(s.deps.Location)
	today = time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, s.deps.Location)
	return today, today.AddDate(0, 0, 1), today.AddDate(0, 0, 2)
}

// missing returns the range of the horizon the held prices do not
// cover: today, and tomorrow from PublishHourUTC on.
func (s *Service) missing(now time.Time) (from, to time.Time, ok bool) {
	today, tomorrow, dayAfter := s.days(now)
	end := tomorrow
	u := now.UTC()
	if !now.Before(time.Date(u.Year(), u.Month(), u.Day(), PublishHourUTC, 0, 0, 0, time.UTC)) {
		end = dayAfter
	}
	for day := today; day.Before(end); day = day.AddDate(0, 0, 1) {
		if !covers(s.prices, day, day.AddDate(0, 0, 1)) {
			return day, end, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// covers reports whether ps (in time order) cover [from, to) without a
// gap.
func covers(ps []store.Price, from, to time.Time) bool {
	i, _ := slices.BinarySearchFunc(ps, from, func(p store.Price, t time.Time) int {
		if !p.End.After(t) {
			return -1
		}
		return 1
	})
	at := from
	for ; i < len(ps) && at.Before(to); i++ {
		if ps[i].Start.After(at) {
			return false
		}
		at = ps[i].End
	}
	return !at.Before(to)
}

// merge adds ps to the held prices (replacing those of the same start)
// and drops those that ended before keepFrom. s.mu is held.
func (s *Service) merge(ps []store.Price, keepFrom time.Time) {
	byStart := make(map[int64]store.Price, len(s.prices)+len(ps))
	for _, p := range s.prices {
		byStart[p.Start.UnixMilli()] = p
	}
	for _, p := range ps {
		byStart[p.Start.UnixMilli()] = p
	}
	out := make([]store.Price, 0, len(byStart))
	for _, p := range byStart {
		if p.End.After(keepFrom) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b store.Price) int { return a.Start.Compare(b.Start) })
	s.prices = out
}

// Step makes the request the horizon needs, if any and if allowed now,
// and returns the wall-clock time to look again. Run calls it; a test
// calls it with its clocks.
func (s *Service) Step(ctx context.Context) time.Time {
	wall := s.deps.WallClock()
	s.mu.Lock()
	from, to, need := s.missing(s.deps.Now())
	next := s.status.NextAttempt
	s.mu.Unlock()
	if !need {
		return wall.Add(idleCheck)
	}
	if wall.Before(next) {
		return minTime(next, wall.Add(idleCheck))
	}
	s.fetch(ctx, from, to, wall)
	return minTime(s.Status().NextAttempt, wall.Add(idleCheck))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// fetch asks the provider for [from, to) and keeps what it answers.
func (s *Service) fetch(ctx context.Context, from, to, wall time.Time) {
	prices, err := s.get(ctx, from, to)
	if ctx.Err() != nil {
		return // stopping: no answer, no failure
	}
	if err == nil {
		for i := range prices {
			prices[i].Source, prices[i].FetchedAt = s.source, wall
		}
		if err = s.deps.Store.PutPrices(ctx, prices); err != nil {
			// Kept in memory all the same: the store's failure is not
			// the provider's, and it is logged by the store's health.
			s.log.Warn("tariffs: prices not stored", "source", s.source, "err", err)
			err = nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	st.Requests++
	st.LastAttempt = wall
	switch {
	case err == nil || errors.Is(err, ErrNoData):
		if err == nil {
			s.merge(prices, from.AddDate(0, 0, -1))
		} else {
			s.log.Info("tariffs: no prices published yet; asking again in an hour", "source", s.source,
				"from", from.Format(time.RFC3339), "to", to.Format(time.RFC3339))
		}
		if s.failures > 0 {
			s.log.Info("tariffs: prices fetched again", "source", s.source, "failures", s.failures)
		}
		st.LastFetch, st.Stale, st.LastError, s.failures = wall, false, "", 0
		st.NextAttempt = wall.Add(MinRequestInterval)
	default:
		st.Failures++
		s.failures++
		st.Stale, st.LastError = true, err.Error()
		st.NextAttempt = wall.Add(max(failureWait.Wait(s.failures, 0), MinRequestInterval))
		if s.failures == 1 {
			s.log.Warn("tariffs: price fetch failed; keeping the last prices, marked stale", "source", s.source,
				"err", err, "retry", st.NextAttempt.Format(time.RFC3339))
		} else {
			s.log.Debug("tariffs: price fetch failed again", "source", s.source, "failures", s.failures, "err", err)
		}
	}
}

// get makes one request and parses its answer.
func (s *Service) get(ctx context.Context, from, to time.Time) ([]store.Price, error) {
	req, err := s.request(from, to)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", "plantd")
	resp, err := s.deps.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redacted(req.URL) // the query holds the security token
		}
		return nil, fmt.Errorf("tariffs: %s: %w", s.source, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, MaxDocumentBytes)
	if resp.StatusCode != http.StatusOK {
		// ENTSO-E explains a refusal in an acknowledgement document.
		if _, perr := s.parse(io.LimitReader(body, 64<<10)); perr != nil && !errors.Is(perr, ErrMalformed) {
			return nil, fmt.Errorf("tariffs: %s: HTTP %d: %w", s.source, resp.StatusCode, perr)
		}
		return nil, fmt.Errorf("tariffs: %s: HTTP %d from %s", s.source, resp.StatusCode, redacted(req.URL))
	}
	prices, err := s.parse(body)
	if err != nil {
		return nil, fmt.Errorf("tariffs: %s: %w", s.source, err)
	}
	return prices, nil
}

// redacted is u without its query.
func redacted(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}
