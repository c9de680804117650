// Package typednil tells an interface that holds a nil pointer or func:
// a variable of a concrete type left unset (a *audit.JSONLSink whose
// OpenJSONL failed, an *http.Transport never made) and given on, which is
// not the nil interface its receiver's docs give a meaning to.
package typednil

import "reflect"

// Is reports whether v, not nil itself, holds a nil pointer or func.
func Is(v any) bool {
	r := reflect.ValueOf(v)
	return v != nil && (r.Kind() == reflect.Pointer || r.Kind() == reflect.Func) && r.IsNil()
}
