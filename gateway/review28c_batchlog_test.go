package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview28cBatchJSONAnswerUnreadableLogged: a batch member whose
// downstream answers with a JSON body a client cannot read as one message
// (not JSON, an object naming "id" twice) gets -32003, and the data is
// logged as dropped, as the event-stream path and the package doc have it
// ("dropped and logged"). Before, only an array was counted on the JSON
// path: the rest left no trail.
func TestReview28cBatchJSONAnswerUnreadableLogged(t *testing.T) {
	for _, body := range []string{`not json at all`, `{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`} {
		url, logs := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		})
		batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}},` +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}]`
		got := r28Post(t, url, batch, false)
		if !strings.Contains(got.body, "-32003") {
			t.Errorf("%q: answer %d %s, want -32003 for the members", body, got.status, got.body)
		}
		if n := strings.Count(logs.String(), `msg="upstream answers dropped"`); n != 2 {
			t.Errorf("%q: %d \"upstream answers dropped\" lines, want one per member; log:\n%s", body, n, logs)
		}
	}
}
