package audit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReadJSONLTornLongTailIsReported checks that a torn last line longer
// than the reader's 64 KiB buffer is reported whatever its length: one whose
// length was a whole number of buffers (a crash that cut a record with
// large opted-in arguments there) ended the iteration silently, so
// QueryJSONL returned no error for a file with a torn record.
func TestReadJSONLTornLongTailIsReported(t *testing.T) {
	good, err := event("good", 1).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	big := event("big", 2)
	big.Detail = strings.Repeat("x", 3<<16)
	long, err := big.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 128 << 10, 64<<10 + 1, 64<<10 - 1} {
		content := string(good) + "\n" + string(long[:n])
		var ids []string
		var lineErrs []*audit.LineError
		for ev, err := range audit.ReadJSONL(strings.NewReader(content)) {
			if err != nil {
				var le *audit.LineError
				if !errors.As(err, &le) {
					t.Fatalf("torn tail of %d bytes: non-line error %v", n, err)
				}
				lineErrs = append(lineErrs, le)
				continue
			}
			ids = append(ids, ev.CorrelationID)
		}
		if len(ids) != 1 || ids[0] != "good" {
			t.Errorf("torn tail of %d bytes: events %v, want [good]", n, ids)
		}
		if len(lineErrs) != 1 || lineErrs[0].Line != 2 || !errors.Is(lineErrs[0], audit.ErrTornLine) {
			t.Errorf("torn tail of %d bytes: line errors %v, want line 2 torn", n, lineErrs)
		}
	}
	// A torn tail longer than MaxLineSize is reported too (as too long).
	huge := strings.Repeat("x", audit.MaxLineSize+64<<10-(audit.MaxLineSize+64<<10)%(64<<10))
	n := 0
	for _, err := range audit.ReadJSONL(strings.NewReader(string(good) + "\n" + huge)) {
		if err != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("torn tail of %d bytes: %d errors, want 1", len(huge), n)
	}
}
