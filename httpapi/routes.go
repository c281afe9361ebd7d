package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/httpapi/apidoc"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/web"
)

// Context keys of the resolved plant and device.
const (
	ctxPlant  = "plantd.plant"
	ctxDevice = "plantd.device"
)

// deviceSetTypes are the device measurement sets served under
// .../measurements/sets/{SetType}.
var deviceSetTypes = []plant.SetType{
	plant.SetEnergyAndPowerPv, plant.SetEnergyAndPowerInOut, plant.SetEnergyAndPowerConsumption,
	plant.SetEnergyAndPowerBattery, plant.SetPowerAc, plant.SetPowerDc, plant.SetEnergyDc,
	plant.SetEnergyMix, plant.SetSensor,
}

// routes builds the Gin engine.
func (s *Server) routes() *gin.Engine {
	// gin's mode is a process-wide setting: the program sets it (plantd's
	// main: release mode), not this constructor.
	e := gin.New()
	// X-Forwarded-For and X-Real-IP name the client only when they come
	// from a proxy the config names; otherwise anyone could write the
	// access log's addresses.
	e.ForwardedByClientIP = len(s.cfg.TrustedProxies) > 0
	_ = e.SetTrustedProxies(s.cfg.TrustedProxies) // checked by New
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	e.Use(requestID, s.metrics.middleware, s.recoverer, s.accessLog, bodyLimit)
	if len(s.cfg.CORSOrigins) > 0 {
		e.Use(s.cors)
	}
	e.NoRoute(func(c *gin.Context) {
		fail(c, http.StatusNotFound, plant.CodeNotFound, "no route "+c.Request.URL.Path)
	})
	e.NoMethod(func(c *gin.Context) {
		fail(c, http.StatusMethodNotAllowed, plant.CodeMethodNotAllowed,
			"method "+c.Request.Method+" not allowed; allowed: "+c.Writer.Header().Get("Allow"))
	})

	e.GET("/healthz", s.loopbackOnly, s.healthz)
	e.GET("/readyz", s.loopbackOnly, s.readyz)
	e.GET("/metrics", s.loopbackOnly, gin.WrapH(s.deps.Registry))
	e.GET("/openapi.json", s.openAPI)
	// The gateway's own page (package web): a client of this API like any
	// other, its files open (they hold no data), every read behind a token.
	page := web.New()
	e.GET("/", gin.WrapH(page))
	e.GET("/ui/*file", gin.WrapH(page))

	api := e.Group("", s.auth.Authenticate)
	// The authorization server's routes: /oauth2/* (token, revoke and
	// auth open) and the owner's /gateway/v1/consents.
	s.auth.Mount(e, api)

	mon := api.Group("/monitoring/v1")
	mon.GET("/plants", s.plantList)
	mp := mon.Group("/plants/:plantId", s.resolvePlant)
	mp.GET("", s.plantBare)
	mp.GET("/installation", s.installation)
	mp.GET("/configuration", s.configuration)
	mp.GET("/devices", s.devices)
	mp.GET("/devices/lean", s.devicesLean)
	mp.GET("/stakeholders", s.stakeholders)
	mp.GET("/logs", s.auth.Need(config.RoleInstaller), s.plantLogs)
	mp.GET("/communication", s.communication)
	mp.GET("/measurements/sets/EnergyBalance", s.plantSet)
	mp.GET("/measurements/sets/EnergyBalance/:period", s.plantSet)
	// Set types in any letter case, like periods ("energybalance").
	mp.GET("/measurements/sets/:setType", s.plantSetAnyCase)
	mp.GET("/measurements/sets/:setType/:period", s.plantSetAnyCase)
	md := mon.Group("/devices/:deviceId", s.resolveDevice)
	md.GET("", s.deviceDetails)
	md.GET("/logs", s.auth.Need(config.RoleInstaller), s.deviceLogs)
	md.GET("/measurements/sets", s.deviceSetList)
	for _, st := range deviceSetTypes {
		h := s.deviceSet(st)
		md.GET("/measurements/sets/"+string(st), h)
		md.GET("/measurements/sets/"+string(st)+"/:period", h)
	}
	md.GET("/measurements/sets/:setType", s.deviceSetAnyCase)
	md.GET("/measurements/sets/:setType/:period", s.deviceSetAnyCase)
	md.GET("/measurement/sets/EnergyMix/:period", s.deviceSet(plant.SetEnergyMix))

	// v2 of the plant energy balance answers as v1 (a client calls it).
	mp2 := api.Group("/monitoring/v2/plants/:plantId", s.resolvePlant)
	mp2.GET("/measurements/sets/EnergyBalance/:period", s.plantSet)
	mp2.GET("/measurements/sets/:setType/:period", s.plantSetAnyCase)

	gc := api.Group("/gridcontrol/v1/plants")
	gc.GET("/:plantId/schedules", s.resolvePlant, s.schedules)
	gc.POST("/:plantId/schedules", s.auth.Need(config.RoleInstaller), s.resolvePlant, s.postSchedules)
	gc.DELETE("/:plantId/schedules/:scheduleId", s.auth.Need(config.RoleInstaller), s.resolvePlant, s.deleteSchedule)
	gc.POST("/eligibilityCheck", s.eligibilityCheck)
	gc.POST("/eligibleCommands", deprecated(obsoleteEligibleCommands), s.eligibleCommands)
	// The spec names this parameter {id}; Gin needs one name per tree
	// position, so it is :plantId here (the OpenAPI document says id).
	gc.GET("/:plantId/settings/:settingsType", s.resolvePlant, s.settings)

	// The home energy manager's consumers, in the gateway's own namespace
	// beside the consents (plantd's; every role reads, installers switch).
	cons := api.Group("/gateway/v1/consumers")
	cons.GET("", s.consumerList)
	cons.GET("/:deviceId", s.consumerByID)
	cons.PUT("/:deviceId/mode", s.auth.Need(config.RoleInstaller), s.setConsumerMode)
	cons.PUT("/:deviceId/plan", s.auth.Need(config.RoleInstaller), s.setConsumerPlan)
	// The grid operator's inputs and the §14a dimming state (every role reads).
	api.GET("/gateway/v1/inputs", s.inputList)
	// The tariffs and the prices of the next hours (every role reads).
	api.GET("/gateway/v1/tariffs", s.tariffList)
	// The day-ahead plan (every role reads).
	api.GET("/gateway/v1/plan", s.planShow)
	// The PV forecast and its accuracy (every role reads).
	api.GET("/gateway/v1/forecast", s.forecastList)

	live := api.Group("/live")
	// The balance and the v2 device list are served by the fast path
	// (livefast.go) too: the same answers through the same checks.
	live.GET(strings.TrimPrefix(routeLiveBalance, "/live"), s.resolvePlant, s.liveBalance)
	live.GET("/v1/devices/:deviceId/measurement/sets/EnergyMix", s.resolveDevice, s.liveMix)
	live.GET("/v1/plants/:plantId/devices", deprecated(obsoleteLiveDevicesV1), s.resolvePlant, s.liveDevices(1))
	live.GET(strings.TrimPrefix(routeLiveDevicesV2, "/live"), s.resolvePlant, s.liveDevices(2))
	live.GET("/v1/devices/:deviceId", s.resolveDevice, s.liveDevice)
	return e
}

