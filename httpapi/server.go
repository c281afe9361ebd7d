package httpapi

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/httpapi/oauth2"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/metrics"
	"plantd/plant"
)

// maxBody is the largest request body accepted (413 above).
const maxBody = 1 << 20

// ctxRequestID is the context key of the request id the middleware sets.
const ctxRequestID = "plantd.requestID"

// Config configures the server. ConfigFrom builds it from plantd's config.
type Config struct {
	// Listen is host:port (default 127.0.0.1:8080).
	Listen string
	// TLSCert and TLSKey (PEM files, both or neither) switch on HTTPS.
	TLSCert, TLSKey string
	// RateLimit per credential; zero values take config's defaults (20/s,
	// burst 40).
	RateLimit config.RateLimit
	// Plants carry the installation and location data of the API.
	Plants []config.Plant
	// Tokens are the static bearer tokens (hashed).
	Tokens []config.Token
	// OAuthClients may get tokens from POST /oauth2/token.
	OAuthClients []oauthconfig.Client
	// TokenTTL of issued OAuth2 tokens (default 300 s).
	TokenTTL time.Duration
	// FailedLogins limits failed logins per source address (default 10,
	// then one per 6 s).
	FailedLogins FailedLogins
	// Migrated old ids → new ids (308 redirects).
	Migrated config.Migrated
	// OpenOps serves /healthz and /metrics to any address, not only to
	// loopback clients.
	OpenOps bool
	// TrustedProxies are the addresses or CIDRs of reverse proxies whose
	// X-Forwarded-For names the client (for the access log); empty: none,
	// the client is the peer of the connection.
	TrustedProxies []string
	// CORSOrigins lists allowed origins ("*" for any); empty = CORS off.
	CORSOrigins []string
	// Stakeholders by plant id (modelled; DESIGN §4).
	Stakeholders map[string][]Stakeholder
	// ProductIDs are the vendors' numeric product ids by device id, sent
	// as the devices' productId (omitted for a device not listed).
	ProductIDs map[string]int
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout of the
	// http.Server (defaults 5 s, 15 s, 30 s, 120 s); ShutdownTimeout bounds
	// the graceful shutdown (default 10 s).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, ShutdownTimeout time.Duration
}

// Stakeholder is a person or company with a role at a plant.
type Stakeholder struct {
	Role  string `json:"role"` // owner | installer | operator | connectedServiceProvider
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	Phone string `json:"phone,omitempty"`
}

// ConfigFrom takes the HTTP server's settings from plantd's config.
func ConfigFrom(c *config.Config) Config {
	return Config{
		Listen:       c.HTTP.Listen,
		TLSCert:      c.HTTP.TLSCert,
		TLSKey:       c.HTTP.TLSKey,
		RateLimit:    c.HTTP.RateLimit,
		Plants:       c.Plants,
		Tokens:       c.Tokens,
		OAuthClients: c.OAuthClients,
		Migrated:     c.Migrated,
		ProductIDs:   productIDs(c.Devices),

		TrustedProxies: c.HTTP.TrustedProxies,
		CORSOrigins:    c.HTTP.CORSOrigins,
		OpenOps:        c.HTTP.OpenOps,
		TokenTTL:       c.HTTP.TokenTTL,
		Stakeholders:   stakeholdersOf(c.Plants),
	}
}

// productIDs maps the devices that have a product id to it.
func productIDs(devs []config.Device) map[string]int {
	m := map[string]int{}
	for _, d := range devs {
		if d.ProductID > 0 {
			m[d.ID] = d.ProductID
		}
	}
	return m
}

// stakeholdersOf maps the plants' configured stakeholders by plant id.
func stakeholdersOf(plants []config.Plant) map[string][]Stakeholder {
	out := map[string][]Stakeholder{}
	for _, p := range plants {
		for _, sh := range p.Stakeholders {
			out[p.ID] = append(out[p.ID], Stakeholder{Role: sh.Role, Name: sh.Name, Email: sh.Email, Phone: sh.Phone})
		}
	}
	return out
}

// SetCredentials replaces the bearer tokens and OAuth2 clients of a
// running server (a config reload), checked as New checks them: on an
// error the old ones stay. Access tokens issued to a client that is gone
// or changed stop working; the others stay valid.
func (s *Server) SetCredentials(tokens []config.Token, clients []oauthconfig.Client) error {
	return s.auth.SetCredentials(tokens, clients)
}

// ConnectedService reports the state of the cloud connection (MQTT).
type ConnectedService interface {
	// ConnectedState returns a status word (Connected, Disconnected,
	// NotConfigured) and since when it holds (zero: unknown).
	ConnectedState() (status string, since time.Time)
}

// StorageUsage is optionally implemented by Deps.History: the storage's
// wear figures for /healthz.
type StorageUsage interface {
	// StorageUsage returns the bytes the process wrote to the block layer
	// since it started (ok false: not known on this system) and the size
	// of the database with its WAL.
	StorageUsage() (bytesWritten uint64, ok bool, databaseBytes int64)
}

