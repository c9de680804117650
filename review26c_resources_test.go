package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review26cSuffix matches the guard's suffix, which it adds to a hidden UI
// resource's URI to ask the server about one it does not have.
var review26cSuffix = regexp.MustCompile(`-[a-z2-7]{26}`)

// review26cLogLevel is the _meta key of a request's log level on protocol
// 2026-07-28 (mcp.MetaKeyLogLevel, deprecated).
const review26cLogLevel = "io.modelcontextprotocol/logLevel"

// review26cServer is a server whose SubscribeHandler takes any URI (return
// nil, as the go-sdk's own example does), and whose UnsubscribeHandler
// refuses, quoting it, a URI the session is not subscribed to (it keeps
// each session's subscriptions, as a server that watches what it is
// subscribed to does). Each handler, the CompletionHandler too, logs the
// URI it is asked about on its request's context. With quote, the
// SubscribeHandler and CompletionHandler instead refuse every URI with an
// error that quotes it percent-encoded and JSON-escaped in its message, and
// in its data as a nested object. withAdmin adds the admin tools and their
// UI resources.
func review26cServer(withAdmin, quote bool) *mcp.Server {
	var mu sync.Mutex
	subs := map[*mcp.ServerSession]map[string]bool{}
	log := func(ctx context.Context, ss *mcp.ServerSession, what, uri string) {
		//lint:ignore SA1019 a log message from a handler, deprecated or not
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{what: uri}})
	}
	refusal := func(uri string) error {
		esc := strings.ReplaceAll(review26Q(uri), "/", `\u002f`)
		return &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidParams,
			Message: "cannot serve " + url.PathEscape(uri) + " " + url.QueryEscape(uri),
			Data:    json.RawMessage(`{"detail":{"uri":` + esc + `,"list":[` + review26Q(uri) + `]}}`),
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			log(ctx, req.Session, "subscribe", req.Params.URI)
			if quote {
				return refusal(req.Params.URI)
			}
			mu.Lock()
			defer mu.Unlock()
			if subs[req.Session] == nil {
				subs[req.Session] = map[string]bool{}
			}
			subs[req.Session][req.Params.URI] = true
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			log(ctx, req.Session, "unsubscribe", req.Params.URI)
			mu.Lock()
			defer mu.Unlock()
			if !subs[req.Session][req.Params.URI] {
				return fmt.Errorf("%w: not subscribed to %q", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "x"}, req.Params.URI)
			}
			delete(subs[req.Session], req.Params.URI)
			return nil
		},
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			log(ctx, req.Session, "complete", req.Params.Ref.URI)
			if quote {
				return nil, refusal(req.Params.Ref.URI)
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.URI, "ui://x"}, Total: 2}}, nil
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

// untilAnswered sends a request and returns every message the server sent
// until its answer or, for a listen, its acknowledgement (a listen the
// server takes is answered only when it ends), encoded as sent.
func (r *rawSession) untilAnswered(method, params string) []string {
	r.t.Helper()
	id := r.start(method, params)
	var out []string
	for {
		m := r.read()
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, review26Corr.ReplaceAllString(string(b), "${1}X"))
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
			return out
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/subscriptions/acknowledged" {
			return out
		}
	}
}

