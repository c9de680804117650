package mcpguard_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review44cResourcesBelow makes resources/list below the guard on srv
// answer with answer(the request's cursor). Call it before a guard is
// installed on srv.
func review44cResourcesBelow(srv *mcp.Server, answer func(cursor string) (mcp.Result, error)) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			cursor := ""
			if p, _ := req.GetParams().(*mcp.ListResourcesParams); p != nil {
				cursor = p.Cursor
			}
			return answer(cursor)
		}
	})
}

// review44cPages answers resources/list with pages of one resource each,
// file:///r<i>, pages in all, each but the last with a cursor for the next;
// asked counts the pages asked for.
func review44cPages(pages int, asked *atomic.Int64) func(cursor string) (mcp.Result, error) {
	return func(cursor string) (mcp.Result, error) {
		asked.Add(1)
		i, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
		res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{{URI: fmt.Sprintf("file:///r%d", i), Name: "r"}}}
		if i+1 < pages {
			res.NextCursor = fmt.Sprintf("c%d", i+1)
		}
		return res, nil
	}
}

// TestReview44cResourcePagesBounded: the guard pages through the server's
// resources/list to answer one, up to 1000 pages: a listing of 1000 pages
// is answered whole, in one page; one that goes on past them is refused
// after the 1000th page is read (a server whose cursors never end cannot
// hold the guard).
func TestReview44cResourcePagesBounded(t *testing.T) {
	for _, pages := range []int{1000, 1001} {
		t.Run(strconv.Itoa(pages), func(t *testing.T) {
			var asked atomic.Int64
			srv := review26Server(true, nil)
			review44cResourcesBelow(srv, review44cPages(pages, &asked))
			h := review26Guard(t, srv)
			r := review26Connect(t, h, bob, true)
			resp := r.response("resources/list", `{}`)
			resources, listed, cursor, errMsg := listAnswer(t, resp, "resources")
			if pages > 1000 {
				if listed || !strings.Contains(errMsg, "did not terminate") {
					t.Errorf("resources/list of %d pages: result %v, error %q; want only an error, that it did not terminate",
						pages, listed, errMsg)
				}
				if n := asked.Load(); n != 1000 {
					t.Errorf("resources/list of %d pages: %d pages asked for, want 1000", pages, n)
				}
				return
			}
			if !listed {
				t.Fatalf("resources/list of %d pages: error %q, want a result", pages, errMsg)
			}
			if len(resources) != pages || cursor != "" {
				t.Errorf("resources/list of %d pages: %d resources, cursor %q; want %d, none",
					pages, len(resources), cursor, pages)
			}
		})
	}
}

// TestReview44cResourceListingFails: when the server's resources/list
// below the guard fails, or answers with a result that is not a listing of
// resources (of another type, or a nil one), a caller's resources/list fails
// with that error, or as an unexpected result, on both protocols: not with a
// refusal of another kind, and never with a listing.
func TestReview44cResourceListingFails(t *testing.T) {
	answers := map[string]struct {
		res  mcp.Result
		err  error
		want string
	}{
		"error":      {nil, errors.New("review44c: resources/list is down"), "resources/list is down"},
		"nil_result": {(*mcp.ListResourcesResult)(nil), nil, "resources/list returned an unexpected result"},
		"other_type": {&mcp.ListToolsResult{}, nil, "resources/list returned an unexpected result"},
	}
	for name, a := range answers {
		for _, legacy := range []bool{false, true} {
			srv := review26Server(true, nil)
			review44cResourcesBelow(srv, func(string) (mcp.Result, error) { return a.res, a.err })
			h := review26Guard(t, srv)
			r := review26Connect(t, h, bob, legacy)
			what := fmt.Sprintf("resources/list answered below with %s (legacy %v)", name, legacy)
			if _, msg := review43aError(t, what, r.response("resources/list", `{}`)); !strings.Contains(msg, a.want) {
				t.Errorf("%s: message %q, want %q", what, msg, a.want)
			}
		}
	}
}
