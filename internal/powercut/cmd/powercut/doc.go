// Command powercut is scripts/powercut's runner: it starts a simulated
// plant (plantd sim --devices N), a dead MQTT broker address (a bound
// socket that never listens, so the outbox queues), and package powercut's
// Run with plantd polling every device, and prints each cut and a summary.
//
// It imports the standard library and plantd/internal/powercut.
//
// Imports: plantd/internal/powercut
package main
