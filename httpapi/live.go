package httpapi

import (
	"time"

	"github.com/gin-gonic/gin"

	"plantd/plant"
)

// liveEnvelope is the envelope of live sets: one set item (now, in W) and
// the error member (null when every device contributed fresh values).
type liveEnvelope[T any] struct {
	Plant      plantJSON        `json:"plant"`
	Device     *deviceRefJSON   `json:"device,omitempty"`
	SetType    string           `json:"setType"`
	Resolution string           `json:"resolution"`
	Set        []T              `json:"set"`
	Error      *plant.DataError `json:"error"`
}

// liveBalanceItem is the balance with its plant-local time.
type liveBalanceItem struct {
	Time string `json:"time"`
	plant.Balance
}

type liveMixItem struct {
	Time string `json:"time"`
	plant.EnergyMix
}

// liveBalance is GET /live/v1/plants/{plantId}/measurements/sets/EnergyBalance.
func (s *Server) liveBalance(c *gin.Context) {
	p := ctxPlantOf(c)
	s.writeLive(c, liveKey{answerBalance, p.ID}, func() (any, error) { return s.balanceAnswer(p) })
}

// balanceAnswer builds the live energy balance of p.
func (s *Server) balanceAnswer(p plant.Plant) (any, error) {
	b, err := s.deps.Live.EnergyBalance(p.ID)
	if err != nil {
		return nil, err
	}
	return liveEnvelope[liveBalanceItem]{
		Plant: plantObj(p), SetType: string(plant.SetEnergyBalance), Resolution: "Live",
		Set:   []liveBalanceItem{{Time: b.Time.In(locOf(p)).Format(localTime), Balance: b}},
		Error: b.Error,
	}, nil
}

// liveMix is GET /live/v1/devices/{deviceId}/measurement/sets/EnergyMix:
// the live energy mix of the device's plant.
func (s *Server) liveMix(c *gin.Context) {
	p, d := ctxPlantOf(c), ctxDeviceOf(c)
	s.writeLive(c, liveKey{answerMix, d.Info.ID}, func() (any, error) {
		m, err := s.deps.Live.EnergyMix(p.ID)
		if err != nil {
			return nil, err
		}
		dev := deviceObj(p, d)
		return liveEnvelope[liveMixItem]{
			Plant: plantObj(p), Device: &dev, SetType: string(plant.SetEnergyMix), Resolution: "Live",
			Set:   []liveMixItem{{Time: m.Time.In(locOf(p)).Format(localTime), EnergyMix: m}},
			Error: m.Error,
		}, nil
	})
}

func locOf(p plant.Plant) *time.Location {
	if p.Location == nil {
		return time.UTC
	}
	return p.Location
}

// liveDeviceJSON is one device of the live device lists.
type liveDeviceJSON struct {
	DeviceID       string   `json:"deviceId"`
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	HealthStatus   string   `json:"healthStatus"`
	LastUpdateUtc  string   `json:"lastUpdateUtc,omitempty"`
	SwitchingState string   `json:"switchingState,omitempty"`
	Consumption    *float64 `json:"consumption,omitempty"`
}

// liveDevices is GET /live/v{1,2}/plants/{plantId}/devices.
func (s *Server) liveDevices(version int) gin.HandlerFunc {
	kind := answerDevicesV2
	if version == 1 {
		kind = answerDevicesV1
	}
	return func(c *gin.Context) {
		p := ctxPlantOf(c)
		s.writeLive(c, liveKey{kind, p.ID}, func() (any, error) { return s.liveDeviceList(p, version) })
	}
}

// liveDeviceList builds the live device list of a plant.
func (s *Server) liveDeviceList(p plant.Plant, version int) (any, error) {
	devs, err := s.deps.Live.DeviceStatuses(p.ID)
	if err != nil {
		return nil, err
	}
	out := make([]liveDeviceJSON, 0, len(devs))
	for _, d := range devs {
		h := string(d.Health)
		if version == 1 {
			h = string(d.Health.V1())
		}
		if h == "" {
			h = string(plant.HealthNotAvailable)
			if version == 1 {
				h = string(plant.HealthInactive)
			}
		}
		j := liveDeviceJSON{DeviceID: d.Info.ID, Name: d.Info.Name, Type: d.Info.Type(), HealthStatus: h}
		if j.Type == "" {
			j.Type = "Unknown"
		}
		if !d.LastUpdate.IsZero() {
			j.LastUpdateUtc = utc(d.LastUpdate)
		}
		liveConsumer(&j, d)
		out = append(out, j)
	}
	return envelope(field("plant", plantObj(p)), field("devices", out)), nil
}
