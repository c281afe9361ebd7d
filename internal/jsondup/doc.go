// Package jsondup finds a key given twice in one object of a JSON
// document, at any depth. encoding/json takes the last of them, so
// {"mode":"On","mode":"Off"} would be read as Off by plantd and as On by
// a proxy or log reader that keeps the first: plantd refuses such a
// document instead (the HTTP API's JSON bodies and grid control's
// schedules with 400 naming the key, the MQTT command messages with
// their 400 ack). It is plantd's one such check.
//
// [Check] reports the first duplicate as a [*Error] with its key and its
// path (commands[0].value style); a document that is no valid JSON is
// left to the decoder that reads it afterwards (Check returns nil).
//
// # Import boundary
//
// This package imports only the standard library. Any plantd package may
// import it: httpapi (its JSON body decoding), gridcontrol (a schedule
// body) and mqtt (its command messages).
//
// Imports: none
package jsondup
