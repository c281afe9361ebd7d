package eebus

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	shipapi "github.com/enbility/ship-go/api"
	"github.com/enbility/ship-go/cert"
	"github.com/enbility/ship-go/hub"
	"github.com/enbility/ship-go/mdns"
	spineapi "github.com/enbility/spine-go/api"
	"github.com/enbility/spine-go/model"
	"github.com/enbility/spine-go/spine"
)

// NodeSpec describes one EEBus node: plantd (a CEM entity of an energy
// management system) or, in tests and the simulator, a control box (a
// grid guard entity of an electricity supply system).
type NodeSpec struct {
	Cert                 tls.Certificate
	Port                 int
	Brand, Model, Serial string
	DeviceType           model.DeviceTypeType
	EntityType           model.EntityTypeType
	// Heartbeat is the period of the node's own heartbeat (its device
	// diagnosis server), sent to the peers subscribed to it.
	Heartbeat time.Duration
	// Trusted are the peers' SKIs the node pairs with (normalized).
	Trusted []string
	// Interfaces are the network interfaces mDNS uses (nil: all).
	Interfaces []string
	// Peers are peers at known addresses (SKI to host:port), reported to
	// the connection hub as if mDNS had found them; with Peers, mDNS is
	// not used (tests on loopback, a box on another subnet).
	Peers map[string]string
}

// NodeEvents are the hub's reports a node passes on; any may be nil.
// They are called on the stack's goroutines and must not block.
type NodeEvents struct {
	Connected    func(ski string)
	Disconnected func(ski string)
	Pairing      func(ski string, state shipapi.ConnectionState, err error)
}

// Node is an EEBus node: the SHIP connection hub (TLS WebSockets server
// and client, with mDNS) and the local SPINE device with one entity, on
// which the use cases are added. It is eebus-go's service without its
// configuration type, so that the discovery can be given (NodeSpec.Peers).
type Node struct {
	spec   NodeSpec
	ski    string
	local  *shipapi.ServiceDetails
	device spineapi.DeviceLocalInterface
	entity spineapi.EntityLocalInterface
	hub    *hub.Hub
	events NodeEvents

	mu      sync.Mutex
	trusted map[string]bool
}

// NewNode sets a node up; Start starts its server and discovery.
func NewNode(spec NodeSpec, events NodeEvents) (*Node, error) {
	if len(spec.Cert.Certificate) == 0 {
		return nil, fmt.Errorf("eebus node: no certificate")
	}
	leaf, err := x509.ParseCertificate(spec.Cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("eebus node: certificate: %w", err)
	}
	ski, err := cert.SkiFromCertificate(leaf)
	if err != nil {
		return nil, fmt.Errorf("eebus node: certificate's SKI: %w", err)
	}
	if spec.Heartbeat <= 0 {
		spec.Heartbeat = 4 * time.Second
	}
	n := &Node{spec: spec, ski: ski, events: events, trusted: map[string]bool{}}
	// The SHIP id and the SPINE device address are made of brand, model
	// and serial (SPINE 7.1.1.2: "d:_n:<vendor>_<model>-<serial>" for a
	// vendor given by name).
	shipID := strings.Join([]string{spec.Brand, spec.Model, spec.Serial}, "-")
	n.local = shipapi.NewServiceDetails(ski)
	n.local.SetShipID(shipID)
	n.local.SetDeviceType(string(spec.DeviceType))
	addr := fmt.Sprintf("d:_n:%s_%s-%s", spec.Brand, spec.Model, spec.Serial)
	n.device = spine.NewDeviceLocal(spec.Brand, spec.Model, spec.Serial, shipID, addr, spec.DeviceType,
		model.NetworkManagementFeatureSetTypeSmart)
	// Entity 0 is the device information the device made itself.
	id := model.AddressEntityType(len(n.device.Entities()))
	n.entity = spine.NewEntityLocal(n.device, spec.EntityType, []model.AddressEntityType{id}, spec.Heartbeat)
	n.device.AddEntity(n.entity)
	n.keepSubscribed()
	var disc shipapi.MdnsInterface
	if len(spec.Peers) > 0 {
		disc = &staticPeers{peers: spec.Peers}
	} else {
		disc = mdns.NewMDNS(ski, spec.Brand, spec.Model, string(spec.DeviceType), shipID, shipID, spec.Port,
			spec.Interfaces, mdns.MdnsProviderSelectionAll)
	}
	n.hub = hub.NewHub(n, disc, spec.Port, spec.Cert, n.local)
	for _, s := range spec.Trusted {
		n.trusted[s] = true
	}
	return n, nil
}

// SKI is the node's own SKI.
func (n *Node) SKI() string { return n.ski }

