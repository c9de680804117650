package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview39FilteredListDuplicateNames pins that FilterToolsList does not
// pick one of two values a downstream gave a name: a tools/list answer
// with "result" twice, or a result with "tools" twice, is not relayed, and
// a tool named twice is withheld. Clients disagree about which value such
// an object has (encoding/json takes the last, others the first), so
// filtering one value would show a client that reads the other the tools
// its role may not see.
func TestReview39FilteredListDuplicateNames(t *testing.T) {
	const (
		hidden  = `{"name":"admin_reset_key","inputSchema":{"type":"object"}}`
		visible = `{"name":"get_customer_record","inputSchema":{"type":"object"}}`
	)
	for _, tc := range []struct{ name, answer string }{
		{"result_twice", `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + hidden + `]},"result":{"tools":[` + visible + `]}}`},
		{"tools_twice", `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + hidden + `],"tools":[` + visible + `]}}`},
		{"tool_named_twice", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"admin_reset_key","name":"get_customer_record","inputSchema":{"type":"object"}}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			})
			got := r28Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false)
			if strings.Contains(got.body, "admin_reset_key") {
				t.Errorf("tools/list answered %s: relayed %d %.300s; want admin_reset_key withheld", tc.answer, got.status, got.body)
			}
		})
	}
}
