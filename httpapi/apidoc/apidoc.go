// Package apidoc holds the building blocks of the API's OpenAPI 3.1
// document: JSON Schema constructors and the description of one route.
// httpapi builds the document from them; the authorization server
// (httpapi/oauth2) describes its routes and schemas with the same blocks.
//
// It imports the standard library only.
//
// Imports: none
package apidoc

import (
	"strconv"
	"time"
)

// ProblemJSON is the media type of the API's errors.
const ProblemJSON = "application/problem+json"

// Obj is a JSON object of the document.
type Obj = map[string]any

// Ref refers to a schema of the document's components.
func Ref(name string) Obj { return Obj{"$ref": "#/components/schemas/" + name} }

// Str, Num, Bool, Arr and Enum are the schemas of a string, a number, a
// boolean, an array of items and a string of the values v.
func Str() Obj             { return Obj{"type": "string"} }
func Num() Obj             { return Obj{"type": "number"} }
func Bool() Obj            { return Obj{"type": "boolean"} }
func Arr(items Obj) Obj    { return Obj{"type": "array", "items": items} }
func Enum(v ...string) Obj { return Obj{"type": "string", "enum": v} }

// Object is a closed object schema with the given properties.
func Object(props Obj, required ...string) Obj {
	o := Obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// Describe sets o's description and returns o.
func Describe(o Obj, d string) Obj { o["description"] = d; return o }

// Param is a parameter of an operation (in: path, query, header).
func Param(name, in, desc string, schema Obj, required bool) Obj {
	return Obj{"name": name, "in": in, "description": desc, "schema": schema, "required": required}
}

// Route describes one operation of the document.
type Route struct {
	Method, Path, Summary, Response string
	Params                          []Obj
	// Errs lists the error statuses besides 401/404/405/429/500.
	Errs []string
	// Body names the request body schema and its media type; Form is
	// the schema of a form-encoded one.
	Body, BodyType string
	Form           Obj
	// IDs: the path has a plant or device id (308, 404).
	IDs  bool
	Open bool // no bearer token
	// Extra holds responses beyond the ones the statuses give.
	Extra Obj
	// OAuthErrors: the route's errors are RFC 6749 §5.2 JSON
	// (OAuthError), not problem-JSON; ClientAuth: it authenticates the
	// client (401, and 429 for a source with too many failed logins).
	OAuthErrors, ClientAuth bool
	// Deprecated: the spec calls the route obsolete (deprecated: true in
	// the document, and a Deprecation header on its answers).
	Deprecated *Deprecation
}

// Deprecation says since when a route is obsolete and what replaces it.
type Deprecation struct {
	// Since is the day the interface's version that made the route
	// obsolete was published (spec §9), midnight UTC.
	Since time.Time
	// Successor is the path of the route that replaces it, with the
	// route's path parameters ({plantId}); "" when none.
	Successor string
}

// Header is the value of the Deprecation header (RFC 9745): "@" and the
// Unix time of Since.
func (d Deprecation) Header() string { return "@" + strconv.FormatInt(d.Since.Unix(), 10) }

// LocalTime is a plant-local time without offset.
func LocalTime() Obj {
	return Obj{"type": "string", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`,
		"description": "plant-local time without offset (the plant's timezone), as the cloud API: OneMinute, FiveMinutes, " +
			"FifteenMinutes and OneHour rows carry the END of their interval (a Day of FiveMinutes runs 00:05:00 .. next day 00:00:00); " +
			"OneDay, OneMonth and OneYear rows the day, month or year they stand for (00:00:00 of its first day); " +
			"Recent is one row labelled with the end of the newest interval it holds"}
}

// NoOffsetTime is a time written without offset (LocalDateTime).
func NoOffsetTime(d string) Obj {
	return Obj{"type": "string", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`, "description": d}
}

// WindowTime is the start or end of a posted window: RFC 3339 with
// offset, or relative to the gateway's clock ("+10m").
func WindowTime() Obj {
	return Obj{"type": "string", "anyOf": []any{Obj{"format": "date-time"}, Obj{"pattern": `^\+[0-9.]+(ns|us|µs|ms|s|m|h)([0-9.]+(ns|us|µs|ms|s|m|h))*$`}},
		"description": "RFC 3339 with offset, or relative to the gateway's clock when the request arrives: + and a duration (+10s, +2m, +1h30m)"}
}

// UTCTime is an RFC 3339 time in UTC.
func UTCTime() Obj {
	return Obj{"type": "string", "format": "date-time", "pattern": `Z$`, "description": "RFC 3339, UTC"}
}

// ProblemResponse is an error response of problem-JSON (RFC 9457).
func ProblemResponse(desc string) Obj {
	return Obj{"description": desc, "content": Obj{ProblemJSON: Obj{"schema": Ref("Problem")}}}
}

// JSONResponse is a 200 response of the named schema.
func JSONResponse(schema string) Obj {
	return Obj{"description": "OK", "content": Obj{"application/json": Obj{"schema": Ref(schema)}}}
}
