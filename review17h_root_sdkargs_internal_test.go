package mcpguard

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// sdkRefusedArgs runs on every call whose typed-tool wrapper refused its
// arguments, and such a call is given back its charge: its cost must stay
// in proportion to the arguments. d134a0c's walk for a number beyond
// float64's range copied the path and the container types at each level,
// so that arguments of 2 KB nested 990 deep (the go-sdk's transport takes
// up to 1000) cost some 25 MB and a tenth of a second each, for free.
func TestReview17hSDKRefusedArgsCostIsLinear(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"tree": map[string]any{"anyOf": []any{map[string]any{"type": "array"}, map[string]any{"type": "object"}}}}}
	const depth = 990
	raw := json.RawMessage(`{"tree":` + strings.Repeat("[", depth) + "1e400" + strings.Repeat("]", depth) + `}`)
	want := `validating "arguments": unmarshaling arguments: json: cannot unmarshal "1e400" into Go struct field map[string]interface {}` +
		strings.Repeat("[]interface {}", depth) + ".tree" + strings.Repeat(".0", depth) + " of type float64"
	if !sdkRefusedArgs(raw, schema, want) {
		t.Fatalf("sdkRefusedArgs(%d levels deep, the go-sdk's text) = false, want true", depth)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sdkRefusedArgs(raw, schema, want)
	runtime.ReadMemStats(&after)
	// The arguments are 2 KB; the text 16 KB.
	if n := after.TotalAlloc - before.TotalAlloc; n > 2<<20 {
		t.Errorf("sdkRefusedArgs on %d bytes of arguments %d levels deep allocated %d bytes, want at most 2 MiB", len(raw), depth, n)
	}
}
