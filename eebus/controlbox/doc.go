// Package controlbox is a grid operator's control box for tests and the
// demo: eebus-go's Energy Guard use cases (usecases/eg/lpc and eg/lpp) on
// an EEBus node of its own (package eebus's Node: a grid guard entity of
// an electricity supply system), which pairs with one trusted SKI,
// plantd's. [Box] writes consumption and production limits and failsafe
// values, reads the nominal maxima plantd reports (subscribing to them
// itself: eebus-go v0.7.0's Energy Guard use cases do not) and stops and
// restarts its heartbeat; [Serve] takes those as
// line commands (a test's subprocess, a simulator's box), one at a time:
// the LoadControl feature LPC and LPP share on plantd's side counts the
// two use cases' approvals of a write per SKI in a map that a second
// write in flight resets (spine-go v0.7.0), so a box that writes two
// limits at once may see one of them time out.
//
// # Import boundary
//
// It imports plantd/eebus (the node), eebus-go, ship-go, spine-go and the
// standard library.
//
// Imports: plantd/eebus
package controlbox
