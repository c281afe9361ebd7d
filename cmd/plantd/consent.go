package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"plantd/config"
	"plantd/httpapi/oauth2"
	"plantd/internal/termtext"
)

// runConsent handles "plantd consent list|approve ID|reject ID": the
// gateway's owner decides the consent requests of OAuth2 clients (the
// authorization_code flow's and back-channel consents) through the
// running daemon's API (GET /gateway/v1/consents and POST
// .../{id}/approve|reject), with a token of the installer role from
// PLANTD_TOKEN or --token-file.
func runConsent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const flags = "[--url URL] [-c FILE] [--token-file FILE] [--json]\n\nThe token (installer role) comes from PLANTD_TOKEN or --token-file."
	// The usage names the verb once: "consent list [--url URL] ...",
	// "consent approve ID [--url URL] ...", "consent list|approve ID|reject ID ..." for -h.
	name, synopsis := "consent", "list|approve ID|reject ID "+flags
	if len(args) > 0 && isHelp(args[0]) {
		args = []string{"", "-h"}
	} else if len(args) == 0 || (args[0] != "list" && args[0] != "approve" && args[0] != "reject") {
		fmt.Fprintln(stderr, "usage: plantd consent "+synopsis+"\n\nRun 'plantd consent -h' for the flags.")
		return exitUsage
	} else if args[0] == "list" {
		name, synopsis = "consent list", flags
	} else {
		name, synopsis = "consent "+args[0], "ID "+flags
	}
	verb := args[0]
	fs := newFlagSet(name, synopsis, stderr)
	path := fs.String("c", defaultConfigPath, "config file whose http.listen names the daemon's address (when --url is not given)")
	base := fs.String("url", os.Getenv("PLANTD_URL"), "the daemon's API base URL (default: PLANTD_URL, else from the config's http.listen, else http://127.0.0.1:8080)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token (default: PLANTD_TOKEN)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, code, ok := parseArgs(fs, args[1:])
	if !ok {
		return code
	}
	if (verb == "list") != (len(pos) == 0) || len(pos) > 1 {
		fs.Usage()
		return exitUsage
	}
	token := strings.TrimSpace(os.Getenv("PLANTD_TOKEN"))
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "plantd consent: %v\n", err)
			return exitUsage
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		fmt.Fprintln(stderr, "plantd consent: no token: set PLANTD_TOKEN or give --token-file (a token of the installer role: plantd token add)")
		return exitUsage
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if *base == "" {
		*base, client = daemonURL(*path, client)
	}
	method, route := "GET", "/gateway/v1/consents"
	if verb != "list" {
		method, route = "POST", "/gateway/v1/consents/"+url.PathEscape(pos[0])+"/"+verb
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(*base, "/")+route, nil)
	if err != nil {
		fmt.Fprintf(stderr, "plantd consent: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "plantd consent: %v (is plantd running? --url names it)\n", err)
		return exitFailure
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		fmt.Fprintf(stderr, "plantd consent: %v\n", err)
		return exitFailure
	}
	if resp.StatusCode != http.StatusOK {
		var p struct{ Detail string }
		if json.Unmarshal(body, &p) != nil || p.Detail == "" {
			p.Detail = strings.TrimSpace(string(body))
		}
		fmt.Fprintf(stderr, "plantd consent %s: %s: %s\n", verb, resp.Status, termtext.Safe(p.Detail))
		return exitFailure
	}
	if *asJSON {
		stdout.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			fmt.Fprintln(stdout)
		}
		return exitOK
	}
	if verb != "list" {
		var c oauth2.Consent
		if err := json.Unmarshal(body, &c); err != nil {
			fmt.Fprintf(stderr, "plantd consent: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "%s %s of client %s: %s\n", termtext.Safe(c.Kind), termtext.Safe(c.ID), termtext.Safe(c.ClientID), termtext.Safe(c.State))
		return exitOK
	}
	var list struct{ Consents []oauth2.Consent }
	if err := json.Unmarshal(body, &list); err != nil {
		fmt.Fprintf(stderr, "plantd consent: %v\n", err)
		return exitFailure
	}
	printConsents(stdout, list.Consents, time.Now())
	return exitOK
}

// printConsents prints the consent requests as a table. Every string
// from the API is escaped (internal/termtext): a loginHint is whatever a
// client posted, and an ESC, CR, LF or tab in it must neither drive the
// terminal nor forge or shift table lines, nor a U+202E show it reversed.
func printConsents(w io.Writer, cs []oauth2.Consent, now time.Time) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "no consent requests")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tKIND\tCLIENT\tFOR\tSCOPE\tASKED")
	for _, c := range cs {
		what := c.LoginHint
		if what == "" {
			what = c.RedirectURI
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s ago\n", termtext.Safe(c.ID), termtext.Safe(c.State), termtext.Safe(c.Kind),
			termtext.Safe(c.ClientID), termtext.Safe(what), termtext.Safe(c.Scope), now.Sub(c.RequestedAt).Round(time.Second))
	}
	tw.Flush()
}

// daemonURL derives the daemon's base URL from the config's http.listen
// (a wildcard address becomes loopback); with TLS the config's certificate
// is trusted as well. Without a readable config it is the default
// listener's.
func daemonURL(path string, client *http.Client) (string, *http.Client) {
	listen, scheme := config.Default().HTTP.Listen, "http"
	c, err := config.Load(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return "http://" + listen, client
		}
	} else {
		listen = c.HTTP.Listen
		if c.HTTP.TLSCert != "" {
			scheme = "https"
			if pem, err := os.ReadFile(c.HTTP.TLSCert); err == nil {
				pool, _ := x509.SystemCertPool()
				if pool == nil {
					pool = x509.NewCertPool()
				}
				pool.AppendCertsFromPEM(pem)
				client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
			}
		}
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return scheme + "://" + listen, client
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port), client
}
