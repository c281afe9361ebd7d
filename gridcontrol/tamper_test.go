package gridcontrol_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/modbus"
	"plantd/sunspec"
)

// thirdParty is another Modbus master on the plant LAN: its own
// connection to each simulated inverter's TCP port, not plantd's.
type thirdParty struct {
	r       *rig
	clients map[string]sunspec.ReadWriter
}

func newThirdParty(r *rig) *thirdParty {
	pool := modbus.NewPool(nil)
	r.t.Cleanup(func() { _ = pool.Close() })
	tp := &thirdParty{r: r, clients: map[string]sunspec.ReadWriter{}}
	for _, d := range r.sim.Devices() {
		tp.clients[d.ID()] = pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: time.Second}).ControlUnit(d.Unit(), time.Second)
	}
	return tp
}

func (tp *thirdParty) ref(id string, model uint16) sunspec.ModelRef {
	tp.r.t.Helper()
	d, _ := tp.r.live.Device(id)
	ref, ok := d.Discovered.(*sunspec.Device).Ref(model)
	if !ok {
		tp.r.t.Fatalf("device %s has no model %d", id, model)
	}
	return ref
}

// write sets one point. plantd may put it back before the write's own
// read-back: a read-back that differs is no failure here.
func (tp *thirdParty) write(id string, model uint16, point string, v float64) {
	tp.r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := sunspec.WritePoints(ctx, tp.clients[id], tp.ref(id, model), []sunspec.PointValue{{Point: point, Value: v}})
	if err != nil && !errors.Is(err, sunspec.ErrReadBack) {
		tp.r.t.Fatalf("third party: write %s %s = %g: %v", id, point, v, err)
	}
}

// point reads one point over the third party's connection.
func (tp *thirdParty) point(id string, model uint16, point string) float64 {
	tp.r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	inst, err := sunspec.ReadModel(ctx, tp.clients[id], tp.ref(id, model))
	if err != nil {
		tp.r.t.Fatalf("third party: read %s model %d: %v", id, model, err)
	}
	v, err := inst.Float(point)
	if err != nil {
		tp.r.t.Fatalf("third party: %s %s: %v", id, point, err)
	}
	return v
}

// tamperEpisode is a third party's write of one point of a held limit.
type tamperEpisode struct {
	id, point string
	model     uint16
	value     float64
	want      float64 // the point back at
	found     string  // in the log entry
}

var (
	pct100On123 = tamperEpisode{"inv1", "WMaxLimPct", 123, 100, 20, "WMaxLimPct found 100, wanted 20"}
	pct100On704 = tamperEpisode{"inv2", "WMaxLimPct", 704, 100, 20, "WMaxLimPct found 100, wanted 20"}
	enaOffOn123 = tamperEpisode{"inv1", "WMaxLim_Ena", 123, 0, 1, "WMaxLim_Ena found 0, wanted 1"}
	enaOffOn704 = tamperEpisode{"inv2", "WMaxLimPctEna", 704, 0, 1, "WMaxLimPctEna found 0, wanted 1"}
)

// TestTamperedLimitReasserted: under a grid operator's 20 % window a third
// party writes WMaxLimPct = 100 straight to each inverter over its own
// Modbus TCP connection, then, in a second episode, clears the limit's
// enable (123 WMaxLim_Ena, 704 WMaxLimPctEna). plantd sees it in its next
// poll and writes the limit again at once: the register is back at 20 %
// within 2 s, one ControlTampered entry per episode names the point with
// the value found and the one wanted, and the counter rises. At the rig's
// cadence (polls every 250 ms, cycle 200 ms) and at a plant's (both 1 s,
// the plant; two episodes).
func TestTamperedLimitReasserted(t *testing.T) {
	t.Parallel()
	t.Run("rig", func(t *testing.T) {
		t.Parallel()
		testTamper(t, rigOpts{}, false, pct100On123, pct100On704, enaOffOn123, enaOffOn704)
	})
	t.Run("restarted", func(t *testing.T) {
		// plantd restarted inside the window continues from the limit
		// the devices hold (renewing it at once): held, and compared,
		// from there.
		t.Parallel()
		testTamper(t, rigOpts{}, true, pct100On123, enaOffOn704)
	})
	t.Run("5s poll", func(t *testing.T) {
		// A device polled every 5 s (the default): the cycle reads the
		// held model itself between polls, at most once a second, so a
		// foreign value is still gone within 2 s. One episode (the 1 s
		// case has both models'; each episode here waits five polls, 25 s).
		t.Parallel()
		if testing.Short() {
			t.Skip("an episode at a 5 s poll (~25 s)")
		}
		// A reversion timeout long enough that no renewal (from half of
		// it) rewrites the limit inside the test and hides the check.
		testTamper(t, rigOpts{poll: 5 * time.Second, cfg: gridcontrol.Config{Cycle: time.Second, RevertTimeout: 10 * time.Minute}}, false, pct100On704)
	})
	t.Run("1s", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("two episodes at a 1 s poll and cycle (~15 s)")
		}
		testTamper(t, rigOpts{poll: time.Second, cfg: gridcontrol.Config{Cycle: time.Second}}, false, pct100On704, enaOffOn123)
	})
}

