package httpapi

import (
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite openapi.json.gz from the code (go generate ./httpapi)")

// TestOpenAPIGenerated: the embedded document is what the code renders
// now. After a change to a route or a schema, go generate ./httpapi
// rewrites openapi.json.gz.
func TestOpenAPIGenerated(t *testing.T) {
	want, err := renderOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	got, err := buildOpenAPI()
	if err == nil && bytes.Equal(got, want) {
		return
	}
	if !*update {
		t.Fatalf("openapi.json.gz is not what the code renders (err %v, %d bytes, want %d): run go generate ./httpapi", err, len(got), len(want))
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("openapi.json.gz", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote openapi.json.gz: %d bytes, %d uncompressed", buf.Len(), len(want))
}
