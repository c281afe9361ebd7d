package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/plant"
	"plantd/plant/kind"
)

// timeRFC3339 is the format of every non-measurement time (UTC, Z).
const timeRFC3339 = "2006-01-02T15:04:05Z"

// utc renders t as RFC 3339 UTC.
func utc(t time.Time) string { return t.UTC().Format(timeRFC3339) }

// plantJSON is the plant object heading every plant-scoped response.
type plantJSON struct {
	PlantID     string `json:"plantId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Timezone    string `json:"timezone"`
}

func plantObj(p plant.Plant) plantJSON {
	return plantJSON{PlantID: p.ID, Name: p.Name, Description: p.Description, Timezone: p.Timezone()}
}

// deviceRefJSON is the device object of device-scoped responses.
type deviceRefJSON struct {
	DeviceID string `json:"deviceId"`
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
}

func deviceObj(p plant.Plant, d plant.DeviceLive) deviceRefJSON {
	return deviceRefJSON{DeviceID: d.Info.ID, Name: d.Info.Name, Timezone: p.Timezone()}
}

type orientationJSON struct {
	Azimuth        *float64 `json:"azimuth,omitempty"`
	CollectorSlope *float64 `json:"collectorSlope,omitempty"`
}

type moduleAreaJSON struct {
	Name           string   `json:"name"`
	Azimuth        *float64 `json:"azimuth,omitempty"`
	CollectorSlope *float64 `json:"collectorSlope,omitempty"`
	PeakPower      *float64 `json:"peakPower,omitempty"`
	ModuleCount    *int     `json:"moduleCount,omitempty"`
}

type installationJSON struct {
	PeakPower                *float64         `json:"peakPower,omitempty"`
	AcNominalPower           *float64         `json:"acNominalPower,omitempty"`
	CalculatedAcNominalPower *float64         `json:"calculatedAcNominalPower,omitempty"`
	CalcAcNominalPower       *float64         `json:"calcAcNominalPower,omitempty"`
	DcPowerInputMax          *float64         `json:"dcPowerInputMax,omitempty"`
	CO2SavingsFactor         float64          `json:"co2SavingsFactor"`
	StartUpUtc               string           `json:"startUpUtc,omitempty"`
	Orientation              *orientationJSON `json:"orientation,omitempty"`
	PVModuleAreas            []moduleAreaJSON `json:"pvModuleAreas,omitempty"`
}

type addressJSON struct {
	Country      string   `json:"country,omitempty"`
	FederalState string   `json:"federalState,omitempty"`
	City         string   `json:"city,omitempty"`
	ZipCode      string   `json:"zipCode,omitempty"`
	Street       string   `json:"street,omitempty"`
	StreetNo     string   `json:"streetNo,omitempty"`
	Longitude    *float64 `json:"longitude,omitempty"`
	Latitude     *float64 `json:"latitude,omitempty"`
}

type locationJSON struct {
	CurrencyCode3 string       `json:"currencyCode3,omitempty"`
	Address       *addressJSON `json:"address,omitempty"`
}

type plantListItem struct {
	PlantID      string           `json:"plantId"`
	Name         string           `json:"name"`
	Description  string           `json:"description,omitempty"`
	Timezone     string           `json:"timezone"`
	Installation installationJSON `json:"installation"`
	Location     *locationJSON    `json:"location,omitempty"`
}

type partialJSON struct {
	Reason  string   `json:"reason"`
	Missing []string `json:"missing"`
}

type plantListJSON struct {
	Plants  []plantListItem `json:"plants"`
	Partial *partialJSON    `json:"partial,omitempty"`
}

func pos(v float64) *float64 {
	if v <= 0 {
		return nil
	}
	return &v
}

// installationOf builds the installation object of a plant from the config
// and the discovered inverters.
func (s *Server) installationOf(p plant.Plant, devs []plant.DeviceLive) installationJSON {
	pc := s.plants[p.ID]
	co2 := pc.Installation.CO2SavingsFactor
	if co2 == 0 {
		co2 = 400
	}
	in := installationJSON{PeakPower: pos(pc.Installation.PeakPowerW), DcPowerInputMax: pos(pc.Installation.DCPowerInputMaxW), CO2SavingsFactor: co2}
	var acSum float64
	newer := false
	for _, d := range devs {
		if d.Info.Kind != kind.Inverter || d.Nameplate == nil {
			continue
		}
		if d.Nameplate.DER() {
			newer = true
		}
		if d.Info.Active() {
			acSum += d.Nameplate.RatedPowerW
		}
	}
	in.CalculatedAcNominalPower = pos(acSum)
	in.CalcAcNominalPower = in.CalculatedAcNominalPower
	in.AcNominalPower = in.CalculatedAcNominalPower
	if su := pc.Installation.StartUp; !su.IsZero() {
		// The cloud writes it without offset; Java clients parse it with
		// LocalDateTime as UTC.
		in.StartUpUtc = su.In(time.UTC).Format(localTime)
	}
	if pc.Installation.Azimuth != nil || pc.Installation.CollectorSlope != nil {
		in.Orientation = &orientationJSON{Azimuth: validAzimuth(pc.Installation.Azimuth), CollectorSlope: pc.Installation.CollectorSlope}
	}
	if newer {
		for _, a := range pc.Installation.PVModuleAreas {
			m := moduleAreaJSON{Name: a.Name, Azimuth: validAzimuth(a.Azimuth), CollectorSlope: a.CollectorSlope, PeakPower: pos(a.PeakPowerW)}
			if a.ModuleCount > 0 {
				n := a.ModuleCount
				m.ModuleCount = &n
			}
			in.PVModuleAreas = append(in.PVModuleAreas, m)
		}
	}
	return in
}

// validAzimuth drops an azimuth outside 0..360 (the config rejects it;
// a Config built in code might not).
func validAzimuth(a *float64) *float64 {
	if a == nil || *a < 0 || *a > 360 {
		return nil
	}
	return a
}

func locationOf(pc config.Plant) *locationJSON {
	l := pc.Location
	a := addressJSON{Country: l.Country, FederalState: l.FederalState, City: l.City, ZipCode: l.ZipCode,
		Street: l.Street, StreetNo: l.StreetNo, Longitude: l.Longitude, Latitude: l.Latitude}
	out := &locationJSON{CurrencyCode3: l.CurrencyCode3}
	if a != (addressJSON{}) {
		out.Address = &a
	}
	if out.CurrencyCode3 == "" && out.Address == nil {
		return nil
	}
	return out
}

// offline reports whether a device cannot be reached now.
func offline(d plant.DeviceLive) bool {
	return d.Comm.Status == plant.CommTimedOut || d.Comm.Status == plant.CommUnreachable
}

// platformWord maps a discovered platform to the spec's generation word.
func platformWord(n *plant.Nameplate) string {
	if n.DER() {
		return "newer"
	}
	return "classic"
}

// plantList is GET /monitoring/v1/plants.
func (s *Server) plantList(c *gin.Context) {
	out := plantListJSON{Plants: []plantListItem{}}
	// per platform generation: devices seen, devices reachable
	seen := map[string]int{}
	up := map[string]int{}
	for _, p := range s.deps.Live.Plants() {
		devs, err := s.deps.Live.DeviceStatuses(p.ID)
		if err != nil {
			s.internal(c, err)
			return
		}
		for _, d := range devs {
			if d.Nameplate == nil || !d.Info.Active() || d.Info.Kind == kind.Gateway {
				continue
			}
			w := platformWord(d.Nameplate)
			seen[w]++
			if !offline(d) {
				up[w]++
			}
		}
		out.Plants = append(out.Plants, plantListItem{
			PlantID: p.ID, Name: p.Name, Description: p.Description, Timezone: p.Timezone(),
			Installation: s.installationOf(p, devs), Location: locationOf(s.plants[p.ID]),
		})
	}
	var missing []string
	for _, w := range []string{"classic", "newer"} {
		if seen[w] > 0 && up[w] == 0 {
			missing = append(missing, w)
		}
	}
	if len(missing) == 1 {
		out.Partial = &partialJSON{Reason: "the devices of the " + missing[0] + " platform are unreachable", Missing: missing}
	}
	s.writeJSON(c, http.StatusOK, out, false)
}

// installation is GET .../plants/{plantId}/installation.
func (s *Server) installation(c *gin.Context) {
	p, devs, ok := s.plantDevices(c)
	if !ok {
		return
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("installation", s.installationOf(p, devs))), true)
}

type connectedServiceJSON struct {
	Status string `json:"status"`
	Since  string `json:"since,omitempty"`
}

func (s *Server) connectedState() (string, time.Time) {
	if s.deps.Connected == nil {
		return "NotConfigured", time.Time{}
	}
	return s.deps.Connected.ConnectedState()
}

// configuration is GET .../plants/{plantId}/configuration.
func (s *Server) configuration(c *gin.Context) {
	p, devs, ok := s.plantDevices(c)
	if !ok {
		return
	}
	battery := false
	for _, d := range devs {
		if d.Info.Kind == kind.Battery && d.Info.Active() {
			battery = true
		}
	}
	st, since := s.connectedState()
	cs := connectedServiceJSON{Status: st}
	if !since.IsZero() {
		cs.Since = utc(since)
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("plantWithBattery", battery), field("plantWithLiveData", true), field("connectedService", cs)), false)
}

type deviceJSON struct {
	DeviceID              string   `json:"deviceId"`
	Name                  string   `json:"name"`
	Timezone              string   `json:"timezone"`
	Type                  string   `json:"type"`
	Product               string   `json:"product"`
	ProductID             *int     `json:"productId,omitempty"`
	Serial                string   `json:"serial,omitempty"`
	Vendor                string   `json:"vendor"`
	GeneratorPower        *float64 `json:"generatorPower,omitempty"`
	GeneratorPowerDc      *float64 `json:"generatorPowerDc,omitempty"`
	IsActive              bool     `json:"isActive"`
	DeactivatedAt         string   `json:"deactivatedAt,omitempty"`
	IsSmartConnectedReady bool     `json:"isSmartConnectedReady"`
}

// smartConnectedReady: the connected service can control the device (it
// offers a power limit or storage control).
func smartConnectedReady(d plant.DeviceLive) bool {
	if d.Info.Kind == kind.Gateway {
		return true
	}
	return d.Nameplate != nil && d.Nameplate.Controllable
}

func (s *Server) deviceOf(p plant.Plant, d plant.DeviceLive) deviceJSON {
	j := deviceJSON{DeviceID: d.Info.ID, Name: d.Info.Name, Timezone: p.Timezone(), Type: d.Info.Type(),
		IsActive: d.Info.Active(), IsSmartConnectedReady: smartConnectedReady(d)}
	if id, ok := s.cfg.ProductIDs[d.Info.ID]; ok && id > 0 {
		j.ProductID = &id
	}
	if !d.Info.Active() {
		// Plant-local without offset, as the cloud sends it (clients
		// parse it with LocalDateTime in the plant's zone).
		j.DeactivatedAt = d.Info.DeactivatedAt.In(plantLoc(p)).Format(localTime)
	}
	switch {
	case d.Info.Kind == kind.Gateway:
		j.Product, j.Vendor = "plantd", "plantd"
	case d.Nameplate != nil:
		j.Product, j.Vendor, j.Serial = d.Nameplate.Model, d.Nameplate.Manufacturer, d.Nameplate.Serial
		if d.Info.Kind == kind.Inverter || d.Info.Kind == kind.Battery {
			j.GeneratorPower = pos(d.Nameplate.RatedPowerW)
		}
	default:
		j.Product, j.Vendor = "unknown", "unknown"
	}
	if j.Type == "" {
		j.Type = "Unknown"
	}
	return j
}

// devices is GET .../plants/{plantId}/devices.
func (s *Server) devices(c *gin.Context) {
	p, devs, ok := s.plantDevices(c)
	if !ok {
		return
	}
	out := make([]deviceJSON, 0, len(devs))
	for _, d := range devs {
		out = append(out, s.deviceOf(p, d))
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("devices", out)), true)
}

// plantLoc is a plant's zone (UTC when it has none).
func plantLoc(p plant.Plant) *time.Location {
	if p.Location == nil {
		return time.UTC
	}
	return p.Location
}

// plantBare is GET /monitoring/v1/plants/{plantId}: the bare plant object
// (SolarNetwork's SMA client reads the time zone there before every
// query).
func (s *Server) plantBare(c *gin.Context) {
	s.writeJSON(c, http.StatusOK, plantObj(ctxPlantOf(c)), true)
}

// devicesLean is GET .../plants/{plantId}/devices/lean: the device list
// without the plant wrapper; deactivated devices only with
// WithDeactivatedDevices=true.
func (s *Server) devicesLean(c *gin.Context) {
	withDeactivated, ok := parseBool(c, "WithDeactivatedDevices")
	if !ok {
		return
	}
	p, devs, ok := s.plantDevices(c)
	if !ok {
		return
	}
	out := make([]deviceJSON, 0, len(devs))
	for _, d := range devs {
		if d.Info.Active() || withDeactivated {
			out = append(out, s.deviceOf(p, d))
		}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("devices", out)), true)
}

// deviceDetails is GET /monitoring/v1/devices/{deviceId}: the device's
// plant and the device object of the device list (modelled).
func (s *Server) deviceDetails(c *gin.Context) {
	p, d := ctxPlantOf(c), ctxDeviceOf(c)
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("details", s.deviceOf(p, d))), true)
}

// stakeholders is GET .../plants/{plantId}/stakeholders.
func (s *Server) stakeholders(c *gin.Context) {
	p := ctxPlantOf(c)
	sh := s.cfg.Stakeholders[p.ID]
	if sh == nil {
		sh = []Stakeholder{}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("stakeholders", sh)), true)
}

type commJSON struct {
	DeviceID       string  `json:"deviceId"`
	Status         string  `json:"status"`
	LastContactUtc string  `json:"lastContactUtc,omitempty"`
	LastError      string  `json:"lastError,omitempty"`
	SuccessRate    float64 `json:"successRate"`
}

// communication is GET .../plants/{plantId}/communication.
func (s *Server) communication(c *gin.Context) {
	p, devs, ok := s.plantDevices(c)
	if !ok {
		return
	}
	out := make([]commJSON, 0, len(devs))
	for _, d := range devs {
		j := commJSON{DeviceID: d.Info.ID, Status: string(d.Comm.Status), SuccessRate: d.Comm.SuccessRate}
		if !d.Comm.LastContact.IsZero() {
			j.LastContactUtc = utc(d.Comm.LastContact)
		}
		if d.Comm.LastError != nil {
			j.LastError = d.Comm.LastError.Error()
		}
		out = append(out, j)
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("devices", out)), false)
}

type logJSON struct {
	Time     string `json:"time"`
	Level    string `json:"level"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	DeviceID string `json:"deviceId,omitempty"`
}

