// Package oauthconfig is the OAuth2 clients' section of plantd's config
// file (oauthClients): [Client], the client id's rule ([CheckClientID])
// and [Validate], which package config calls with the file's lines. It
// is a leaf apart from package oauth2, the authorization server: config
// and the commands that add a client (plantd client add) import it
// without the server.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package oauthconfig
