package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/apidoc"
	"plantd/plant"
	"plantd/tariffs"
	"plantd/tariffs/tariffconfig"
)

// Tariffs are the grid and feed-in tariffs (a *tariffs.Service); nil:
// none configured, GET /gateway/v1/tariffs says so.
type Tariffs interface {
	Config() tariffconfig.Config
	Location() *time.Location
	Status() tariffs.Status
	Slots(from, to time.Time) []tariffs.Slot
}

// maxTariffHours bounds the hours GET /gateway/v1/tariffs answers.
const maxTariffHours = 48

// tariffsJSON is the answer of GET /gateway/v1/tariffs.
type tariffsJSON struct {
	Configured bool                 `json:"configured"`
	PlantID    string               `json:"plantId,omitempty"`
	Timezone   string               `json:"timezone,omitempty"`
	Tariff     *tariffconfig.Config `json:"tariff,omitempty"`
	Market     *marketJSON          `json:"market,omitempty"`
	Stale      bool                 `json:"stale"`
	FromUtc    string               `json:"fromUtc,omitempty"`
	ToUtc      string               `json:"toUtc,omitempty"`
	Slots      []tariffs.Slot       `json:"slots"`
}

// marketJSON is the market price fetcher's state.
type marketJSON struct {
	Source         string `json:"source"`
	Stale          bool   `json:"stale"`
	LastFetchUtc   string `json:"lastFetchUtc,omitempty"`
	LastAttemptUtc string `json:"lastAttemptUtc,omitempty"`
	NextAttemptUtc string `json:"nextAttemptUtc,omitempty"`
	LastError      string `json:"lastError,omitempty"`
	PricesUntilUtc string `json:"pricesUntilUtc,omitempty"`
	Requests       uint64 `json:"requests"`
	Failures       uint64 `json:"failures"`
}

// tariffList is GET /gateway/v1/tariffs[?hours=N] (standard): the
// configured tariff, the market fetcher's state and the price slots from
// now to the end of tomorrow in the plant's time zone (24 to 48 h), or
// of the next N hours (1..48).
func (s *Server) tariffList(c *gin.Context) {
	hours := 0
	for k, v := range c.Request.URL.Query() {
		if k != "hours" {
			fail(c, http.StatusBadRequest, plant.CodeBadParameter, fmt.Sprintf("unknown query parameter %q", k), FieldError{Field: k, Message: "unknown parameter; only hours"})
			return
		}
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > maxTariffHours || len(v) > 1 {
			fail(c, http.StatusBadRequest, plant.CodeBadParameter, fmt.Sprintf("hours %q: want one whole number 1..%d", v[0], maxTariffHours),
				FieldError{Field: "hours", Message: fmt.Sprintf("a whole number of hours, 1..%d", maxTariffHours)})
			return
		}
		hours = n
	}
	if s.deps.Tariffs == nil {
		s.writeJSON(c, http.StatusOK, tariffsJSON{Slots: []tariffs.Slot{}}, false)
		return
	}
	t := s.deps.Tariffs
	cfg, loc := t.Config(), t.Location()
	now := s.now()
	to := now.Add(time.Duration(hours) * time.Hour)
	if hours == 0 {
		l := now.In(loc)
		to = time.Date(l.Year(), l.Month(), l.Day()+2, 0, 0, 0, 0, loc)
	}
	out := tariffsJSON{Configured: true, PlantID: cfg.Plant, Timezone: loc.String(), Tariff: &cfg,
		FromUtc: utc(now), ToUtc: utc(to), Slots: t.Slots(now, to)}
	if out.Slots == nil {
		out.Slots = []tariffs.Slot{}
	}
	if st := t.Status(); st.Source != "" {
		out.Stale = st.Stale
		out.Market = &marketJSON{Source: st.Source, Stale: st.Stale, LastFetchUtc: utcOrEmpty(st.LastFetch), LastAttemptUtc: utcOrEmpty(st.LastAttempt),
			NextAttemptUtc: utcOrEmpty(st.NextAttempt), LastError: st.LastError, PricesUntilUtc: utcOrEmpty(st.HeldUntil),
			Requests: st.Requests, Failures: st.Failures}
	}
	s.writeJSON(c, http.StatusOK, out, false)
}

// tariffsResponse is the OpenAPI 200 response of GET /gateway/v1/tariffs.
func tariffsResponse() apidoc.Obj {
	eur := func(d string) apidoc.Obj { return apidoc.Describe(apidoc.Num(), d) }
	slot := apidoc.Object(apidoc.Obj{
		"startUtc": apidoc.UTCTime(), "endUtc": apidoc.UTCTime(),
		"importEurPerKWh": eur("what grid power costs the owner, EUR/kWh: a market price with the surcharge and VAT, or the time-of-use table's"),
		"feedInEurPerKWh": eur("what feed-in pays, EUR/kWh: the market price plus the offset, or the fixed price"),
		"source":          apidoc.Describe(apidoc.Str(), `the market's source ("entsoe:<EIC>", "awattar:de") when a market price is in the slot, else "fixed"`),
		"stale":           apidoc.Describe(apidoc.Bool(), "the market price is one of the last good ones, kept while the provider fails; absent: fresh"),
		"marketEurPerMWh": eur("the market price as published, EUR/MWh; absent without one"),
	}, "startUtc", "endUtc", "importEurPerKWh", "feedInEurPerKWh", "source")
	market := apidoc.Object(apidoc.Obj{
		"source": apidoc.Str(), "stale": apidoc.Describe(apidoc.Bool(), "the last request failed (the provider down, an HTTP error, a malformed document)"),
		"lastFetchUtc": apidoc.Describe(apidoc.UTCTime(), "the last request the provider answered"), "lastAttemptUtc": apidoc.UTCTime(),
		"nextAttemptUtc": apidoc.Describe(apidoc.UTCTime(), "the earliest next request (at most one an hour; later after failures)"),
		"lastError":      apidoc.Describe(apidoc.Str(), "the last failure since the last success"),
		"pricesUntilUtc": apidoc.Describe(apidoc.UTCTime(), "the end of the last market price held"),
		"requests":       apidoc.Obj{"type": "integer", "minimum": 0}, "failures": apidoc.Obj{"type": "integer", "minimum": 0},
	}, "source", "stale", "requests", "failures")
	body := apidoc.Object(apidoc.Obj{
		"configured": apidoc.Describe(apidoc.Bool(), "false: no tariffs: section in the config (the other members are absent, slots empty)"),
		"plantId":    apidoc.Str(), "timezone": apidoc.Describe(apidoc.Str(), "the plant's IANA time zone, of the time-of-use windows and the horizon"),
		"tariff":  apidoc.Describe(apidoc.Obj{"type": "object"}, "the tariffs: section as configured (the security token left out)"),
		"market":  apidoc.Describe(market, "the day-ahead price fetcher; absent without a market"),
		"stale":   apidoc.Describe(apidoc.Bool(), "the market prices are the last good ones"),
		"fromUtc": apidoc.UTCTime(), "toUtc": apidoc.UTCTime(),
		"slots": apidoc.Describe(apidoc.Arr(slot), "the prices from now: at the market's resolution, fixed prices cut at the windows' edges and full hours; a slot whose price is unknown is left out"),
	}, "configured", "stale", "slots")
	return apidoc.Obj{"description": "the tariffs and the prices of the next 24 to 48 hours (plantd's)", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": body}}}
}
