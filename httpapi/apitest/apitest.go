// Package apitest checks HTTP exchanges against plantd's OpenAPI document
// with kin-openapi, for the tests of httpapi and of the real binary. It is
// imported by tests only.
//
// Imports: none
package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validator matches requests to the document's operations and validates
// responses against them.
type Validator struct {
	router routers.Router
}

// LoadDocument parses and validates an OpenAPI document.
func LoadDocument(ctx context.Context, raw []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapi document invalid: %w", err)
	}
	return doc, nil
}

// New builds a Validator for the document served at baseURL.
func New(ctx context.Context, raw []byte, baseURL string) (*Validator, error) {
	doc, err := LoadDocument(ctx, raw)
	if err != nil {
		return nil, err
	}
	doc.Servers = openapi3.Servers{{URL: baseURL}}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi router: %w", err)
	}
	return &Validator{router: r}, nil
}

// Check validates one exchange: the request must match a documented
// operation and the status, headers and body its response.
func (v *Validator) Check(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: no documented route: %w", req.Method, req.URL, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	})
	if err != nil {
		return fmt.Errorf("%s %s → %d does not match the document: %w", req.Method, req.URL, status, err)
	}
	return nil
}
