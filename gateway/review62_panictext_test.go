package gateway

import (
	"net/http"
	"testing"
)

// r62Stringer is a panic value whose String panics (so does fmt.Sprint
// of it, with a value that panics so too).
type r62Stringer struct{}

func (r62Stringer) String() string { panic(r62Stringer{}) }

// TestReview62TransportPanicTextPanics: the gateway's recovers logged a
// panic's value with fmt.Sprint, which panics again, in the recover, on a
// value whose String panics so: a custom Transport's such panic left the
// call without its record and its answer (on the Pins path, a goroutine
// of the gateway's own: the process ended). It is logged by its type, and
// the call fails as for any panic of the Transport's.
func TestReview62TransportPanicTextPanics(t *testing.T) {
	rt := r30Transport(func(*http.Request) (*http.Response, error) { panic(r62Stringer{}) })
	r30Check(t, "http://127.0.0.1:1/mcp", Options{Transport: rt}, "INTERNAL", "the Transport panicked")
}
