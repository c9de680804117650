package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview59jTransientStatusOKNotForResponses: Options.TransientStatusOK
// answers 200 "a refusal of the gateway's own to a JSON-RPC request (one
// with an id)". A client's response to a server request (an elicitation's
// answer) is no request, and a client takes a 200 to it for accepted (the
// go-sdk's does, warning at most): it is answered 200 as well, with an error
// whose id is the server's request's.
func TestReview59jTransientStatusOKNotForResponses(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	defer down.Close()
	auth := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		return nil, ErrAuthenticatorUnavailable
	})
	g, err := New(down.URL+"/mcp", auth, &Options{Logger: discardLogger(), TransientStatusOK: true})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", viewer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if s, b := post(call("7", "get_customer_record", `{}`)); s != http.StatusOK {
		t.Fatalf("a request: %d %s, want 200 (TransientStatusOK)", s, b)
	}
	if s, b := post(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{}}}`); s == http.StatusOK {
		t.Errorf("a client's response refused, the authenticator down: %d %s; want its 502 kept "+
			"(a 200 tells the client its answer was accepted)", s, b)
	}
}
