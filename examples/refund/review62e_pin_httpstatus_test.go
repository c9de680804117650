package main

import (
	"fmt"
	"testing"
)

// TestReview62eHTTPStatusOfErrors pins what the README says of the HTTP
// mode's error statuses: "on protocol 2026-07-28 the go-sdk also sets the
// HTTP status of -32601 to 404 and of -32602 to 400 (SEP-2575), where older
// versions answer 200" (the gateway relays these verbatim, as the seed's
// gateway relays the downstream's own -32601). Nothing else checked them.
func TestReview62eHTTPStatusOfErrors(t *testing.T) {
	base := startHTTP(t)
	const meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"review62e","version":"1"}}`
	for _, tc := range []struct {
		name, tool, args string
		code             int64 // 0: a result
		status           map[string]int
	}{
		{"unknown_tool", "nope", `{}`, -32601, map[string]int{"2026-07-28": 404, "2025-11-25": 200}},
		{"invalid_arguments", "get_customer_record", `{"customer_id":"CUST-1"}`, -32602,
			map[string]int{"2026-07-28": 400, "2025-11-25": 200}},
		{"result", "get_customer_record", `{"customer_id":"CUST-00001"}`, 0,
			map[string]int{"2026-07-28": 200, "2025-11-25": 200}},
	} {
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(tc.name+"_"+version, func(t *testing.T) {
				m := ""
				headers := map[string]string{"Mcp-Protocol-Version": version}
				if version == "2026-07-28" {
					m = meta
					headers["Mcp-Method"], headers["Mcp-Name"] = "tools/call", tc.tool
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`,
					tc.tool, tc.args, m)
				status, res := post(t, base, body, headers)
				var code int64
				if res.Error != nil {
					code = res.Error.Code
				}
				if code != tc.code || status != tc.status[version] {
					t.Errorf("%s on %s: HTTP %d, JSON-RPC error %d; want HTTP %d, error %d",
						tc.name, version, status, code, tc.status[version], tc.code)
				}
			})
		}
	}
}
