package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review45bRefusals returns the lines of log that log a result the guard
// refused ("mcpguard: result refused"), each line's attributes decoded.
func review45bRefusals(t *testing.T, log *review25kLog) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(log.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %v: %s", err, line)
		}
		if m["msg"] == "mcpguard: result refused" {
			out = append(out, m)
		}
	}
	return out
}

// TestReview45bMalformedResultLogged: a result the guard refuses because
// its caller's client could not read it (here a prompt's _meta nested
// 1100 levels deep) is logged, at ERROR, once: with its method, why, and
// the correlation id its caller was told, by which the refusal is found in
// the log.
func TestReview45bMalformedResultLogged(t *testing.T) {
	log := &review25kLog{}
	h := review25kHarness(t, log, nil, func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "deep"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Meta: mcp.Meta{"d": review20Deep(1100)}}, nil
		})
	})
	cs := review24cConnect(t, h, bob, "")
	_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "deep"})
	review24cRefused(t, "prompts/get", err)
	var data struct {
		CorrelationID string `json:"correlation_id"`
	}
	if we := wireError(err); we == nil || json.Unmarshal(we.Data, &data) != nil || data.CorrelationID == "" {
		t.Fatalf("prompts/get: %v, want a refusal whose data has a correlation id", err)
	}
	lines := review45bRefusals(t, log)
	if len(lines) != 1 {
		t.Fatalf("%d lines log a refused result, want 1: %s", len(lines), log.String())
	}
	l := lines[0]
	if l["level"] != "ERROR" || l["method"] != "prompts/get" || l["correlation_id"] != data.CorrelationID {
		t.Errorf("the refusal's log line %v, want level ERROR, method prompts/get, correlation_id %q", l, data.CorrelationID)
	}
	if why, _ := l["err"].(string); !strings.Contains(why, "nested") {
		t.Errorf("the refusal's log line says why %q, want that the result is nested too deep", why)
	}
}

// TestReview45bListRefusedWhateverFollows: a prompts/list or
// resources/templates/list result is refused (-32603, as a malformed
// result) when any one of its items could not be read by its caller's
// client (here a _meta nested 1100 levels deep), whatever items follow it
// in the listing: one that could, or the same item's annotations, which
// are read too. The same listings without the bad _meta pass.
func TestReview45bListRefusedWhateverFollows(t *testing.T) {
	none := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil }
	noPrompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil }
	ann := &mcp.Annotations{Priority: 0.5}
	cases := []struct {
		name   string
		method string
		add    func(s *mcp.Server, meta mcp.Meta)
	}{
		{"prompt_then_good_prompt", "prompts/list", func(s *mcp.Server, meta mcp.Meta) {
			s.AddPrompt(&mcp.Prompt{Name: "a", Meta: meta}, noPrompt)
			s.AddPrompt(&mcp.Prompt{Name: "b"}, noPrompt)
		}},
		{"template_then_good_template", "resources/templates/list", func(s *mcp.Server, meta mcp.Meta) {
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///a/{x}", Name: "a", Meta: meta}, none)
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///b/{x}", Name: "b", Annotations: ann}, none)
		}},
		{"template_with_annotations", "resources/templates/list", func(s *mcp.Server, meta mcp.Meta) {
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///a/{x}", Name: "a", Meta: meta, Annotations: ann}, none)
		}},
	}
	for _, c := range cases {
		for _, bad := range []bool{false, true} {
			meta := mcp.Meta{"d": review20Deep(10)}
			if bad {
				meta = mcp.Meta{"d": review20Deep(1100)}
			}
			h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) { c.add(s, meta) })
			cs := h.connect(bob, clientOpts{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var err error
			if c.method == "prompts/list" {
				_, err = cs.ListPrompts(ctx, nil)
			} else {
				_, err = cs.ListResourceTemplates(ctx, nil)
			}
			cancel()
			what := fmt.Sprintf("%s (%s, a bad _meta %v)", c.method, c.name, bad)
			if bad {
				review24cRefused(t, what, err)
			} else if err != nil {
				t.Errorf("%s: %v, want the listing", what, err)
			}
			review24cAlive(t, cs)
		}
	}
}

// TestReview45bNilListItemPassed: a nil item in a resources/templates/list
// or prompts/list result (here appended by a middleware below the guard)
// has nothing the caller's client could not read: the guard passes the
// listing as the go-sdk sends it, a null item in it, and refuses nothing.
func TestReview45bNilListItemPassed(t *testing.T) {
	none := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil }
	noPrompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil }
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///a/{x}", Name: "a",
			Annotations: &mcp.Annotations{Priority: 0.5}}, none)
		s.AddPrompt(&mcp.Prompt{Name: "a"}, noPrompt)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				switch r := res.(type) {
				case *mcp.ListResourceTemplatesResult:
					r.ResourceTemplates = append(r.ResourceTemplates, nil)
				case *mcp.ListPromptsResult:
					r.Prompts = append(r.Prompts, nil)
				}
				return res, err
			}
		})
	})
	cs := h.connect(bob, clientOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if res, err := cs.ListResourceTemplates(ctx, nil); err != nil || len(res.ResourceTemplates) != 2 || res.ResourceTemplates[1] != nil {
		t.Errorf("resources/templates/list with a nil template: %v %s, want the listing, a null last", err, mustJSON(res))
	}
	if res, err := cs.ListPrompts(ctx, nil); err != nil || len(res.Prompts) != 2 || res.Prompts[1] != nil {
		t.Errorf("prompts/list with a nil prompt: %v %s, want the listing, a null last", err, mustJSON(res))
	}
}