// internal logs err with the request id and answers 500.
func (s *Server) internal(c *gin.Context, err error) {
	id := c.GetString(ctxRequestID)
	s.log.Error("request failed", "requestId", id, "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	fail(c, http.StatusInternalServerError, plant.CodeInternal, "internal error; request id "+id)
}

// historyError maps a History error to a problem.
func (s *Server) historyError(c *gin.Context, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		fail(c, http.StatusNotFound, plant.CodeNotFound, err.Error())
	case errors.Is(err, ErrBadQuery):
		fail(c, http.StatusBadRequest, plant.CodeBadParameter, err.Error())
	case errors.Is(err, c.Request.Context().Err()) && c.Request.Context().Err() != nil:
		fail(c, http.StatusServiceUnavailable, plant.CodeUnavailable, "request cancelled")
	default:
		s.internal(c, err)
	}
}

// redirectMigrated answers 308 when the path parameter param holds an old
// id: Location is the same path with the new id, the query string kept.
func redirectMigrated(c *gin.Context, param string, m map[string]string) bool {
	old := c.Param(param)
	nid, ok := m[old]
	if !ok || old == "" {
		return false
	}
	// Replace the segment at the parameter's position in the route.
	tmpl := strings.Split(c.FullPath(), "/")
	segs := strings.Split(c.Request.URL.EscapedPath(), "/")
	for i, t := range tmpl {
		if t == ":"+param && i < len(segs) {
			segs[i] = escapeSegment(nid)
		}
	}
	loc := strings.Join(segs, "/")
	if q := c.Request.URL.RawQuery; q != "" {
		loc += "?" + q
	}
	c.Header("Location", loc)
	c.Header("Content-Length", "0")
	c.Status(http.StatusPermanentRedirect)
	c.Writer.WriteHeaderNow()
	c.Abort()
	return true
}

