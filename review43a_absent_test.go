package mcpguard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review43aRefusing is a server whose SubscribeHandler, UnsubscribeHandler
// and CompletionHandler refuse every URI with an error whose message names
// it: a plain error, or (jsonrpcErr) a *jsonrpc.Error with no data.
func review43aRefusing(withAdmin, jsonrpcErr bool) *mcp.Server {
	refuse := func(uri string) error {
		if jsonrpcErr {
			return &jsonrpc.Error{Code: 4242, Message: "no such resource as " + uri}
		}
		return errors.New("no such resource as " + uri)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			return refuse(req.Params.URI)
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			return refuse(req.Params.URI)
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return nil, refuse(req.Params.Ref.URI)
		},
	})
	s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	if withAdmin {
		s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
	}
	return s
}

// TestReview43aAbsentErrorsStripped: a handler's refusal of a hidden UI
// resource's URI, asked about with the guard's suffix, reaches bob as the
// server without the resource answers: the suffix out of the message, of a
// plain error and of a *jsonrpc.Error with no data (which gets none), and
// its code kept.
func TestReview43aAbsentErrorsStripped(t *testing.T) {
	for _, jsonrpcErr := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "jsonrpc"}[jsonrpcErr], func(t *testing.T) {
			var probes [][2]string
			for _, p := range review43aProbes(uiAdmin, true) {
				if p[0] != "resources/read" && p[0] != "resources/list" {
					probes = append(probes, p)
				}
			}
			build := func(withAdmin bool) *mcp.Server { return review43aRefusing(withAdmin, jsonrpcErr) }
			for i, want := range review26SameOn(t, build, true, probes) {
				if !strings.Contains(want, `"message":"no such resource as `+uiAdmin+`"`) {
					t.Errorf("the server without the resource answered %s %s with %s, want its refusal", probes[i][0], probes[i][1], want)
				}
			}
		})
	}
}

// TestReview43aCompletionWithoutRef: a completion/complete with no ref, or
// no params, is answered as by the server without the guard (the go-sdk
// refuses it as invalid), not refused as a malformed result.
func TestReview43aCompletionWithoutRef(t *testing.T) {
	g := review26Connect(t, review26Guard(t, review26Server(true, nil)), bob, true)
	bare := rawConnectTo(t, review26Server(true, nil), nil)
	for _, params := range []string{
		`{"argument":{"name":"name","value":""}}`,
		`{"ref":null,"argument":{"name":"name","value":""}}`,
		`null`,
		`{}`,
	} {
		got, want := g.response("completion/complete", params), bare.response("completion/complete", params)
		if !strings.Contains(want, `"error":{"code":-3260`) || !strings.Contains(want, "invalid") {
			t.Errorf("the server without the guard answered completion/complete %s with %s, want it invalid", params, want)
		}
		if got != want {
			t.Errorf("bob's completion/complete %s:\n got %s\nwant %s", params, got, want)
		}
	}
}
