package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview16ReceivedRecordsWhatTheServerRead: /_received is the demo's
// proof of what reached the server, so it must read each message as the
// go-sdk does: member names are case-sensitive ("Name" is not "name"), and
// of a member given twice the last counts. encoding/json matches struct
// fields case-insensitively, and listed admin_reset_key for calls that the
// server read as get_customer_record, as a ping, or as no tool at all.
func TestReview16ReceivedRecordsWhatTheServerRead(t *testing.T) {
	base := startHTTP(t)
	tests := []struct {
		name, body         string
		wantMethod         string
		wantID, wantTool   string
		wantResultContains string // "" means a JSON-RPC error is expected
	}{
		{
			name:       "capitalised_name_alone",
			body:       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`,
			wantMethod: "tools/call", wantID: "1", wantTool: "",
		},
		{
			name:       "capitalised_name_after_name",
			body:       `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","Name":"admin_reset_key","arguments":{"customer_id":"CUST-00001"}}}`,
			wantMethod: "tools/call", wantID: "2", wantTool: "get_customer_record", wantResultContains: `"found":true`,
		},
		{
			name:       "capitalised_method_after_method",
			body:       `{"jsonrpc":"2.0","id":3,"method":"ping","Method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`,
			wantMethod: "ping", wantID: "3", wantTool: "", wantResultContains: `{}`,
		},
		{
			name:       "capitalised_params",
			body:       `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}},"Params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`,
			wantMethod: "tools/call", wantID: "4", wantTool: "get_customer_record", wantResultContains: `"found":true`,
		},
		{
			name:       "capitalised_id",
			body:       `{"jsonrpc":"2.0","id":5,"ID":99,"method":"ping"}`,
			wantMethod: "ping", wantID: "5", wantResultContains: `{}`,
		},
		{
			name:       "name_twice",
			body:       `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"admin_reset_key","name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`,
			wantMethod: "tools/call", wantID: "6", wantTool: "get_customer_record", wantResultContains: `"found":true`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := deleteReceived(base); err != nil {
				t.Fatal(err)
			}
			_, r := post(t, base, tt.body, nil)
			if tt.wantResultContains == "" {
				if r.Error == nil {
					t.Errorf("POST %s: result %s, want a JSON-RPC error", tt.body, r.Result)
				}
			} else if r.Error != nil || !strings.Contains(string(r.Result), tt.wantResultContains) {
				t.Errorf("POST %s: result %s error %+v, want a result with %s (the server's reading of the message)", tt.body, r.Result, r.Error, tt.wantResultContains)
			}
			type entry struct{ Method, ID, Tool string }
			var got []entry
			for _, e := range received(t, base) {
				got = append(got, entry{e.Method, string(e.ID), e.Tool})
			}
			if diff := cmp.Diff([]entry{{tt.wantMethod, tt.wantID, tt.wantTool}}, got); diff != "" {
				t.Errorf("POST %s: /_received (-want +got):\n%s", tt.body, diff)
			}
		})
	}
	// None of them rotated a key.
	_, r := post(t, base, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`, nil)
	if r.Error != nil || !strings.Contains(string(r.Result), `"rotation":1`) {
		t.Errorf("the first real admin_reset_key: %s %+v, want rotation 1", r.Result, r.Error)
	}
}

// deleteReceived clears /_received and returns the HTTP status.
func deleteReceived(base string) (int, error) {
	req, err := http.NewRequest(http.MethodDelete, base+"/_received", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
