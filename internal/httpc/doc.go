// Package httpc is plantd's HTTP client for its few outgoing requests (a
// Shelly's RPC, plantd consent asking the running daemon): one HTTP/1.1
// request per connection, over TCP or TLS, with the request's context and
// a timeout bounding everything from the dial to the end of the body.
//
// It exists for the binary's size: net/http's Transport (connection pool,
// HTTP/2, proxies) cost 371 KB of the static plantd for two callers that
// send a request now and then. What it leaves out, on purpose: kept-alive
// connections (each request dials and sends Connection: close), HTTP/2,
// proxies from the environment, redirects (a 3xx is the answer) and
// transparent gzip. Requests are written by net/http's Request.Write and
// answers read by http.ReadResponse, so framing (Content-Length, chunked,
// close-delimited) is net/http's.
//
// Errors are *url.Error as net/http's client returns them; when the
// request's context or the timeout ended the request, the error wraps the
// context's (errors.Is(err, context.DeadlineExceeded)).
//
// Imports: none
package httpc