func testTamper(t *testing.T, o rigOpts, restart bool, episodes ...tamperEpisode) {
	r := newRig(t, o)
	r.tamperOK.Store(true)
	tp := newThirdParty(r)
	if _, err := r.controller().Submit(t.Context(), "demo", gridOperator, []gridcontrol.Order{{Command: "opModMaxLimW", For: time.Hour, Value: ptr(20.0), Unit: "%"}}); err != nil {
		t.Fatal(err)
	}
	r.await("20 % on both", 10*time.Second, func() bool { return r.limitOf("inv1") == 20 && r.limitOf("inv2") == 20 })
	if restart {
		r.stop()
		r.start()
		<-r.controller().Loaded()
	}

	// Waits for polls: a few poll intervals, at least 10 s.
	pollWait := max(10*time.Second, 4*o.poll)
	entries := map[string]int{}
	for _, ep := range episodes {
		// plantd's own last write is behind two polls: the check judges
		// every poll from here on.
		polled := r.answered(ep.id)
		r.await("two more polls", pollWait, func() bool { return r.answered(ep.id) >= polled+2 })
		before := r.controller().Stats().Tampered[ep.id]

		tp.write(ep.id, ep.model, ep.point, ep.value)
		tampered := time.Now()
		// The register trace: read every 20 ms until it is back.
		var back time.Duration
		var reads int
		look := time.NewTicker(20 * time.Millisecond)
		defer look.Stop()
		for deadline := tampered.Add(10 * time.Second); ; reads++ {
			if reads > 0 {
				<-look.C
			}
			if tp.point(ep.id, ep.model, ep.point) == ep.want && tp.point(ep.id, ep.model, "WMaxLimPct") == 20 {
				back = time.Since(tampered)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s still not back at %g 10 s after the third party wrote %g", ep.id, ep.point, ep.want, ep.value)
			}
		}
		t.Logf("%s model %d %s = %g by a third party: back at %g after %s (%d reads of the register)", ep.id, ep.model, ep.point, ep.value, ep.want, back.Round(time.Millisecond), reads)
		if back > 2*time.Second {
			t.Errorf("%s %s back after %s, want within 2 s", ep.id, ep.point, back.Round(time.Millisecond))
		}
		if l := r.limitOf(ep.id); l != 20 {
			t.Errorf("%s: limit in effect %g %% after the rewrite, want 20", ep.id, l)
		}

		entries[ep.id]++
		want := entries[ep.id]
		what := fmt.Sprintf("device %s", ep.id)
		r.await("the episode in the plant log", 5*time.Second, func() bool {
			return r.logCount("ControlTampered", what, ep.found) == 1 && r.logCount("ControlTampered", what) == want
		})
		// The episode is over once a poll reads the point back as
		// written: later polls add no entry.
		polled = r.answered(ep.id)
		r.await("three more polls", pollWait, func() bool { return r.answered(ep.id) >= polled+3 })
		if n := r.logCount("ControlTampered", what); n != want {
			t.Errorf("%s: %d ControlTampered entries after %d episodes", ep.id, n, want)
		}
		if got := r.controller().Stats().Tampered[ep.id]; got != before+1 {
			t.Errorf("%s: tampered counter %d -> %d, want +1", ep.id, before, got)
		}
	}
	t.Logf("the cycle read held models itself %d times (polls every %s)", r.controller().Stats().HeldReads, cmp.Or(o.poll, 250*time.Millisecond))
}

// TestTamperedConnectAndPFReasserted: the other held points of the polled
// models are re-asserted alike: a third party reconnecting the classic
// inverter plantd holds disconnected (123 Conn = 1), and clearing the
// fixed power factor's enable on the DER one (704 PFWInjEna = 0).
func TestTamperedConnectAndPFReasserted(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.tamperOK.Store(true)
	tp := newThirdParty(r)
	if _, err := r.controller().Submit(t.Context(), "demo", gridOperator, []gridcontrol.Order{
		{Command: "OpModDisconnect", For: time.Hour}, {Command: "opModFixedPFInjectW", For: time.Hour, Value: ptr(0.9)}}); err != nil {
		t.Fatal(err)
	}
	r.await("inv1 disconnected, inv2 at PF 0.9", 10*time.Second, func() bool {
		return tp.point("inv1", 123, "Conn") == 0 && tp.point("inv2", 704, "PFWInjEna") == 1
	})
	for _, ep := range []tamperEpisode{
		{"inv1", "Conn", 123, 1, 0, "Conn found 1, wanted 0"},
		{"inv2", "PFWInjEna", 704, 0, 1, "PFWInjEna found 0, wanted 1"},
	} {
		polled := r.answered(ep.id)
		r.await("two more polls", 10*time.Second, func() bool { return r.answered(ep.id) >= polled+2 })
		tp.write(ep.id, ep.model, ep.point, ep.value)
		tampered := time.Now()
		r.await(ep.point+" back", 10*time.Second, func() bool { return tp.point(ep.id, ep.model, ep.point) == ep.want })
		t.Logf("%s model %d %s = %g by a third party: back at %g within %s", ep.id, ep.model, ep.point, ep.value, ep.want, time.Since(tampered).Round(time.Millisecond))
		r.await("the episode in the plant log", 5*time.Second, func() bool {
			return r.logCount("ControlTampered", "device "+ep.id, ep.found) == 1
		})
		if got := r.controller().Stats().Tampered[ep.id]; got != 1 {
			t.Errorf("%s: tampered counter %d, want 1", ep.id, got)
		}
	}
}

// ptr is a pointer to v, for an Order's value.
func ptr[T any](v T) *T { return &v }
