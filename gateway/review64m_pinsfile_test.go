package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview64mPinsFileRawName: the pins a trust-on-first-use set approved,
// written by [Pins.MarshalJSON] (the examples/gateway binary's
// --print-pins) and read back by [ParsePins] (--tool-pins), approve the
// same tools. A downstream that writes a tool's name with a byte of
// invalid UTF-8 ("caf\xe9", Latin-1) has it approved under those bytes,
// but the file holds the name as every JSON encoder writes it, with
// U+FFFD, the name a client reads (the go-sdk's decoder, encoding/json,
// JSON.parse alike): with the fixed set, the approved tool is withheld from
// every listing (TOOL_NOT_PINNED) and its calls are refused, though its
// definition never changed.
func TestReview64mPinsFileRawName(t *testing.T) {
	tool := "{\"name\":\"caf\xe9\",\"description\":\"Order a coffee.\",\"inputSchema\":{\"type\":\"object\"}}"
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[`+tool+`]}}`)
	}))
	list := func(pins *Pins) string {
		t.Helper()
		g, err := New(down.URL, DemoTokens(), &Options{Pins: pins, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		gw := newServer(t, g)
		rg := &rig{url: gw.URL}
		return rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).body
	}
	tofu := TrustOnFirstUse()
	if got := list(tofu); !strings.Contains(got, "Order a coffee.") {
		t.Fatalf("trust on first use: the tool withheld from its first listing: %q", got)
	}
	file, err := json.Marshal(tofu)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := ParsePins(file)
	if err != nil {
		t.Fatalf("ParsePins(%s): %v", file, err)
	}
	if got := list(fixed); !strings.Contains(got, "Order a coffee.") {
		t.Errorf("the fixed set read from the approved pins %s withholds the unchanged tool: %q", file, got)
	}
	if v := fixed.callable("caf\ufffd"); v != pinOK {
		t.Errorf("the fixed set refuses a call of the approved tool under the name a client read: %v", v)
	}
}

// TestReview64mPinsFileEmptyName: a trust-on-first-use set approves a tool
// whose name is empty (a downstream lists {"name":""}), and
// [Pins.MarshalJSON] writes it, but [ParsePins] refuses the file it wrote
// ("empty tool name"): the --print-pins file of such a downstream stops
// the examples/gateway binary's --tool-pins from starting, though
// ParsePins is documented to read what MarshalJSON writes.
func TestReview64mPinsFileEmptyName(t *testing.T) {
	tofu := TrustOnFirstUse()
	tofu.listed("", ToolDigest(json.RawMessage(`{"name":""}`)))
	tofu.listed("t", ToolDigest(json.RawMessage(`{"name":"t"}`)))
	file, err := json.Marshal(tofu)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePins(file); err != nil {
		t.Errorf("ParsePins of the pins MarshalJSON wrote (%s): %v", file, err)
	}
}
