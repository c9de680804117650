package stdio

import (
	"io"
	"strings"
	"testing"
)

// TestReview20EchoedIDAsTheSDKWritesIt: the transport answers a refused
// request with its id re-encoded. It encoded it with encoding/json's HTML
// escaping, which the go-sdk turns off for its own answers: an id "<a>&"
// came back from the SDK as "<a>&" but from the transport as
// "\u003ca\u003e\u0026", and an id of '<' six times as long as it was
// sent (a 16 MiB line of them, some 96 MiB of answer and several times
// that in memory). The transport now writes ids as the SDK does.
func TestReview20EchoedIDAsTheSDKWritesIt(t *testing.T) {
	big := strings.Repeat("<", 256<<10)
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","id":"<a>&","method":"ping"}`, // answered by the go-sdk
		`{"jsonrpc":"1.0","id":"<b>&","method":"ping"}`, // refused by the transport (-32600)
		`{"jsonrpc":"1.0","id":"` + big + `","method":"ping"}`,
	}, "\n") + "\n"
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(out.String(), `"id":"<a>&"`) {
		t.Fatalf("the go-sdk's own answer does not carry the id as sent; output:\n%.2000s", out)
	}
	if !strings.Contains(out.String(), `"id":"<b>&","error":{"code":-32600`) {
		t.Errorf("the transport's answer does not carry the id as the go-sdk writes one; output:\n%.2000s", out)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if len(line) > 2*len(big) {
			t.Errorf("an answer of %d bytes to a line of %d bytes: %.200s...", len(line), len(big)+50, line)
		}
	}
}
