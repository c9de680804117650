package mcpguard

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview26WithoutSuffixKeepsNumbers: a message a handler sends while
// the guard asks about a hidden UI resource has the guard's suffix taken
// out by a JSON round trip; the numbers of its untyped data were read as
// float64, so one above 2^53 came out changed, and one beyond float64's
// range failed the message (dropped).
func TestReview26WithoutSuffixKeepsNumbers(t *testing.T) {
	data := json.RawMessage(`{"uri":"ui://admin/app` + absentSuffix + `","n":9007199254740993,"big":1e400}`)
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 a log message from a handler, deprecated or not
	req := &mcp.LoggingMessageRequest{Params: &mcp.LoggingMessageParams{Level: "info", Data: v}}
	out, ok := withoutSuffix(req)
	if !ok {
		t.Fatal("withoutSuffix failed a message with a number beyond float64's range")
	}
	got, err := json.Marshal(out.(*mcp.LoggingMessageRequest).Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"big":1e400,"n":9007199254740993,"uri":"ui://admin/app"}`; string(got) != want {
		t.Errorf("data = %s, want %s", got, want)
	}
}
