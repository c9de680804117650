package gateway

import (
	"testing"
)

// TestReview29bOutcomeOnlyTheCallsAnswer: with Pins the gateway reads
// every message of a tools/call's answer, but the outcome record must say
// what the call's own response says, the one its client takes: the first
// JSON-RPC response with the call's id (the go-sdk client stops reading the
// stream there). Before, any message with an "error" object or a result
// with isError true set the detail: a response with another id, a second
// response the client never read, so a call whose client got a success
// was recorded "downstream answered a JSON-RPC error" or "tool reported an
// error". Requests and notifications in the stream, whatever their params
// hold, say nothing either; the call's own response still does, with its id
// in another spelling a client takes as the same (7.0), or in a JSON array.
// A JSON answer that holds no response to the call is relayed all the
// same and recorded allowed, saying it had none.
func TestReview29bOutcomeOnlyTheCallsAnswer(t *testing.T) {
	const (
		otherError   = `{"jsonrpc":"2.0","id":99,"error":{"code":-32603,"message":"boom"}}`
		otherIsError = `{"jsonrpc":"2.0","id":"7","result":{"content":[],"isError":true}}`
		elicit       = `{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"m","isError":true,"error":{"code":1}}}`
		progress     = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"error":{"code":1},"result":{"isError":true}}}`
		next         = "\n\ndata: "
		sse          = "text/event-stream"
		js           = "application/json"
		noResponse   = "downstream's answer had no JSON-RPC response"
	)
	single := call(`7`, "get_customer_record", "")
	cases := []struct {
		name   string
		a      r29Answer
		detail string
	}{
		{"stream: another id's error, then the result", r29Answer{200, sse, otherError + next + r29Result}, ""},
		{"stream: another id's tool error (a string id), then the result", r29Answer{200, sse, otherIsError + next + r29Result}, ""},
		{"stream: the result, then a second response with an error", r29Answer{200, sse, r29Result + next + r29RPCError}, ""},
		{"stream: the result, then a second response with isError", r29Answer{200, sse, r29Result + next + r29IsError}, ""},
		{"stream: a server request whose params hold isError and error", r29Answer{200, sse, elicit + next + r29Result}, ""},
		{"stream: a progress notification with error and result", r29Answer{200, sse, progress + next + r29Result}, ""},
		{"stream: the tool error, then a second response with a result", r29Answer{200, sse, r29IsError + next + r29Result}, "tool reported an error"},
		{"stream: another id's result, then the call's error", r29Answer{200, sse, `{"jsonrpc":"2.0","id":99,"result":{}}` + next + r29RPCError},
			"downstream answered a JSON-RPC error"},
		{"stream: the call's error with id 7.0", r29Answer{200, sse, `{"jsonrpc":"2.0","id":7.0,"error":{"code":-1,"message":"x"}}`},
			"downstream answered a JSON-RPC error"},
		{"JSON: another id's error", r29Answer{200, js, otherError}, noResponse},
		{"JSON: a server request whose params hold error", r29Answer{200, js, elicit}, noResponse},
		{"JSON: an array with the call's tool error", r29Answer{200, js, `[` + otherError + `,` + r29IsError + `]`}, "tool reported an error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := r29Outcomes(t, true, tc.a, single, true, 1)
			if len(events) != 1 {
				t.Fatalf("%d outcome records, want 1: %+v", len(events), events)
			}
			if e := events[0]; !e.Allowed || e.Code != "" || e.Detail != tc.detail {
				t.Errorf("record allowed=%v code=%q detail=%q, want allowed code \"\" detail %q", e.Allowed, e.Code, e.Detail, tc.detail)
			}
		})
	}
}
