package jsondup

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		in        string
		dup       bool
		key, path string
	}{
		{`{"mode":"On","mode":"Off"}`, true, "mode", "mode"},
		{`{"mode":"On"}`, false, "", ""},
		{`{"a":{"b":1,"c":{"d":1,"d":2}}}`, true, "d", "a.c.d"},
		{`{"schedule":[{"value":1},{"value":2,"value":3}]}`, true, "value", "schedule[1].value"},
		{`[{"x":1},[{"y":1,"y":1}]]`, true, "y", "[1][0].y"},
		{`{"a":{"k":1},"b":{"k":1}}`, false, "", ""}, // the same key in two objects
		{`{"a":[1,2,{"a":1}],"b":1}`, false, "", ""},
		{`{"":1,"":2}`, true, "", ""},
		{`{"a":1,"a"`, true, "a", "a"}, // found before the syntax error
		{`{"a":1,`, false, "", ""},     // no valid JSON: the decoder says
		{`"str"`, false, "", ""},
		{`{"\u006dode":1,"mode":2}`, true, "mode", "mode"}, // escapes decoded
	} {
		err := Check([]byte(tt.in))
		var de *Error
		switch {
		case !tt.dup && err != nil:
			t.Errorf("Check(%s) = %v, want nil", tt.in, err)
		case tt.dup && (!errors.As(err, &de) || de.Key != tt.key || de.Path != tt.path):
			t.Errorf("Check(%s) = %v, want key %q at %q", tt.in, err, tt.key, tt.path)
		}
	}
}
