package forecast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// OpenMeteo asks open-meteo's forecast API (https://open-meteo.com/en/docs)
// for the global horizontal irradiance of the next days in 15-minute
// steps: GET URL?latitude=&longitude=&minutely_15=shortwave_radiation
// &forecast_days=3&timezone=GMT[&apikey=]. Its documented answer: the
// variables' arrays under "minutely_15" (or "hourly") beside a "time"
// array of local ISO 8601 times without offset in the answer's
// "timezone" (utc_offset_seconds its offset), or Unix seconds with
// timeformat=unixtime; a radiation value is the mean of the period
// before its time ("preceding 15 minutes mean", "preceding hour mean").
type OpenMeteo struct {
	// URL is the endpoint (https://api.open-meteo.com/v1/forecast).
	URL string
	// APIKey is sent as apikey when set (the commercial endpoint).
	APIKey string
	// Lat and Lon locate the plant.
	Lat, Lon float64
	// Client makes the request (nil: a client with a 30 s timeout).
	Client *http.Client
}

// maxServiceBody bounds an answer (3 days of minutely_15: about 10 kB).
const maxServiceBody = 4 << 20

// Fetch asks the service and parses its answer.
func (o OpenMeteo) Fetch(ctx context.Context) ([]ServiceSlot, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("open-meteo: url: %w", err)
	}
	q := u.Query()
	q.Set("latitude", strconv.FormatFloat(o.Lat, 'f', 4, 64))
	q.Set("longitude", strconv.FormatFloat(o.Lon, 'f', 4, 64))
	q.Set("minutely_15", "shortwave_radiation")
	q.Set("forecast_days", "3")
	q.Set("timezone", "GMT")
	if o.APIKey != "" {
		q.Set("apikey", o.APIKey)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("open-meteo: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		// The URL carries the key: name the host only.
		return nil, fmt.Errorf("open-meteo %s: %w", u.Host, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxServiceBody))
	if err != nil {
		return nil, fmt.Errorf("open-meteo %s: reading the answer: %w", u.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("open-meteo %s: %s %s", u.Host, resp.Status, e.Reason)
	}
	slots, err := ParseOpenMeteo(body)
	if err != nil {
		return nil, fmt.Errorf("open-meteo %s: %w", u.Host, err)
	}
	return slots, nil
}

// unwrapURL drops *url.Error's URL (it holds the API key).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// openMeteoDoc is the part of open-meteo's answer the forecast reads.
type openMeteoDoc struct {
	UTCOffsetSeconds int             `json:"utc_offset_seconds"`
	Timezone         string          `json:"timezone"`
	Minutely15       *openMeteoBlock `json:"minutely_15"`
	Hourly           *openMeteoBlock `json:"hourly"`
}

type openMeteoBlock struct {
	Time               []json.RawMessage `json:"time"`
	ShortwaveRadiation []*float64        `json:"shortwave_radiation"`
}

// ParseOpenMeteo reads an answer of open-meteo's forecast API: the
// shortwave_radiation (GHI) of its minutely_15 block, else of its hourly
// block, each value the mean of the period before its time. Null values
// (beyond a model's reach) are left out.
func ParseOpenMeteo(body []byte) ([]ServiceSlot, error) {
	var d openMeteoDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("malformed answer: %w", err)
	}
	block, length := d.Minutely15, 15*time.Minute
	if block == nil || len(block.ShortwaveRadiation) == 0 {
		block, length = d.Hourly, time.Hour
	}
	if block == nil || len(block.ShortwaveRadiation) == 0 {
		return nil, errors.New("the answer has no shortwave_radiation (minutely_15 or hourly)")
	}
	if len(block.Time) != len(block.ShortwaveRadiation) {
		return nil, fmt.Errorf("%d times for %d shortwave_radiation values", len(block.Time), len(block.ShortwaveRadiation))
	}
	loc := time.FixedZone(d.Timezone, d.UTCOffsetSeconds)
	if z, err := time.LoadLocation(d.Timezone); err == nil && d.Timezone != "" {
		loc = z // the zone's own offsets across a DST change
	}
	slots := make([]ServiceSlot, 0, len(block.Time))
	for i, raw := range block.Time {
		end, err := openMeteoTime(raw, loc)
		if err != nil {
			return nil, fmt.Errorf("time[%d]: %w", i, err)
		}
		v := block.ShortwaveRadiation[i]
		if v == nil {
			continue
		}
		if *v < 0 || *v > 2000 {
			return nil, fmt.Errorf("shortwave_radiation[%d]: %v W/m² is out of range", i, *v)
		}
		slots = append(slots, ServiceSlot{Start: end.Add(-length), Length: length, GHI: *v})
	}
	return slots, nil
}

// openMeteoTime reads a time of the answer: a local ISO 8601 time without
// offset ("2026-03-02T12:00") or Unix seconds (timeformat=unixtime).
func openMeteoTime(raw json.RawMessage, loc *time.Location) (time.Time, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		t, err := time.ParseInLocation("2006-01-02T15:04", s, loc)
		if err != nil {
			return time.Time{}, err
		}
		return t, nil
	}
	var sec int64
	if err := json.Unmarshal(raw, &sec); err != nil {
		return time.Time{}, fmt.Errorf("%s is neither an ISO 8601 time nor Unix seconds", raw)
	}
	return time.Unix(sec, 0), nil
}