// Entity is the node's entity, which the use cases are added to.
func (n *Node) Entity() spineapi.EntityLocalInterface { return n.entity }

// Device is the node's local SPINE device.
func (n *Node) Device() spineapi.DeviceLocalInterface { return n.device }

// Start starts the SHIP server on the node's port, every interface, and
// the discovery, and pairs with the trusted SKIs (connecting to them when
// found, accepting them when they connect).
func (n *Node) Start() {
	n.hub.Start()
	for _, s := range n.spec.Trusted {
		n.hub.RegisterRemoteSKI(s)
	}
}

// Stop closes the connections, the server and the discovery.
func (n *Node) Stop() { n.hub.Shutdown() }

// Trusted reports whether ski is one the node pairs with.
func (n *Node) Trusted(ski string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.trusted[ski]
}

// The hub's reader (shipapi.HubReaderInterface).

func (n *Node) RemoteSKIConnected(ski string) {
	if n.events.Connected != nil {
		n.events.Connected(ski)
	}
}

func (n *Node) RemoteSKIDisconnected(ski string) {
	n.device.RemoveRemoteDeviceConnection(ski)
	if n.events.Disconnected != nil {
		n.events.Disconnected(ski)
	}
}

func (n *Node) SetupRemoteDevice(ski string, w shipapi.ShipConnectionDataWriterInterface) shipapi.ShipConnectionDataReaderInterface {
	return n.device.SetupRemoteDevice(ski, w)
}

func (n *Node) VisibleRemoteServicesUpdated([]shipapi.RemoteService) {}

func (n *Node) ServiceShipIDUpdate(string, string) {}

func (n *Node) ServicePairingDetailUpdate(ski string, d *shipapi.ConnectionStateDetail) {
	if n.events.Pairing != nil {
		n.events.Pairing(ski, d.State(), d.Error())
	}
}

// AllowWaitingForTrust is false: nobody approves a pairing at run time;
// only the configured SKIs are trusted.
func (n *Node) AllowWaitingForTrust(string) bool { return false }

// keepSubscribedSKI names the remote device keepSubscribed sets up: not
// a SKI (those are 40 hex digits), so no peer can have it.
const keepSubscribedSKI = "plantd-keeps-the-local-device-subscribed"

// keepSubscribed sets up a remote device that never connects, before any
// connection exists, so that the local device stays subscribed to
// spine-go's process-wide event bus for good. spine-go v0.7.0 subscribes
// the local device when a remote device is set up (if it is not yet) and
// unsubscribes it when the last one is removed, while its Publish reads
// the subscriber list without the bus's lock: a control box reconnecting
// (its old connection removed while the new one is set up, or delivers
// messages) raced on that list (TestControlBox under -race, now and
// then; TestReconnectsLeaveEventBus shows it at once without this). With
// one remote device always there the list is never written again after
// the use cases subscribed at start. The device sends into nothing (its
// detailed discovery request at set-up), has no address, so no message
// of a peer can reach it, and subscribes to nothing.
func (n *Node) keepSubscribed() {
	n.device.SetupRemoteDevice(keepSubscribedSKI, discardWriter{})
}

// discardWriter is the connection of keepSubscribed's remote device.
type discardWriter struct{}

func (discardWriter) WriteShipMessageWithPayload([]byte) {}

// staticPeers is discovery without mDNS: the configured peers, reported
// at start and whenever the hub asks again (after a failed attempt).
type staticPeers struct {
	mu    sync.Mutex
	cb    shipapi.MdnsReportInterface
	peers map[string]string
}

func (s *staticPeers) Start(cb shipapi.MdnsReportInterface) error {
	s.mu.Lock()
	s.cb = cb
	s.mu.Unlock()
	go s.RequestMdnsEntries()
	return nil
}

func (s *staticPeers) Shutdown()                {}
func (s *staticPeers) AnnounceMdnsEntry() error { return nil }
func (s *staticPeers) UnannounceMdnsEntry()     {}
func (s *staticPeers) SetAutoAccept(bool)       {}
func (s *staticPeers) RequestMdnsEntries() {
	s.mu.Lock()
	cb := s.cb
	s.mu.Unlock()
	if cb == nil {
		return
	}
	entries := map[string]*shipapi.MdnsEntry{}
	for ski, addr := range s.peers {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		e := &shipapi.MdnsEntry{Name: ski, Ski: ski, Identifier: ski, Path: "/ship/", Host: host, Port: p}
		if ip := net.ParseIP(host); ip != nil {
			e.Host, e.Addresses = "", []net.IP{ip}
		}
		entries[ski] = e
	}
	cb.ReportMdnsEntries(entries, true)
}

// Port is the node's SHIP server port.
func (n *Node) Port() int { return n.spec.Port }
