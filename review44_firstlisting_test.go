package mcpguard_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review44Hold is a _meta value whose encoding, once armed, closes in and
// waits for release: it holds a resources/list between the guard's
// filtering of the listing and its recording of what the session was
// shown.
type review44Hold struct {
	armed       *atomic.Bool
	in, release chan struct{}
}

func (h review44Hold) MarshalJSON() ([]byte, error) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.in)
		<-h.release
	}
	return []byte(`"hold"`), nil
}

// TestReview44FirstListingOvertakenBySetPolicy: a session's first
// resources/list, filtered by the policy before a SetPolicy and recorded
// only after that SetPolicy's check (which passed the session by: it had
// been shown nothing), has the session checked again: its client, sent a
// listing without the UI resource the new policy shows its caller, is told
// that the listing changed. (A session that listed before is told by the
// check itself; see TestReview32ListingOvertakenByCheck.)
func TestReview44FirstListingOvertakenBySetPolicy(t *testing.T) {
	var armed atomic.Bool
	hold := review44Hold{&armed, make(chan struct{}), make(chan struct{})}
	srv := review26Server(true, nil)
	srv.AddResource(&mcp.Resource{URI: "file:///hold", Name: "hold", Meta: mcp.Meta{"h": hold}},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	h := review26Guard(t, srv)
	sentinel := review26Connect(t, h, bob, true)
	if resp := sentinel.response("resources/list", `{}`); strings.Contains(resp, uiAdmin) {
		t.Fatalf("bob's listing under the first policy: %s", resp)
	}
	r := review26Connect(t, h, bob, true)
	listChanged := func(m jsonrpc.Message) bool {
		q, ok := m.(*jsonrpc.Request)
		return ok && !q.ID.IsValid() && q.Method == "notifications/resources/list_changed"
	}
	var once sync.Once
	release := func() { once.Do(func() { close(hold.release) }) }
	t.Cleanup(release) // before the sessions close: no handler is left held
	armed.Store(true)
	id := r.start("resources/list", `{}`)
	select {
	case <-hold.in:
	case <-time.After(5 * time.Second):
		t.Fatal("the resources/list was not held")
	}
	cfg := uiPolicy()
	cfg.RoleRules = []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin", "user"}}}
	pa, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.SetPolicy(pa); err != nil {
		t.Fatal(err)
	}
	for !listChanged(sentinel.read()) { // the check ran
	}
	release()
	var listing string
	told := false
	for listing == "" || !told {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := r.conn.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("answered the held listing: %v; told its listing changed: %v (%v)", listing != "", told, err)
		}
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
			listing = string(resp.Result)
		}
		told = told || listChanged(m)
	}
	if strings.Contains(listing, uiAdmin) {
		t.Errorf("the held listing, filtered by the first policy, shows %s: %s", uiAdmin, listing)
	}
}
