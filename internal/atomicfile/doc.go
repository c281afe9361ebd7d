// Package atomicfile writes a small state file so that a crash or a power
// cut leaves the old contents or the new, never a mix: a temporary file
// beside it, written, synced and renamed over it, the directory synced.
// Used for the EEBus certificate and failsafe values and the PV
// forecast's state.
//
// Imports: none
package atomicfile