// escapeSegment escapes an id for a path segment.
func escapeSegment(s string) string { return url.PathEscape(s) }

// resolvePlant looks up {plantId}: 308 when migrated, 404 when unknown.
func (s *Server) resolvePlant(c *gin.Context) {
	p, ok := lookupParam(c, "plantId", "plant", s.migratedPlants, s.deps.Live.Plant)
	if !ok {
		return
	}
	c.Set(ctxPlant, p)
	c.Next()
}

// resolveDevice looks up {deviceId}: 308 when migrated, 404 when unknown.
func (s *Server) resolveDevice(c *gin.Context) {
	d, ok := lookupParam(c, "deviceId", "device", s.migratedDevices, s.deps.Live.Device)
	if !ok {
		return
	}
	p, ok := s.deps.Live.Plant(d.Info.PlantID)
	if !ok {
		s.internal(c, fmt.Errorf("device %q of unknown plant %q", d.Info.ID, d.Info.PlantID))
		return
	}
	c.Set(ctxPlant, p)
	c.Set(ctxDevice, d)
	c.Next()
}

// lookupParam finds the id of the path parameter param with find. It
// answers and returns false when the id has migrated (308 to the new id,
// from migrated) or find knows no such what ("plant", "device": 404).
func lookupParam[T any](c *gin.Context, param, what string, migrated map[string]string, find func(string) (T, bool)) (T, bool) {
	var none T
	if redirectMigrated(c, param, migrated) {
		return none, false
	}
	id := c.Param(param)
	v, ok := find(id)
	if !ok {
		fail(c, http.StatusNotFound, plant.CodeNotFound, fmt.Sprintf("unknown %s %q", what, id), FieldError{Field: param, Message: "unknown " + what})
		return none, false
	}
	return v, true
}

// plantDevices returns the request's plant ({plantId}) and its devices'
// live statuses; false after answering 500 when the statuses fail.
func (s *Server) plantDevices(c *gin.Context) (plant.Plant, []plant.DeviceLive, bool) {
	p := ctxPlantOf(c)
	devs, err := s.deps.Live.DeviceStatuses(p.ID)
	if err != nil {
		s.internal(c, err)
		return p, nil, false
	}
	return p, devs, true
}

func ctxPlantOf(c *gin.Context) plant.Plant {
	v, _ := c.Get(ctxPlant)
	p, _ := v.(plant.Plant)
	return p
}

func ctxDeviceOf(c *gin.Context) plant.DeviceLive {
	v, _ := c.Get(ctxDevice)
	d, _ := v.(plant.DeviceLive)
	return d
}

// isTooLarge reports whether err comes from the body limit.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// readJSONBody reads a JSON request body for a component that parses it
// itself: 415 for another content type, 413 when too large.
func readJSONBody(c *gin.Context) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		fail(c, http.StatusUnsupportedMediaType, plant.CodeUnsupportedMedia, "content type must be application/json")
		return nil, false
	}
	body, err := io.ReadAll(c.Request.Body)
	switch {
	case isTooLarge(err):
		fail(c, http.StatusRequestEntityTooLarge, plant.CodeTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
		return nil, false
	case err != nil:
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "reading the body: "+err.Error())
		return nil, false
	}
	return body, refuseDuplicateKeys(c, body)
}

// decodeJSON reads a JSON body strictly into v: 415 for another content
// type, 413 when too large, 400 for bad JSON, a key given twice or an
// unknown field.
func decodeJSON(c *gin.Context, v any) bool {
	body, ok := readJSONBody(c)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON value")
			if isTooLarge(terr) {
				err = terr
			}
		}
	}
	if err == nil {
		return true
	}
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case isTooLarge(err):
		fail(c, http.StatusRequestEntityTooLarge, plant.CodeTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "unknown field "+f, FieldError{Field: f, Message: "unknown field"})
	case errors.As(err, &ute):
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "wrong type of field "+ute.Field,
			FieldError{Field: ute.Field, Message: "want " + ute.Type.String()})
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "malformed JSON body")
	default:
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "malformed JSON body: "+err.Error())
	}
	return false
}

// gzipMin is the body size from which responses are gzipped when the
// client accepts it.
const gzipMin = 8 << 10

