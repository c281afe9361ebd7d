// Package logthrottle is plantd's one rate-limiter of log lines about
// events from sources that have not authenticated: a Modbus server's
// clients (a refused connection, a refused write, a frame that is no
// Modbus TCP), keyed by the client's address, and Home Assistant's
// command topics (a refused command), keyed by the topic. Whoever can
// reach such a source can make events as fast as the network carries
// them; the log must not grow with them.
//
// A [Limiter] counts events per source and reason: the first of a pair
// is logged at once, later ones at most once per interval (a minute by
// default) with suppressed=N, the events not logged since. [Limiter.Flush]
// writes the counts of pairs whose interval has passed and forgets the
// quiet ones; [Limiter.FlushAll] writes every count left (at a stop);
// [Limiter.Start] flushes every interval on a timer until its stop is called. At most
// 256 pairs (by default) are kept apart, the events of further sources
// share one pair per reason under the source "other", so that a flood of
// sources bounds both the memory and the lines.
//
// # Import boundary
//
// This package imports only the standard library. Any plantd package may
// import it: modbus (its Server's refusals, shared with a Handler through
// ServerConfig.Refusals), modbusproxy, sunspecserver and hass.
//
// Imports: none
package logthrottle
