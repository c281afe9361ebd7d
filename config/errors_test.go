package config

import (
	"errors"
	"testing"
)

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{"plantd.yaml", 14, "devices[2].port", "70000 is not a TCP port"}, "plantd.yaml:14: devices[2].port: 70000 is not a TCP port"},
		{Problem{"plantd.yaml", 0, "plants", "at least one plant is required"}, "plantd.yaml: plants: at least one plant is required"},
		{Problem{"plantd.yaml", 3, "", "did not find expected key"}, "plantd.yaml:3: did not find expected key"},
		{Problem{"", 5, "log.level", `"x" is not a log level`}, `line 5: log.level: "x" is not a log level`},
		{Problem{"", 0, "gateway.id", "required"}, "gateway.id: required"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorsOf(t *testing.T) {
	if err := errorsOf(nil); err != nil {
		t.Errorf("errorsOf(nil) = %v, want nil", err)
	}
	err := errorsOf([]Problem{
		{File: "f", Line: 9, Field: "b", Message: "second on 9"},
		{File: "f", Line: 2, Field: "a", Message: "on 2"},
		{File: "f", Line: 9, Field: "a", Message: "third on 9"},
		{File: "f", Field: "plants", Message: "no line"},
	})
	want := "f: plants: no line\nf:2: a: on 2\nf:9: b: second on 9\nf:9: a: third on 9"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	var problems *Errors
	if !errors.As(err, &problems) || len(problems.Problems) != 4 {
		t.Errorf("errors.As(*Errors) failed on %v", err)
	}
}
