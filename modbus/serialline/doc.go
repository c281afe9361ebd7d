// Package serialline holds the facts of a Modbus serial line that other
// layers check a config against without opening one: the standard baud
// rates. The transport (plantd/modbus) validates its SerialConfig with
// them; config, the simulator's serial lines and plantd scan's --baud
// check theirs with the same list, without importing the transport.
//
// # Import boundary
//
// This package imports nothing but itself: a leaf every layer may use.
//
// Imports: none
package serialline