// UplinkHealth is optionally implemented by Deps.Connected: the cloud
// uplink's figures for /healthz.
type UplinkHealth interface {
	UplinkHealth() UplinkState
}

// UplinkState is the uplink's state at /healthz.
type UplinkState struct {
	// Broker is the broker URL in use, or last tried ("" none yet);
	// LastError the last connection error ("" none).
	Broker, LastError string
	// Streams are the outbox streams.
	Streams []UplinkStream
}

// UplinkStream is one outbox stream of the uplink.
type UplinkStream struct {
	Stream string `json:"stream"`
	// Depth is the number of unsent messages, OldestUnsentAgeSeconds the
	// age of the oldest (absent when empty).
	Depth                  int      `json:"depth"`
	OldestUnsentAgeSeconds *float64 `json:"oldestUnsentAgeSeconds,omitempty"`
	// Dropped counts messages dropped by the outbox's caps.
	Dropped uint64 `json:"dropped,omitempty"`
}

// Deps are the server's collaborators.
type Deps struct {
	// Live is required (the live state cache, *plant.Live).
	Live Live
	// History is required (the store, through cmd/plantd's adapter).
	History History
	// GridControl is optional: it stores and runs schedules (a
	// *gridcontrol.Controller); nil answers POST schedules with 501.
	GridControl GridControl
	// Connected is optional; nil reports "NotConfigured".
	Connected ConnectedService
	// Consumers is optional: the home energy manager (a
	// *consumer.Manager); nil lists no consumers and answers PUT mode 404.
	Consumers Consumers
	// Inputs is optional: the grid operator's inputs (cmd/plantd's); nil
	// lists none at GET /gateway/v1/inputs.
	Inputs Inputs
	// EEBus is optional: the control box over EEBus (cmd/plantd's); nil
	// adds no eebus member to GET /gateway/v1/inputs.
	EEBus EEBus
	// Tariffs is optional: the tariffs (a *tariffs.Service); nil answers
	// GET /gateway/v1/tariffs with configured false.
	Tariffs Tariffs
	// Planner is optional: the day-ahead plan's runner (a
	// *siteplan.Runner); nil answers GET /gateway/v1/plan with
	// configured false.
	Planner Planner
	// Forecasts is optional: the PV forecast (a *forecast.Service); nil
	// lists none at GET /gateway/v1/forecast.
	Forecasts Forecasts
	// Registry registers the API's metrics and is served at /metrics; nil
	// = a new registry of the server's own.
	Registry *metrics.Registry
	// Now is the clock of the data (nil = time.Now): the default Date of
	// queries. The demo passes its simulated clock.
	Now func() time.Time
	// WallClock runs token expiry and rate limits (nil = time.Now); it is
	// never the demo's simulated clock, on which a 300 s token would die
	// within a second.
	WallClock func() time.Time
}

// GridControl stores, lists and runs grid-control schedules, and reads
// the grid settings in effect from the devices.
type GridControl interface {
	SubmitJSON(ctx context.Context, plantID string, by gridcontrol.Origin, body []byte, opts ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error)
	Schedules(plantID string, opts ...gridcontrol.ListOption) ([]gridcontrol.Schedule, error)
	Cancel(ctx context.Context, plantID, scheduleID string, by gridcontrol.Origin) error
	Settings(ctx context.Context, plantID, settingsType string) ([]gridcontrol.Setting, error)
}

// Server is the HTTP API server.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	now     func() time.Time
	engine  *gin.Engine
	auth    authServer
	metrics *apiMetrics
	tls     *tls.Config // nil: plain HTTP
	plants  map[string]config.Plant
	// reverse of cfg.Migrated for the plant list (new ids only)
	migratedPlants, migratedDevices map[string]string
	openapi                         []byte
	answers                         answerCache
}

