package httpapi

import (
	"reflect"
	"sync"
)

// member is one member of an answer envelope: its JSON name and its value.
type member struct {
	name  string
	value any
}

// field names a member of an answer envelope.
func field(name string, v any) member { return member{name, v} }

// maxMembers bounds the members of one answer (the widest has four).
const maxMembers = 4

// answerKey identifies an answer's shape: its members' names and types.
type answerKey [maxMembers]struct {
	name string
	typ  reflect.Type
}

// answerTypes caches the struct type of each answer shape.
var answerTypes sync.Map // answerKey → reflect.Type

// envelope is the envelope of a handler's answer, stated in one line:
// envelope(field("plant", plantObj(p)), field("schedules", list)) encodes as
// {"plant":{...},"schedules":[...]}, the members in their order and each
// encoded as its value's type is. It is a struct (its type made once per
// shape with reflect.StructOf, the names as json tags), so encoding/json
// writes it byte for byte as the literal struct it replaces, and nothing
// of the answer is assembled as text.
func envelope(ms ...member) any {
	if len(ms) > maxMembers {
		panic("httpapi: an answer of more than four members")
	}
	var key answerKey
	for i, m := range ms {
		key[i].name, key[i].typ = m.name, reflect.TypeOf(m.value)
		if key[i].typ == nil { // an untyped nil encodes as null
			key[i].typ = reflect.TypeFor[any]()
		}
	}
	t, ok := answerTypes.Load(key)
	if !ok {
		fields := make([]reflect.StructField, len(ms))
		for i := range ms {
			fields[i] = reflect.StructField{Name: "M" + string(rune('0'+i)), Type: key[i].typ, Tag: reflect.StructTag(`json:"` + ms[i].name + `"`)}
		}
		t, _ = answerTypes.LoadOrStore(key, reflect.StructOf(fields))
	}
	v := reflect.New(t.(reflect.Type)).Elem()
	for i, m := range ms {
		if m.value != nil {
			v.Field(i).Set(reflect.ValueOf(m.value))
		}
	}
	return v.Addr().Interface()
}
