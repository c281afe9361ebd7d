package config

import (
	"os"
	"reflect"
)

// Load reads and parses the config file at path. Problems in the file are
// returned as an [*Errors] whose problems name path as their file; a file
// that cannot be read gives the os error (errors.Is(err, fs.ErrNotExist)).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a config file's contents strictly, fills in the defaults and
// validates the result. name is the file name the problems carry. It
// returns either a valid Config or an [*Errors] with every problem found:
// YAML syntax, unknown keys, values of the wrong type and everything
// [Config.Validate] checks, sorted by line.
func Parse(name string, data []byte) (*Config, error) {
	return parse(name, data, os.Hostname)
}

func parse(name string, data []byte, hostname func() (string, error)) (*Config, error) {
	c := &Config{file: name, lines: map[string]int{}, bad: map[string]bool{}}
	c.setDefaults()
	d := &decoder{file: name, lines: c.lines, bad: c.bad}
	root, problem := readDocument(name, data)
	if problem != nil {
		return nil, errorsOf([]Problem{*problem})
	}
	if root != nil && !d.root(root, reflect.ValueOf(c).Elem()) {
		return nil, errorsOf(d.problems) // nothing to validate
	}
	c.deriveDefaults(hostname)
	if err := errorsOf(append(d.problems, c.validate()...)); err != nil {
		return nil, err
	}
	return c, nil
}