// New validates cfg and deps and builds the server with its routes.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Server, error) {
	if deps.Live == nil {
		return nil, errors.New("httpapi: Deps.Live is required")
	}
	if deps.History == nil {
		return nil, errors.New("httpapi: Deps.History is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	// The config's defaults (config/defaults.go) for what it sets; the
	// timeouts below are the server's own.
	dflt := config.Default().HTTP
	if cfg.Listen == "" {
		cfg.Listen = dflt.Listen
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("httpapi: tls cert and key must be given together")
	}
	// The TLS files are read here, not in Serve: a key plantd cannot read
	// stops it at start, before it reports ready.
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("httpapi: tls certificate %s, key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.TokenTTL, dflt.TokenTTL)
	def(&cfg.ReadHeaderTimeout, 5*time.Second)
	def(&cfg.ReadTimeout, 15*time.Second)
	def(&cfg.WriteTimeout, 30*time.Second)
	def(&cfg.IdleTimeout, 120*time.Second)
	def(&cfg.ShutdownTimeout, 10*time.Second)
	if cfg.RateLimit.RequestsPerSecond <= 0 {
		cfg.RateLimit.RequestsPerSecond = dflt.RateLimit.RequestsPerSecond
	}
	if cfg.RateLimit.Burst < 1 {
		cfg.RateLimit.Burst = dflt.RateLimit.Burst
	}
	if deps.Registry == nil {
		deps.Registry = metrics.NewRegistry()
	}
	if deps.WallClock == nil {
		deps.WallClock = time.Now
	}
	s := &Server{
		cfg:             cfg,
		deps:            deps,
		log:             logger, // the caller names the component
		now:             deps.Now,
		metrics:         newMetrics(deps.Registry),
		tls:             tlsCfg,
		plants:          make(map[string]config.Plant, len(cfg.Plants)),
		migratedPlants:  cfg.Migrated.Plants,
		migratedDevices: cfg.Migrated.Devices,
	}
	auth, err := oauth2.New(oauth2.Config{Tokens: cfg.Tokens, OAuthClients: cfg.OAuthClients, TokenTTL: cfg.TokenTTL,
		RateLimit: cfg.RateLimit, FailedLogins: cfg.FailedLogins}, deps.WallClock, logger, authHost{s})
	if err != nil {
		return nil, err
	}
	s.auth = auth
	for _, p := range cfg.Plants {
		s.plants[p.ID] = p
	}
	s.openapi, err = buildOpenAPI()
	if err != nil {
		return nil, fmt.Errorf("httpapi: openapi document: %w", err)
	}
	for _, p := range s.cfg.TrustedProxies {
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			return nil, fmt.Errorf("httpapi: trusted proxy %q: want an IP address or CIDR", p)
		}
	}
	s.engine = s.routes()
	return s, nil
}

// Handler returns the API's http.Handler: the server itself (ServeHTTP,
// livefast.go), which hands every request but the live answers of its
// fast path to the Gin engine.
func (s *Server) Handler() http.Handler { return s }

// Run listens on Config.Listen and serves until ctx ends, then shuts down
// gracefully. It returns nil after a clean shutdown.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("httpapi: listen %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends (see Run); it closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.tls != nil {
		srv.TLSConfig = s.tls.Clone()
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	s.log.Info("http api listening", "addr", ln.Addr().String(), "tls", s.tls != nil)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	gctx, stopGuard := context.WithCancel(ctx)
	guardDone := make(chan struct{})
	go func() { defer close(guardDone); s.auth.Run(gctx) }()
	defer func() { stopGuard(); <-guardDone }()
	select {
	case err := <-errc:
		return fmt.Errorf("httpapi: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("httpapi: shutdown: %w", err)
	}
	return nil
}

// newRequestID returns 16 random hex digits. A request id names a request
// in the log, it guards nothing: math/rand's generator (ChaCha8, seeded by
// the runtime) makes it without the system call crypto/rand costs.
func newRequestID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// requestIDOf is the request id of a request whose X-Request-Id is id:
// id when it is sane (1-64 printable ASCII characters), else a new one.
func requestIDOf(id string) string {
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return newRequestID()
	}
	return id
}

// requestID takes a sane X-Request-Id or makes one, and echoes it.
func requestID(c *gin.Context) {
	id := requestIDOf(c.GetHeader("X-Request-Id"))
	c.Set(ctxRequestID, id)
	c.Header("X-Request-Id", id)
	c.Next()
}

// recoverer turns a panic into a logged 500 problem.
func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			id := c.GetString(ctxRequestID)
			s.log.Error("panic in handler", "requestId", id, "method", c.Request.Method,
				"path", c.Request.URL.Path, "panic", fmt.Sprint(r))
			if !c.Writer.Written() {
				fail(c, http.StatusInternalServerError, plant.CodeInternal, "internal error; request id "+id)
			}
			c.Abort()
		}
	}()
	c.Next()
}

// accessLog logs every request at Debug.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	if !s.log.Enabled(c.Request.Context(), slog.LevelDebug) {
		return
	}
	s.log.Debug("request", "requestId", c.GetString(ctxRequestID), "method", c.Request.Method,
		"path", c.Request.URL.Path, "route", c.FullPath(), "status", c.Writer.Status(),
		"bytes", c.Writer.Size(), "took", time.Since(start), "remote", c.ClientIP())
}

// bodyLimit answers 413 for a declared body over maxBody and caps the read.
func bodyLimit(c *gin.Context) {
	if c.Request.ContentLength > maxBody {
		fail(c, http.StatusRequestEntityTooLarge, plant.CodeTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
		return
	}
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	}
	c.Next()
}

// cors answers CORS requests for the configured origins.
func (s *Server) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" {
		c.Next()
		return
	}
	if !slices.Contains(s.cfg.CORSOrigins, "*") && !slices.Contains(s.cfg.CORSOrigins, origin) {
		c.Next()
		return
	}
	h := c.Writer.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		c.AbortWithStatus(http.StatusNoContent)
		return
	}
	c.Next()
}

// loopbackOnly refuses non-loopback clients unless OpenOps is set.
func (s *Server) loopbackOnly(c *gin.Context) {
	if s.cfg.OpenOps {
		c.Next()
		return
	}
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fail(c, http.StatusForbidden, plant.CodeForbidden, "only served to loopback clients")
		return
	}
	c.Next()
}