// parseLogQuery reads From, To, cursor and limit.
func parseLogQuery(c *gin.Context, q *plant.LogQuery) bool {
	for _, f := range []struct {
		names []string
		dst   *time.Time
	}{{[]string{"From", "from"}, &q.From}, {[]string{"To", "to"}, &q.To}} {
		v := queryAny(c, f.names...)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			badParam(c, f.names[0], "want an RFC 3339 time such as 2025-06-21T10:00:00Z")
			return false
		}
		*f.dst = t
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		badParam(c, "To", "must not be before From")
		return false
	}
	q.Cursor = queryAny(c, "cursor", "Cursor")
	q.Limit = 100
	if v := queryAny(c, "limit", "Limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			badParam(c, "limit", "want an integer 1..1000")
			return false
		}
		q.Limit = n
	}
	return true
}

// queryAny returns the first non-empty query value among names.
func queryAny(c *gin.Context, names ...string) string {
	for _, n := range names {
		if v := c.Query(n); v != "" {
			return v
		}
	}
	return ""
}

// logs answers a page of log entries: {"device" (of a device's log),
// "logs", "next" (when there is a next page), "plant"}, the members in
// the order the answer always had (alphabetical).
func (s *Server) logs(c *gin.Context, q plant.LogQuery, p plantJSON, dev *deviceRefJSON) {
	if !parseLogQuery(c, &q) {
		return
	}
	entries, next, err := s.deps.History.Logs(c.Request.Context(), q)
	if err != nil {
		s.historyError(c, err)
		return
	}
	out := make([]logJSON, 0, len(entries))
	for _, e := range entries {
		out = append(out, logJSON{Time: utc(e.Time), Level: e.Level, Code: e.Code, Message: e.Message, DeviceID: e.DeviceID})
	}
	ms := make([]member, 0, maxMembers)
	if dev != nil {
		ms = append(ms, field("device", *dev))
	}
	ms = append(ms, field("logs", out))
	if next != "" {
		ms = append(ms, field("next", next))
	}
	s.writeJSON(c, http.StatusOK, envelope(append(ms, field("plant", p))...), false)
}

// plantLogs is GET .../plants/{plantId}/logs (installer).
func (s *Server) plantLogs(c *gin.Context) {
	p := ctxPlantOf(c)
	s.logs(c, plant.LogQuery{PlantID: p.ID}, plantObj(p), nil)
}

// deviceLogs is GET .../devices/{deviceId}/logs (installer).
func (s *Server) deviceLogs(c *gin.Context) {
	p, d := ctxPlantOf(c), ctxDeviceOf(c)
	dev := deviceObj(p, d)
	s.logs(c, plant.LogQuery{PlantID: p.ID, DeviceID: d.Info.ID}, plantObj(p), &dev)
}
