//go:build race

package eebus

import (
	"sync"
	"testing"
	"time"

	spineapi "github.com/enbility/spine-go/api"
	"github.com/enbility/spine-go/model"
	"github.com/enbility/spine-go/spine"
)

// TestReconnectsLeaveEventBus: a peer's connection set up and removed
// again and again (a control box reconnecting) while another connection's
// messages are published on spine-go's event bus must not write the bus's
// subscriber list, which Publish reads without a lock (keepSubscribed).
// The race detector is the check: without keepSubscribed every set-up
// after a removal subscribes the local device anew and every removal
// unsubscribes it, beside the publishing goroutine. Built with -race only,
// where it can fail.
func TestReconnectsLeaveEventBus(t *testing.T) {
	cert, err := LoadOrCreateCert(t.TempDir(), "race")
	if err != nil {
		t.Fatal(err)
	}
	const box = "0123456789abcdef0123456789abcdef01234567"
	// A static peer: the node is never started, and its discovery is not
	// mDNS, so nothing here touches the network.
	n, err := NewNode(NodeSpec{Cert: cert, Brand: "plantd", Model: "plantd", Serial: "race",
		DeviceType: model.DeviceTypeTypeEnergyManagementSystem, EntityType: model.EntityTypeTypeCEM,
		Heartbeat: time.Second, Peers: map[string]string{box: "127.0.0.1:4712"}}, NodeEvents{})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 200
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the box's connections, one after the other
		defer wg.Done()
		for range rounds {
			n.SetupRemoteDevice(box, discardWriter{})
			n.RemoteSKIDisconnected(box)
		}
	}()
	go func() { // another connection's events, as its messages publish them
		defer wg.Done()
		for range rounds {
			spine.Events.Publish(spineapi.EventPayload{Ski: "fedcba9876543210fedcba9876543210fedcba98",
				EventType: spineapi.EventTypeDataChange, ChangeType: spineapi.ElementChangeUpdate})
		}
	}()
	wg.Wait()
	if n.device.RemoteDeviceForSki(keepSubscribedSKI) == nil {
		t.Fatal("keepSubscribed's remote device is gone")
	}
	if n.device.RemoteDeviceForSki(box) != nil {
		t.Fatal("the box's remote device outlived its removal")
	}
}
