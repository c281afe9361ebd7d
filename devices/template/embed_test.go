package template

import "embed"

//go:embed testdata/*.yaml
var testdata embed.FS
