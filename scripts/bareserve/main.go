// Command bareserve is the yardstick of scripts/livebench: a bare
// net/http server that answers GET PATH with the bytes of FILE, behind the
// same bearer-token check as plantd's (SHA-256 of the token compared in
// constant time with the configured hash), 401 otherwise.
//
//	go run ./scripts/bareserve -listen 127.0.0.1:18191 -token T [-timeouts] PATH=FILE...
//
// -timeouts gives the server plantd's connection timeouts (read header
// 5 s, read 15 s, write 30 s, idle 120 s: httpapi's defaults), which
// every server facing a LAN needs against clients that hold connections
// open; net/http then sets a connection's deadlines five times per
// request, which the bare server does not.
//
// Imports: none
package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18191", "address")
	token := flag.String("token", "", "the bearer token")
	timeouts := flag.Bool("timeouts", false, "plantd's connection timeouts")
	flag.Parse()
	want := sha256.Sum256([]byte(*token))
	mux := http.NewServeMux()
	for _, a := range flag.Args() {
		path, file, _ := strings.Cut(a, "=")
		body, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			got := sha256.Sum256([]byte(tok))
			if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write(body)
		})
	}
	srv := &http.Server{Addr: *listen, Handler: mux}
	if *timeouts {
		srv.ReadHeaderTimeout, srv.ReadTimeout = 5*time.Second, 15*time.Second
		srv.WriteTimeout, srv.IdleTimeout = 30*time.Second, 120*time.Second
	}
	log.Fatal(srv.ListenAndServe())
}
