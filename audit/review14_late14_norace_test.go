//go:build !race

package audit_test

import (
	"reflect"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestLate14LogValueAllocs: an event with every field set (request_id
// made them 19 attributes with the time, parent_id 20) allocates the attributes' array
// once, not a second time when it outgrows the one LogValue reserves; the
// other allocation is the roles' box (slog.Any).
func TestLate14LogValueAllocs(t *testing.T) {
	e := late14Event(1)
	e.DryRun, e.Cost, e.ParentID = true, 2, "c-outer"
	if n, want := len(e.LogValue().Group()), reflect.TypeFor[audit.Event]().NumField(); n != want {
		t.Fatalf("LogValue has %d attributes, want one per field: %d", n, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = e.LogValue() }); n > 2 {
		t.Errorf("LogValue allocates %v times, want 2", n)
	}
}
