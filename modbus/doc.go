// Package modbus is plantd's Modbus TCP transport: one connection per
// endpoint (host:port), shared by all unit ids behind it. It knows nothing of
// SunSpec.
//
// A [Pool], created by main and passed to whoever needs it, owns the
// endpoints. [Pool.Endpoint] returns the one [Endpoint] for an address, and
// [Endpoint.Unit] returns a [Client] for one unit id on it. Each device driver
// holds its own Client. Every Client of an endpoint shares its socket, so
// devices behind one gateway, and inverters that accept a single TCP client,
// get one connection.
//
// # Requests
//
// Requests on one endpoint are serialised. A caller waiting for its turn
// honours its context. Each request runs with a timeout: the smaller of the
// Client's timeout and what is left of the context's deadline. A context that
// is already done fails at once, without I/O, and a connect ends with its
// context. A cancellation without a deadline takes effect at the latest when
// the request in flight times out: watching the context during each request
// would cost an allocation and a timer per request on the hot path.
//
// # Transport
//
// plantd writes and reads the socket itself (transport.go): per request one
// write, one wait for readability and usually one read, into buffers the
// endpoint keeps, so a request allocates nothing. github.com/goburrow/modbus
// checks that an answer's MBAP header matches its request. Its own transport
// was used until it showed up as the largest allocator at 1,000 devices
// (336 bytes in 3 allocations per request, against none now) and cost 4.4
// system calls per request (two reads per answer, a read that finds nothing
// before each wait, both deadlines) against 2.8 now (strace, 100 devices). An answer that
// comes in pieces is assembled; bytes after an answer fail the request as
// malformed, since the stream is then out of step.
//
// Register reads use function 3 (read holding registers) or 4 (read input
// registers), 1..125 registers. Register writes always use function 16
// (write multiple registers, 1..123 registers), even for a single
// register, so that 32-bit points are written in one request. The relay
// outputs of I/O modules are coils: read with function 1 (1..2000 coils),
// switched one at a time with function 5 (0xFF00 on, 0x0000 off) or
// together with function 15 (1..1968 coils); function 2 reads discrete
// inputs (1..2000). Bits travel eight to a byte, the first in the lowest
// bit. Every function takes the same path (the endpoint's turn, the
// checks of the answer, the error classes); a write answer must echo the
// request (function 5: coil and value; 15 and 16: address and quantity),
// else it fails with [ErrMismatch].
//
// # Connections and failures
//
// A new connection is made explicitly before the first request on it.
// [EndpointConfig.ConnectDelay] then delays the first request, because some
// inverters drop the first request after a connect. Any error other than a
// Modbus exception response closes the socket. That includes timeouts, EOF,
// resets, mismatched transaction, unit or function, and malformed frames. A
// late or stale answer therefore never counts as the answer to a later
// request. The next request reconnects.
//
// The endpoint keeps no retry policy: it neither sleeps nor refuses a
// request because earlier ones failed. A request after a failure connects
// again at once, and one unit's failures never hold back another unit's
// requests beyond the one timeout each failed request costs on the shared
// socket. Only the requests that waited for their turn while a connect
// failed fail at once with its error, so that the units behind a dead
// gateway pay one connect timeout, not one each. When to try a failing
// device again is its caller's decision: the poller backs off a device
// whose polls fail (plantd/devices/poller, with plantd/internal/backoff),
// grid control a write that failed.
//
// # Errors
//
// Every error returned by a Client is an [*Error] naming the operation,
// endpoint, unit and registers. Test its cause with errors.Is against the
// sentinels ([ErrTimeout], [ErrMismatch], [ErrMalformed], [ErrClosed],
// [ErrInvalid], context.Canceled, context.DeadlineExceeded), or
// with errors.As for an [*ExceptionError]. [Classify] and [IsRetryable] tell
// callers what to do:
//
//   - exceptions 5 (acknowledge) and 6 (server device busy): the device is
//     busy, so retry later on the same connection;
//   - exceptions 10 and 11: the gateway cannot reach the device, so retry later;
//   - exceptions 1 (illegal function) and 2 (illegal data address): the point
//     is unsupported, so do not retry it;
//   - exception 3 (illegal data value): the value was rejected;
//   - I/O errors, timeouts, mismatches and malformed answers: the link
//     failed, the socket is closed, and the next request reconnects.
//
// The package logs only connects and disconnects, at Debug. It returns errors
// and never logs them; the poller above reports them in its samples.
//
// # Read planning
//
// [Plan] is pure code that merges the register ranges a device needs into
// reads of at most 125 registers. It reads over small holes, never reads a
// forbidden range, and never splits a range that fits in one read, so a
// SunSpec value and its scale factor arrive in the same request.
//
// # Import boundary
//
// This package imports only the standard library and
// github.com/goburrow/modbus. It must not import any other plantd package: it
// is the bottom of plantd's data flow (modbus ← devices ← plant ← poller).
// [ErrTimeout] has a method Timeout() that returns true, so that the domain
// tells a timeout without importing this package.
package modbus
