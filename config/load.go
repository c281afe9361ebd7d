package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
)

// MaxFileSize is the largest config file plantd reads (1 MiB): a real
// config is a few KiB, and a larger file (a log or a database written
// over it by mistake, a file that grows without end) is refused at once,
// before it is read, instead of being parsed for seconds with its size
// many times over in memory.
const MaxFileSize = 1 << 20

// ErrTooLarge is the error of a config file larger than MaxFileSize
// (errors.Is).
var ErrTooLarge = errors.New("config file too large")

// ReadFile reads a config file of at most MaxFileSize bytes: every path
// that reads the config (start, reload, check-config, the commands that
// edit it) reads it here. A regular file above the cap is refused from
// its size without being read; anything else (a pipe, a device) is read up
// to one byte past the cap.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size string) error {
		return fmt.Errorf("%s: %w: %s, more than the %d bytes (1 MiB) a config may have; is it the right file?", path, ErrTooLarge, size, MaxFileSize)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, tooLarge(fmt.Sprintf("%d bytes", fi.Size()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge("larger")
	}
	return data, nil
}

// Load reads and parses the config file at path. Problems in the file are
// returned as an [*Errors] whose problems name path as their file; a file
// that cannot be read gives the os error (errors.Is(err, fs.ErrNotExist)),
// a file larger than MaxFileSize an error saying so.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a config file's contents strictly, fills in the defaults and
// validates the result. name is the file name the problems carry. It
// returns either a valid Config or an [*Errors] with every problem found:
// YAML syntax, unknown keys, values of the wrong type and everything
// [Config.Validate] checks, sorted by line. Contents larger than
// MaxFileSize are refused without being parsed.
func Parse(name string, data []byte) (*Config, error) {
	return parse(name, data, os.Hostname)
}

func parse(name string, data []byte, hostname func() (string, error)) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, errorsOf([]Problem{{File: name, Message: fmt.Sprintf("the config is %d bytes, more than the %d bytes (1 MiB) a config may have", len(data), MaxFileSize)}})
	}
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
