// Package modbus is plantd's Modbus master: Modbus TCP, RTU over TCP (a
// serial converter in transparent mode) and RTU on a serial line (RS485);
// and its server side (server.go, below). It knows nothing of SunSpec.
//
// A [Pool], created by main and passed to whoever needs it, owns the
// endpoints. [Pool.Endpoint] returns the one [Endpoint] for a transport and
// address (host:port, or a serial device's path), and [Endpoint.Unit]
// returns a [Client] for one unit id on it. Each device driver holds its
// own Client. Every Client of an endpoint shares its socket or serial port,
// so devices behind one gateway, inverters that accept a single TCP
// client, and the devices of one RS485 bus get one connection: the
// endpoint is the bus's one master.
//
// # Requests
//
// Requests on one endpoint are serialised, first come first served, except
// that a control request (a Client of [Endpoint.ControlUnit]: grid
// control's writes and read-backs, the grid operator's relay contacts)
// takes the turn before every ordinary one waiting (turn.go): on a bus
// whose polls keep the queue full, a limit's renewal waits for the request
// in flight only. A caller waiting for its turn honours its context. Each request runs with a timeout: the smaller of the
// Client's timeout and what is left of the context's deadline. A context that
// is already done fails at once, without I/O, and a connect ends with its
// context. A cancellation without a deadline takes effect at the latest when
// the request in flight times out: watching the context during each request
// would cost an allocation and a timer per request on the hot path.
//
// Before each request the endpoint keeps the frame gap: the silence since
// the end of the last exchange (its answer's last byte, or its failure).
// On a serial line it is 3.5 character times at the baud, 1.75 ms above
// 19200 baud ([SerialConfig.FrameGap], Modbus over serial line V1.02,
// 2.5.1.1), or [EndpointConfig.FrameGap] if that is longer; for RTU over
// TCP it is EndpointConfig.FrameGap (default 0: converters keep the line's
// gap themselves); Modbus TCP keeps none.
//
// Register reads use function 3 (read holding registers) or 4 (read input
// registers), 1..125 registers. Register writes always use function 16
// (write multiple registers, 1..123 registers), even for a single
// register, so that 32-bit points are written in one request. The relay
// outputs of I/O modules are coils: read with function 1 (1..2000 coils),
// switched one at a time with function 5 (0xFF00 on, 0x0000 off) or
// together with function 15 (1..1968 coils); function 2 reads discrete
// inputs (1..2000). Bits travel eight to a byte, the first in the lowest
// bit. Every function takes the same path on every transport (the
// endpoint's turn, the checks of the answer, the error classes); a write
// answer must echo the request (function 5: coil and value; 15 and 16:
// address and quantity), else it fails with [ErrMismatch].
//
// # Frames: github.com/goburrow/modbus
//
// goburrow frames every request and checks every answer (framing.go),
// with the packager of its client handler for the transport; its
// transporters are not used (see below):
//
//   - Modbus TCP: the packager of gmodbus.NewTCPClientHandler.
//     TCPClientHandler.Encode builds the request: the MBAP header
//     (transaction id from its own counter, protocol 0, length, SlaveId as
//     the unit id) and the PDU. On the answer, TCPClientHandler.Decode
//     checks the header's length against the frame and returns the PDU, and
//     TCPClientHandler.Verify checks transaction, protocol and unit id.
//   - RTU and RTU over TCP: the packager of gmodbus.NewRTUClientHandler.
//     RTUClientHandler.Encode builds the frame (SlaveId, PDU, CRC);
//     RTUClientHandler.Decode checks the answer's CRC and returns its PDU;
//     RTUClientHandler.Verify checks its length and slave id.
//
// Decode runs before Verify, so that a frame hit on the line counts as a
// CRC error even when the byte hit is the slave id. plantd then checks the
// PDU against the request (function code, exception, byte count, write
// echo) and decodes registers and bits.
//
// Where an answer ends is plantd's: a Modbus TCP answer from its MBAP
// length; an RTU answer from its function code and byte count (a read:
// 5 bytes and the byte count; a write: 8; an exception: 5), never from a
// silence on the line. An answer that comes in pieces is assembled; bytes
// after an answer fail the request as malformed, since the stream is then
// out of step.
//
// Encode allocates the frame and Decode the PDU it returns: 2 allocations,
// 48 bytes per Modbus TCP read (40 for RTU), where plantd's own framing
// allocated nothing. That is the price of goburrow framing every request:
// at 1,000 devices polled once a second with 5 reads each, 240 kB/s of
// short-lived garbage, and about 3 % more CPU per read (measured below).
//
// # Transports
//
// Modbus TCP and RTU over TCP use plantd's own socket loop on unix
// (transport_unix.go, built with //go:build unix): per request one write,
// one wait for readability and usually one read, into buffers the
// endpoint keeps. Elsewhere (windows) the portable loop (transport_tcp.go:
// net.Conn's deadline, Write and Read, the same framing) is built, so
// that plantd scan runs from an installer's laptop.
//
// A serial line (TransportRTU) is opened and driven by
// github.com/goburrow/serial: serial.Open with the settings the RTU client
// handler holds (its serial.Config: path, baud, data bits, parity, stop
// bits, and a read timeout of 20 ms); each Read of the port waits for data
// at most that long, and the loop around the reads keeps the request's
// timeout (overshooting it by at most 20 ms). goburrow's own serial
// transporter (RTUClientHandler.Send) is not used: after its write it
// sleeps for the time it expects request and answer to take, 15 bit
// times per byte plus 35 (computed from its source: a read of
// 125 registers at 9600 baud sleeps 414 ms where the line needs 301 ms at
// 11 bits per character), so back-to-back reads could never use more than
// about 73 % of the line; it takes its timeout per read, not per request,
// and never drops a late answer.
//
// # The decision on plantd's socket loop
//
// Measured on one loopback server that allocates nothing
// (BenchmarkTCPLoop: reads of 125 registers, each device its own
// connection and goroutine, as the poller has them). System calls per read
// by strace -c -f over 20,000 reads at 100 devices, the server's 2 reads
// and 1 write per read taken off; CPU time (user and system) per read of
// the whole process, the server's share included, median and range of 5
// interleaved runs of 2 s on two shared cores under a load of about 10:
//
//	loop                   system calls   allocations   CPU per read, µs
//	                       per read       per read      100 devices       1,000 devices
//	plantd's own           2 (W+R)        2, 48 B       20.0 (16.4-26.5)  27.1 (23.1-34.5)
//	portable net.Conn      3 (W+2R)       2, 48 B       20.9 (20.5-23.1)  32.2 (25.7-32.9)
//	goburrow transporter   4 (W+3R)       7, 416 B      23.2 (20.4-26.5)  36.3 (29.3-38.5)
//
// The goburrow row is its own client (gmodbus.NewClient on a
// TCPClientHandler: Encode, Send, Verify, Decode), the registers decoded
// as plantd does. Go's net.Conn tries a read before it waits (a read that
// finds nothing, on every request); goburrow's transporter also reads the MBAP header and
// the PDU with one system call each, allocates the answer buffer, resets an
// idle timer per request, takes no context for its connect and does not
// notice bytes after an answer. The CPU figures are noisy on shared cores.
// A run of the loops one after the other (4 runs each) put all three
// within 6 % of each other, plantd's the highest at 100 devices (16.4
// against 15.5 and 16.0 µs) and the lowest at 1,000 (23.4 against 23.5
// and 23.9); an interleaved run of plantd's and the portable loop alone
// put plantd's 10 % (100 devices) and 18 % (1,000) lower. The system calls
// and allocations are not noise.
//
// Decision: goburrow's transporter is not used. It makes twice the system
// calls and 3.5 times the allocations (416 bytes against 48) of plantd's
// loop, and used the most CPU in every run but one (100 devices, the
// sequential run: 2 % below plantd's loop, within the noise). plantd
// keeps its own loop on unix, behind the build tag, where the daemon runs
// at scale: it saves a system call per read over the portable loop, no
// run showed it costing more CPU at 1,000 devices, and keeping it leaves
// the Modbus TCP path as it was for the side-by-side scale run against
// today's binary. The portable loop (30 lines) is the fallback elsewhere,
// and the test suite runs the socket tests on it too (TestPortableLoop).
//
// Against plantd's framing before goburrow framed every request
// (BenchmarkTCPRead, 4 interleaved runs each), a Modbus TCP read went from
// 0 to 2 allocations (48 bytes) and from 10.6 to 10.9 µs of CPU (median):
// goburrow's Encode and Decode.
//
// The whole daemon at 1,000 Modbus TCP devices against the binary before
// this transport (8a35b8a), scripts/scale side by side (PIN=1: both on
// CPU 0, their simulators on CPU 1; 60 s after 20 s warm-up; six pairs,
// the ports swapped every pair; load 2.7-6.8 from other builds): CPU
// share 5.65-7.68 % against 5.70-7.27 % of a core, the ratio per pair
// 0.96-1.13, median 1.00. A CPU profile had shown the first version of
// this transport 5-9 % higher, most of it in runtime.newstack: the
// poll workers' goroutines, their stacks shrunk by the garbage collector
// while they wait, grew them again on every poll, and this package's frames on
// that path had grown from 1.1 to 1.5 kB. The failure handling now sits
// out of Endpoint.do (Endpoint.failed), one range check serves every
// request (Client.run), and the poller's sink reads only the readings
// (plant.Live.Readings): 0.9 kB here now. At 100 devices (two pairs)
// CPU was equal (0.55 against 0.55-0.58 %). Resident memory differs by
// the binary: anonymous memory (heap, stacks) was the same (RssAnon 10.4
// MB both at 100 devices; 35.8 against 36.2 MB at 1,000), file-backed
// pages 0.7-1.5 MB more, since the binary grew by 0.8 MB with the
// features since (consumers, templates, inputs). An Endpoint is 0.8 kB
// with goburrow's handler, its request data built in its answer buffer.
//
// # Connections and failures
//
// A new connection (a serial port: an open) is made explicitly before the
// first request on it. [EndpointConfig.ConnectDelay] then delays the first
// request, because some inverters drop the first request after a connect.
// On a socket (Modbus TCP, RTU over TCP), any error other than a Modbus
// exception response closes it. That includes timeouts, EOF, resets,
// mismatched transaction, unit or function, bad CRCs and malformed frames. A
// late or stale answer therefore never counts as the answer to a later
// request. The next request reconnects.
//
// A serial port stays open after a timeout, a mismatched or a malformed
// answer: the line is shared, and closing the port would not stop a late
// answer on the wire. Instead the next request first reads and drops what
// the line carries until it has been silent for 20 ms. A dead unit on a
// bus therefore costs each of its requests its timeout and 20 ms, and the
// other units nothing more. Any other error (a write or read of the port
// fails, the line hangs up: a USB adapter unplugged) closes the port, and
// the next request opens it again; while it is missing, requests fail with
// the open's error, naming the path ("open serial port /dev/ttyUSB0: no
// such file or directory"). goburrow/serial logs, through the standard
// log package, when it cannot restore the settings of a port that went
// away.
//
// A serial port is taken exclusively while it is open
// (serial_lock_unix.go): flock(LOCK_EX) on a descriptor of the device node
// (binding every plantd, root or not, under any name of the device, and
// dropped by the kernel when plantd dies) and TIOCEXCL on the tty (the
// kernel refuses other programs' opens, except root's). An open of a port
// another process holds fails with a [*PortHeldError] ([ErrPortHeld])
// naming the holder's pid and command on Linux (from /proc/locks): "open
// serial port /dev/ttyUSB0: /dev/ttyUSB0 is held by plantd (pid 812)".
// Nothing is written to the line then. Both are taken at the open and given
// up at the close, so a request costs nothing more.
//
// The endpoint keeps no retry policy: it neither sleeps nor refuses a
// request because earlier ones failed. A request after a failure connects
// again at once, and one unit's failures never hold back another unit's
// requests beyond the one timeout each failed request costs on the shared
// socket or line. Only the requests that waited for their turn while a
// connect failed fail at once with its error, so that the units behind a
// dead gateway pay one connect timeout, not one each. When to try a failing
// device again is its caller's decision: the poller backs off a device
// whose polls fail (plantd/devices/poller, with plantd/internal/backoff),
// grid control a write that failed.
//
// # Bus statistics
//
// [Endpoint.Stats] (and [Pool.Stats] for all) counts per endpoint, that
// is per bus: requests, failures by kind (timeouts, mismatches, malformed
// answers with CRC errors among them, I/O errors), exceptions, bytes
// written and read, the busy time (from each request's write to its
// answer's last byte or failure) and the time elapsed since the endpoint
// was made; [EndpointStats.Utilisation] is their ratio.
//
// Known limit: goburrow/serial waits with select(2), which cannot watch a
// descriptor of 1024 or more; a serial port opened after a thousand
// sockets (a site with a thousand Modbus TCP devices and a bus) would not
// be read correctly.
//
// # Errors
//
// Every error returned by a Client is an [*Error] naming the operation,
// endpoint, unit and registers. Test its cause with errors.Is against the
// sentinels ([ErrTimeout], [ErrMismatch], [ErrMalformed], [ErrCRC] (which
// wraps ErrMalformed), [ErrClosed],
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
//   - I/O errors, timeouts, mismatches, bad CRCs and malformed answers: the
//     link failed, the socket is closed (a serial port: see above), and the
//     next request reconnects.
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
// # The server side
//
// [ServePDU] is the one request decoder of plantd's Modbus servers (the
// simulator's endpoints and RTU slaves, the SunSpec aggregate server): it
// decodes a request PDU of functions 1, 2, 3, 4, 5, 6, 15 and 16 into a
// [Request], calls a [Handler] (Registers or Bits) and encodes the answer,
// or the exception: a handler's error that is an [*ExceptionError]
// ([Exception]) answers its code, any other exception 4. A request
// malformed for its function (a quantity of 0 or past the limits above,
// a byte count that does not match) answers exception 3, a range past
// register 65535 exception 2, an unknown function exception 1, without
// reaching the handler.
//
// [Server] serves a Handler over Modbus TCP: a goroutine per connection
// reads an MBAP frame, checks it with goburrow's TCP packager (Decode:
// the header's length against the frame, as for the client's answers),
// answers it through ServePDU under the request's transaction and unit id
// and reads the next. A frame that is no Modbus TCP (protocol id not 0, a
// length out of range) closes its connection. [ServerConfig] bounds the
// open connections, in all (MaxConns, default 32) and per client address
// (MaxConnsPerClient, default 4), closes a connection idle for
// IdleTimeout (default 60 s) and refuses clients outside Allow. A
// connection past a bound does not lock anyone out: it closes an idle
// connection (no request being answered) to make room, at the client's
// bound the client's own one idle the longest, at MaxConns the one idle
// the longest of the clients holding the most connections; only when
// none of those is idle is the newcomer closed at once. So 32 idle
// sockets from one address leave room for a second address.
// [Server.Stats] counts all of it (Refused, Full, Evicted, Idle).
//
// The lines a server logs about its clients before they have shown to be
// welcome (a client outside Allow, a connection closed to make room or
// refused, a frame that is no Modbus TCP) and a failed accept (too many
// open files, as client="listener ADDR") go through plantd's one
// limiter of such lines, a plantd/internal/logthrottle Limiter
// ([NewRefusals]): the first of a client address and reason is logged,
// then at most one line a minute with the count suppressed
// (ServerConfig.Refusals; a Handler refusing requests shares it: the
// device proxy, the SunSpec server), so 2,000 bad requests are two
// lines, not 2,000. It keeps 256 addresses apart and the rest together
// (client=other), so a flood of addresses grows neither memory nor the
// log without bound; the Server flushes its counts every minute while it
// serves and all of them when it stops. A [Front]
// (ServerConfig.Front) sees each connection as it is accepted and each
// request before the Handler, and may answer it itself, delay, alter or
// drop the answer, or close the connection: the simulator's faults. It is
// the one Modbus TCP server of plantd: the simulator's endpoints, the
// SunSpec aggregate server and the test servers run it.
//
// # Import boundary
//
// This package imports only the standard library, github.com/goburrow/modbus,
// github.com/goburrow/serial, plantd/internal/logthrottle (the
// refusals' log lines; it imports only the standard library) and
// plantd/modbus/serialline (the standard baud rates, a leaf that imports
// nothing). It must not import any other plantd package: it is the
// bottom of plantd's data flow (modbus ← devices ← plant ← poller).
// [ErrTimeout] has a method Timeout() that returns true, so that the domain
// tells a timeout without importing this package.
//
// Imports: plantd/internal/logthrottle, plantd/modbus/serialline
package modbus
