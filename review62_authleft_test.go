package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r62Waiting is a TokenAuthenticator that, as the token package's do,
// gives up when its context ends, with an error that says it could not
// judge the token.
type r62Waiting struct{ err error }

func (w r62Waiting) Authenticate(ctx context.Context, _ string) (*policy.Principal, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("%w: waiting for the endpoint: %w", w.err, ctx.Err())
}

// TestReview62BearerClientLeftDetail: a call whose client went away while
// its bearer token was being checked was recorded "the identity provider
// did not answer" (or the key set could not be fetched): an operator
// reading the trail looked for an outage of the provider's that was the
// client's leaving. The gateway's record says the client went away before
// its token was checked; so does the Guard's.
func TestReview62BearerClientLeftDetail(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cause := range []error{token.ErrIntrospectionFailed, token.ErrKeySetUnavailable} {
		sink := &memSink{}
		g, err := mcpguard.New(pol, mcpguard.Bearer(r62Waiting{cause}), &mcpguard.Options{Audit: sink, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := req("r", `{}`)
		r.Extra = &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer opaque-token-1"}}}
		h(ctx, r)
		evs := sink.all()
		const want = "the client went away (the call's context ended) before its token was checked"
		if len(evs) != 1 || evs[0].Detail != want {
			t.Errorf("%v: records %+v, want one with detail %q", cause, evs, want)
		}
	}
}
