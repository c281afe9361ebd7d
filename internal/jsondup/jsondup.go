package jsondup

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Error is a key given twice in one object.
type Error struct {
	// Key is the key given twice.
	Key string
	// Path is where: the object's members and array indexes from the
	// document's root, then the key ("schedule[0].value"; "mode" at the
	// top).
	Path string
}

func (e *Error) Error() string { return "duplicate key " + strconv.Quote(e.Key) + " at " + e.Path }

// maxDepth bounds the nesting Check follows; deeper documents are left
// to the decoder (encoding/json refuses nesting beyond 10,000).
const maxDepth = 10000

// frame is an open object or array: the keys seen (an object), the
// next index (an array), and its path.
type frame struct {
	keys  map[string]bool // nil: an array
	index int
	path  string
	key   string // the object's member whose value comes next
	isKey bool   // the next string token is a key
}

// Check returns the first key given twice in one object of data as an
// *Error, nil when there is none or data is no valid JSON (the decoder
// reading it afterwards says why).
func Check(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	// valuePath is the path of the value that begins at the next token.
	valuePath := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.keys == nil {
			return f.path + "[" + strconv.Itoa(f.index) + "]"
		}
		if f.path == "" {
			return f.key
		}
		return f.path + "." + f.key
	}
	// ended notes that a value ended in the enclosing frame.
	ended := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.keys == nil {
			f.index++
		} else {
			f.isKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or no valid JSON: the decoder says
		}
		if len(stack) > 0 {
			if f := stack[len(stack)-1]; f.keys != nil && f.isKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:len(stack)-1]
					ended()
					continue
				}
				k, _ := tok.(string)
				if f.keys[k] {
					p := k
					if f.path != "" {
						p = f.path + "." + k
					}
					return &Error{Key: k, Path: p}
				}
				f.keys[k], f.key, f.isKey = true, k, false
				continue
			}
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= maxDepth {
				return nil
			}
			f := &frame{path: valuePath()}
			if d == '{' {
				f.keys, f.isKey = map[string]bool{}, true
			}
			stack = append(stack, f)
		case ']':
			stack = stack[:len(stack)-1]
			ended()
		default: // a scalar
			ended()
		}
	}
}