// TestReview26cHiddenSubscribeAnswersAsAbsent: resources/subscribe to, a
// subscriptions/listen naming, resources/unsubscribe from and
// completion/complete of the UI resource of a tool bob may not see are
// answered, with every notification their handlers send on the way (a log
// message quoting the URI, the listen's acknowledgement), byte for byte as
// the server without that tool answers them for a URI it lacks, in any
// order: also where the SubscribeHandler takes any URI (as the go-sdk's
// example does; before, the guard refused the hidden one as not found),
// the UnsubscribeHandler refuses a URI not subscribed to (a subscribe then
// an unsubscribe succeed on both), and a handler quotes the URI in its
// log, its values, or its error's message and data escaped or encoded.
// (A handler that answers by the URI's length is asked about a longer one:
// see asAbsent.)
func TestReview26cHiddenSubscribeAnswersAsAbsent(t *testing.T) {
	for _, quote := range []bool{false, true} {
		for _, legacy := range []bool{true, false} {
			t.Run(fmt.Sprintf("quote=%v/legacy=%v", quote, legacy), func(t *testing.T) {
				g := review26Connect(t, review26Guard(t, review26cServer(true, quote)), bob, legacy)
				w := review26Connect(t, review26Guard(t, review26cServer(false, quote)), bob, legacy)
				meta := func(p string) string {
					if legacy {
						return p
					}
					return withNewMeta(t, p, "2026-07-28")
				}
				var probes [][2]string
				if legacy {
					probes = append(probes, [2]string{"logging/setLevel", `{"level":"debug"}`})
				}
				for _, uri := range []string{uiAdmin, "UI://ADMIN/APP", "ui://admin/%61pp"} {
					complete := `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"name","value":"a"}}`
					if !legacy {
						complete = `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"name","value":"a"},"_meta":{"` + review26cLogLevel + `":"debug"}}`
					}
					probes = append(probes, [2]string{"completion/complete", complete})
					if legacy {
						probes = append(probes,
							[2]string{"resources/unsubscribe", `{"uri":` + review26Q(uri) + `}`},
							[2]string{"resources/subscribe", `{"uri":` + review26Q(uri) + `}`},
							[2]string{"resources/subscribe", `{"uri":` + review26Q(uri) + `}`},
							[2]string{"resources/unsubscribe", `{"uri":` + review26Q(uri) + `}`},
							[2]string{"resources/unsubscribe", `{"uri":` + review26Q(uri) + `}`},
						)
					}
				}
				for _, p := range probes {
					got := g.untilAnswered(p[0], meta(p[1]))
					want := w.untilAnswered(p[0], meta(p[1]))
					if !slices.Equal(got, want) {
						t.Errorf("bob's %s %s:\n got %s\nwant %s", p[0], p[1], strings.Join(got, "\n     "), strings.Join(want, "\n     "))
					}
				}
				// A listen last: the server's stays open when it takes it.
				listen := `{"notifications":{"resourceSubscriptions":[` + review26Q(uiOpen) + `,` + review26Q(uiAdmin) + `,"UI://ADMIN/APP"]}}`
				if !legacy {
					listen = `{"notifications":{"resourceSubscriptions":[` + review26Q(uiOpen) + `,` + review26Q(uiAdmin) + `,"UI://ADMIN/APP"]},"_meta":{"` + review26cLogLevel + `":"debug"}}`
				}
				got := g.untilAnswered("subscriptions/listen", meta(listen))
				want := w.untilAnswered("subscriptions/listen", meta(listen))
				if !slices.Equal(got, want) {
					t.Errorf("bob's subscriptions/listen:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
				}
			})
		}
	}
}

// TestReview26cHiddenUnsubscribePanicsAsAbsent: resources/unsubscribe from
// a hidden UI resource is passed on, its answer dropped (so that an old
// subscription ends); an UnsubscribeHandler that panics at the resource
// (and not at a URI the server lacks) made that pass answer bob as a
// malformed result, where the server without the resource answers him
// as for any absent URI. The panic is now logged only.
func TestReview26cHiddenUnsubscribePanicsAsAbsent(t *testing.T) {
	srv := func(withAdmin bool) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
			SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
				if withAdmin && req.Params.URI == uiAdmin {
					panic("no watcher for " + req.Params.URI)
				}
				return nil
			},
		})
		s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
		if withAdmin {
			s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		}
		return s
	}
	review26SameOn(t, srv, true, [][2]string{{"resources/unsubscribe", `{"uri":` + review26Q(uiAdmin) + `}`}})
}