// writeJSON writes v as JSON. With etag, it sets an ETag and answers 304
// to a matching If-None-Match. Large bodies are gzipped when accepted.
func (s *Server) writeJSON(c *gin.Context, status int, v any, etag bool) {
	b, err := json.Marshal(v)
	if err != nil {
		s.internal(c, fmt.Errorf("encode response: %w", err))
		return
	}
	h := c.Writer.Header()
	if etag {
		tag := etagOf(b)
		h.Set("ETag", tag)
		h.Set("Cache-Control", "private, no-cache")
		if inm := c.GetHeader("If-None-Match"); inm != "" && strings.Contains(inm, tag) {
			c.Status(http.StatusNotModified)
			c.Writer.WriteHeaderNow()
			return
		}
	} else {
		h.Set("Cache-Control", "no-store")
	}
	if len(b) >= gzipMin && strings.Contains(c.GetHeader("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		b = buf.Bytes()
	}
	c.Data(status, "application/json; charset=utf-8", b)
}

// deprecated marks the answers of an obsolete route (openapi.go): the
// Deprecation header of RFC 9745 and a Link to the successor, its path
// parameters filled from the request's.
func deprecated(d apidoc.Deprecation) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Deprecation", d.Header())
		if d.Successor != "" {
			succ := d.Successor
			for _, p := range c.Params {
				succ = strings.ReplaceAll(succ, "{"+p.Key+"}", url.PathEscape(p.Value))
			}
			h.Set("Link", "<"+succ+`>; rel="successor-version"`)
		}
		c.Next()
	}
}

// openAPI serves the OpenAPI document.
func (s *Server) openAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", s.openapi)
}

// healthz reports storage, devices and the cloud connection.
func (s *Server) healthz(c *gin.Context) {
	type devState struct {
		Total, Ok, Unreachable int
	}
	out := map[string]any{}
	status := http.StatusOK
	storage := map[string]any{"status": "Ok"}
	if err := s.deps.History.Health(); err != nil {
		storage = map[string]any{"status": "Error", "error": err.Error()}
		status = http.StatusServiceUnavailable
	}
	if su, ok := s.deps.History.(StorageUsage); ok {
		written, known, size := su.StorageUsage()
		if known {
			storage["bytesWritten"] = written
		}
		storage["databaseBytes"] = size
	}
	out["storage"] = storage
	var ds devState
	for _, p := range s.deps.Live.Plants() {
		devs, _ := s.deps.Live.DeviceStatuses(p.ID)
		for _, d := range devs {
			if !d.Info.Active() {
				continue
			}
			ds.Total++
			switch d.Comm.Status {
			case plant.CommOk, plant.CommPartial:
				ds.Ok++
			default:
				ds.Unreachable++
			}
		}
	}
	out["devices"] = map[string]int{"total": ds.Total, "ok": ds.Ok, "unreachable": ds.Unreachable}
	st, since := s.connectedState()
	mq := map[string]any{"status": st}
	if !since.IsZero() {
		mq["since"] = since.UTC().Format(timeRFC3339)
	}
	if uh, ok := s.deps.Connected.(UplinkHealth); ok {
		us := uh.UplinkHealth()
		if us.Broker != "" {
			mq["broker"] = us.Broker
		}
		if us.LastError != "" {
			mq["lastError"] = us.LastError
		}
		streams := us.Streams
		if streams == nil {
			streams = []UplinkStream{}
		}
		mq["streams"] = streams
	}
	out["mqtt"] = mq
	switch {
	case status != http.StatusOK:
		out["status"] = "Error"
	case ds.Unreachable > 0:
		// Still 200: the gateway works, some devices do not answer.
		out["status"] = "Degraded"
	default:
		out["status"] = "Ok"
	}
	s.writeJSON(c, status, out, false)
}

// readyz answers whether the gateway serves data: 200 when the storage
// works and every active device has answered at least once (or been given
// up on), 503 with the reason otherwise. A load balancer or systemd check
// asks it; /healthz says how well the gateway is doing.
func (s *Server) readyz(c *gin.Context) {
	var waiting []string
	reason := ""
	if err := s.deps.History.Health(); err != nil {
		reason = "storage: " + err.Error()
	}
	for _, p := range s.deps.Live.Plants() {
		devs, _ := s.deps.Live.DeviceStatuses(p.ID)
		for _, d := range devs {
			if d.Info.Active() && d.Info.Kind != kind.Gateway && d.Comm.LastContact.IsZero() && !offline(d) {
				waiting = append(waiting, d.Info.ID)
			}
		}
	}
	if reason == "" && len(waiting) > 0 {
		reason = "no first answer yet from " + strings.Join(waiting, ", ")
	}
	if reason != "" {
		s.writeJSON(c, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": reason}, false)
		return
	}
	s.writeJSON(c, http.StatusOK, map[string]any{"ready": true}, false)
}
