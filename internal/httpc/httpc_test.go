package httpc_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"plantd/internal/httpc"
)

// TestDo: requests over real sockets to net/http servers, one per case.
func TestDo(t *testing.T) {
	type seen struct {
		method, path, body, ctype string
		close                     bool
		length                    int64
	}
	tests := []struct {
		name     string
		tls      bool
		method   string
		body     string
		handler  func(w http.ResponseWriter, r *http.Request)
		wantCode int
		wantBody string
	}{
		{name: "post with a body", method: "POST", body: `{"id":1}`, wantCode: 200, wantBody: "ok",
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }},
		{name: "get over tls", tls: true, method: "GET", wantCode: 200, wantBody: "secure",
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }},
		{name: "chunked answer", method: "GET", wantCode: 200, wantBody: strings.Repeat("a", 3000) + strings.Repeat("b", 3000),
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, strings.Repeat("a", 3000))
				w.(http.Flusher).Flush()
				io.WriteString(w, strings.Repeat("b", 3000))
			}},
		{name: "redirect is the answer", method: "GET", wantCode: http.StatusFound, wantBody: "",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(http.StatusFound)
			}},
		{name: "error status", method: "POST", body: "x", wantCode: 401, wantBody: "no\n",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 401) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan seen, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.URL.Path, string(b), r.Header.Get("Content-Type"), r.Close, r.ContentLength}
				tc.handler(w, r)
			})
			var srv *httptest.Server
			c := &httpc.Client{Timeout: 10 * time.Second}
			if tc.tls {
				srv = httptest.NewTLSServer(h)
				pool := x509.NewCertPool()
				pool.AddCert(srv.Certificate())
				c.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
				c.TLSConfig.RootCAs = pool
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+"/rpc", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantCode || string(b) != tc.wantBody {
				t.Errorf("answer %d %q, want %d %q", resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
			s := <-got
			want := seen{tc.method, "/rpc", tc.body, "application/json", true, int64(len(tc.body))}
			if s != want {
				t.Errorf("server saw %+v, want %+v", s, want)
			}
			if req.Close {
				t.Error("Do changed the caller's request (Close)")
			}
		})
	}
}

// TestDoEnds: the timeout and the request's context end a request that
// hangs before its answer or in the middle of its body, with the
// context's error, and the server sees the connection go.
func TestDoEnds(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		cancel   bool // cancel the request's context once the server has it
		midBody  bool // hang after the header and part of the body
		wantErr  error
		wantTime bool
	}{
		{name: "timeout before the answer", timeout: 100 * time.Millisecond, wantErr: context.DeadlineExceeded, wantTime: true},
		{name: "timeout in the body", timeout: 100 * time.Millisecond, midBody: true, wantErr: context.DeadlineExceeded, wantTime: true},
		{name: "cancel before the answer", cancel: true, wantErr: context.Canceled},
		{name: "cancel in the body", cancel: true, midBody: true, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arrived, gone := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.midBody {
					w.Header().Set("Content-Length", "10")
					io.WriteString(w, "12345")
					w.(http.Flusher).Flush()
				}
				close(arrived)
				<-r.Context().Done() // the client went
				close(gone)
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				go func() { <-arrived; cancel() }()
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			c := &httpc.Client{Timeout: tc.timeout}
			resp, err := c.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if !tc.midBody {
					t.Fatal("an answer from a server that gave none")
				}
			} else {
				var ue *url.Error
				if !errors.As(err, &ue) || ue.Op != "Get" || ue.Timeout() != tc.wantTime {
					t.Errorf("error %v (%T), want a *url.Error of Get, timeout %v", err, err, tc.wantTime)
				}
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			<-gone
		})
	}
}

// TestDoRefused: no server, and a scheme it does not speak.
func TestDoRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &httpc.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest("POST", "http://"+addr+"/rpc", strings.NewReader("x"))
	_, err = c.Do(req)
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Post" || ue.URL != "http://"+addr+"/rpc" {
		t.Errorf("closed port: %v, want a *url.Error of Post naming the URL", err)
	}
	req, _ = http.NewRequest("GET", "ftp://"+addr+"/x", nil)
	if _, err := c.Do(req); !errors.Is(err, httpc.ErrScheme) {
		t.Errorf("ftp: %v, want ErrScheme", err)
	}
}
