// Package web is the gateway's own page: plain HTML, CSS and JavaScript
// modules embedded with go:embed and served by httpapi at / (the page) and
// /ui/{version}/... (its files), with uPlot vendored under
// static/vendor/uplot (scripts/vendor-uplot.sh refreshes it and checks its
// hash).
//
// The page is a client of plantd's public HTTP API like any other: it
// signs in with a bearer token or an OAuth2 client kept in the browser's
// session storage, and every number it shows comes from an API route, so
// roles apply as everywhere. There is no build step: the files in static/
// are the files the browser runs. The binary embeds them gzipped, from
// gz/, which go generate ./web rewrites after an edit (TestGzipped fails
// until it is run; scripts/vendor-uplot.sh runs it).
//
// Serving: index.html is revalidated on every load (no-cache, ETag) and
// names its files under /ui/{version}/, the version a hash of every
// embedded file, so those are cached for a year (immutable). A client
// that takes gzip gets a file's embedded gzip as it is; any other gets it
// unpacked on the way out. Every answer carries a strict
// Content-Security-Policy (scripts, styles and connections only from the
// gateway itself; no inline script or style) and the usual hardening
// headers.
//
// Import boundary: the standard library only; httpapi imports web, never
// the other way round.
//
// Imports: none
package web
