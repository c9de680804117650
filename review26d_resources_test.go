package mcpguard_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review26dLenient reads uri as a lenient handler does (as uriKey says a
// template's handler may): its percent-escapes decoded until none are
// left, then its query and fragment ignored.
func review26dLenient(uri string) string {
	for range 8 {
		d, err := url.PathUnescape(uri)
		if err != nil || d == uri {
			break
		}
		uri = d
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	return uri
}

// review26dServer is a server whose SubscribeHandler and CompletionHandler
// read the URI they are asked about leniently (review26dLenient), and refuse
// one the server does not have with the go-sdk's not-found error, as the
// go-sdk advises; the completion of one it has is a secret of it. withAdmin
// adds the admin tool and its UI resource.
func review26dServer(withAdmin bool) *mcp.Server {
	have := map[string]bool{uiOpen: true}
	if withAdmin {
		have[uiAdmin] = true
	}
	var mu sync.Mutex
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			if !have[review26dLenient(req.Params.URI)] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			u := review26dLenient(req.Params.Ref.URI)
			mu.Lock()
			defer mu.Unlock()
			if !have[u] {
				return nil, mcp.ResourceNotFoundError(req.Params.Ref.URI)
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"secret of " + u}, Total: 1}}, nil
		},
	})
	addTools(s, &spy{})
	add := func(uri string) {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
			})
	}
	s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	add(uiOpen)
	if withAdmin {
		s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		add(uiAdmin)
	}
	return s
}

// TestReview26dEscapedQueryHiddenLooksAbsent: the guard hides a URI whose
// percent-escapes decode to the hidden UI resource's with a query or
// fragment ("ui://admin/app%3Fv=2", as uriKey reads it), and asks the server
// about it with its suffix before the query or fragment. It looked for them
// in the URI as written only, so the suffix went after the escaped "?" or
// "#": a handler that decodes the URI and ignores its query (as uriKey
// says one may) ignored the suffix too and answered about the hidden
// resource itself, to bob who may not see it: its completion's values (a
// secret of it), and a subscription taken where an absent URI's is
// refused. Now both are answered as the server without the resource
// answers them.
func TestReview26dEscapedQueryHiddenLooksAbsent(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		g := review26Connect(t, review26Guard(t, review26dServer(true)), bob, legacy)
		w := review26Connect(t, review26Guard(t, review26dServer(false)), bob, legacy)
		for _, uri := range []string{"ui://admin/app%3Fv=2", "ui://admin/app%23top", "ui://admin/app%253Fv", "ui://admin/app%25%33%46v", "ui://admin/app%3f", "ui://admin/%61pp%2523x?y#z"} {
			probes := [][2]string{
				{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"name","value":"a"}}`},
			}
			if legacy {
				probes = append(probes, [2]string{"resources/subscribe", `{"uri":` + review26Q(uri) + `}`})
			}
			for _, p := range probes {
				got := review26Corr.ReplaceAllString(g.response(p[0], p[1]), "${1}X")
				want := review26Corr.ReplaceAllString(w.response(p[0], p[1]), "${1}X")
				if got != want || strings.Contains(got, "secret") {
					t.Errorf("legacy=%v: bob's %s %s:\n got %s\nwant %s", legacy, p[0], p[1], got, want)
				}
			}
		}
	}
}

// TestReview26dMixedListenHearsVisible: a listen of bob's naming a UI
// resource he may see and one he may not is acknowledged with the URIs as
// he named them, and he hears of the visible one's updates, not the hidden
// one's; alice, who may see both, hears of both. Many sessions at once.
func TestReview26dMixedListenHearsVisible(t *testing.T) {
	s := review26cServer(true, false)
	h := review26Guard(t, s)
	type who struct {
		r    *rawSession
		both bool
	}
	var all []who
	for i := range 6 {
		id, both := bob, false
		if i%2 == 1 {
			id, both = alice, true
		}
		r := modernConnect(t, s, func(ss *mcp.ServerSession) {
			h.auth.mu.Lock()
			h.auth.ids[ss] = id
			h.auth.mu.Unlock()
		})
		all = append(all, who{r, both})
	}
	var wg sync.WaitGroup
	acks := make([]string, len(all))
	for i, w := range all {
		wg.Go(func() {
			got := w.r.untilAnswered("subscriptions/listen", `{"notifications":{"resourceSubscriptions":[`+review26Q(uiAdmin)+`,`+review26Q(uiOpen)+`]},`+r23bMeta+`}`)
			acks[i] = got[len(got)-1]
		})
	}
	wg.Wait()
	for i, a := range acks {
		if !strings.Contains(a, `"resourceSubscriptions":["ui://admin/app","ui://open/app"]`) {
			t.Errorf("session %d's acknowledgement %s", i, a)
		}
	}
	for _, uri := range []string{uiAdmin, uiOpen} {
		if err := s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		for i, w := range all {
			want := uri == uiOpen || w.both
			if got := w.r.heardWithin("notifications/resources/updated", 300*time.Millisecond); got != want {
				t.Errorf("session %d heard of %s: %v, want %v", i, uri, got, want)
			}
		}
	}
}
