package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// listingLater is a downstream whose every answer is an event stream that
// sends, once send is closed, one event with a tools/list result listing
// get_customer_record and trigger_refund, and then stays open until its
// request ends.
func listingLater(send <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-send:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":7,"result":{"tools":[`+
			`{"name":"get_customer_record","inputSchema":{"type":"object"}},`+
			`{"name":"trigger_refund","inputSchema":{"type":"object"}}]}}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// TestReview29SetPolicyListenStreamFilteredNow: a subscriptions/listen
// stream, which stays open for as long as a GET's (it is protocol
// 2026-07-28's standalone stream, counted with the GET streams in
// MaxStreams, without a timeout), has the listings it carries filtered by
// the policy of the moment, as a GET's has. It had them filtered by the
// policy of the moment it was opened: once SetPolicy hid trigger_refund
// from the viewer, a listing on a listen stream opened before still showed
// it, for as long as the stream lasted, while the same listing on a GET
// stream did not.
func TestReview29SetPolicyListenStreamFilteredNow(t *testing.T) {
	for _, listen := range []bool{false, true} {
		name := "get"
		if listen {
			name = "listen"
		}
		t.Run(name, func(t *testing.T) {
			send := make(chan struct{})
			ds := newServer(t, listingLater(send))
			t.Cleanup(ds.CloseClientConnections)
			g, err := New(ds.URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true, Pins: TrustOnFirstUse(), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			method, body := http.MethodGet, io.Reader(nil)
			if listen {
				method, body = http.MethodPost, strings.NewReader(r27Listen)
			}
			req, err := http.NewRequestWithContext(ctx, method, gw.URL+"/mcp", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Accept", "application/json, text/event-stream")
			if listen {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			// The stream is open: the policy changes, then the listing comes.
			if err := g.SetPolicy(refundsForAdmins(t)); err != nil {
				t.Fatal(err)
			}
			close(send)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				got := listedTools(t, data)
				if strings.Contains(strings.Join(got, ","), "trigger_refund") {
					t.Fatalf("the viewer's listing on the %s stream, after SetPolicy hid trigger_refund, is %v", name, got)
				}
				return
			}
			t.Fatalf("no listing on the stream: %v", sc.Err())
		})
	}
}

// onlyFor returns the default policy with the tools matching hidden kept
// for the role admin, and hidden from the others.
func onlyFor(t *testing.T, hidden string) *policy.Policy {
	t.Helper()
	cfg := DefaultPolicyConfig()
	cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: hidden, Roles: []string{"admin"}})
	cfg.ShowForbidden = false
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReview29SetPolicyGETListingOnePolicy: a listing on a GET stream is
// filtered by the policy of the moment it is filtered, one policy for the
// whole listing. Each of its tools was judged by the policy loaded for it
// alone: a SetPolicy while a listing was being filtered gave its client a
// listing that no policy made (here, the a_ tools of one policy with the
// b_ tools of the other, or none of either).
func TestReview29SetPolicyGETListingOnePolicy(t *testing.T) {
	const n, events = 100, 40
	var tools strings.Builder
	for i := range n {
		if i > 0 {
			tools.WriteByte(',')
		}
		fmt.Fprintf(&tools, `{"name":"a_%d","inputSchema":{"type":"object"}},{"name":"b_%d","inputSchema":{"type":"object"}}`, i, i)
	}
	listing := `data: {"jsonrpc":"2.0","id":7,"result":{"tools":[` + tools.String() + `]}}` + "\n\n"
	ds := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for range events {
			io.WriteString(w, listing)
			w.(http.Flusher).Flush()
		}
	}))
	g, err := New(ds.URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true, Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	hideA, hideB := onlyFor(t, "a_*"), onlyFor(t, "b_*")
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(done); wg.Wait() }()
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			p := hideA
			if i%2 == 1 {
				p = hideB
			}
			if err := g.SetPolicy(p); err != nil {
				t.Error(err)
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	seen := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		seen++
		var a, b int
		for _, name := range listedTools(t, data) {
			if strings.HasPrefix(name, "a_") {
				a++
			} else {
				b++
			}
		}
		if !(a == n && b == 0 || a == 0 && b == n) {
			t.Fatalf("listing %d shows %d a_ tools and %d b_ tools, want %d of one and none of the other", seen, a, b, n)
		}
	}
	if seen != events {
		t.Fatalf("%d listings, want %d: %v", seen, events, sc.Err())
	}
}
