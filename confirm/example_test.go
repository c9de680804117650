package confirm_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/confirm"
)

// confirmGuard is the confirmation step as a guard runs it, for a caller
// already authenticated as subject.
func confirmGuard(s *confirm.Signer, subject string, next mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := req.Params
		sum, err := confirm.ArgsSHA256(p.Arguments)
		if err != nil {
			return deny("INVALID_ARGUMENTS"), nil
		}
		c := confirm.Claims{Subject: subject, Tool: p.Name, ArgsSHA256: sum}
		if p.RequestState == "" { // first round: ask the human
			st, err := s.Issue(time.Now(), c)
			if err != nil {
				return deny("INTERNAL"), nil
			}
			return confirm.Ask(confirm.Describe(p.Name, p.Arguments), st), nil
		}
		if err := s.Verify(ctx, time.Now(), p.RequestState, c); err != nil {
			return deny("CONFIRMATION_REQUIRED"), nil // replayed, expired, other args or caller…
		}
		if action, _ := confirm.Answer(p); action != "accept" {
			return deny("CONFIRMATION_REQUIRED"), nil // declined, cancelled or unanswered
		}
		return next(ctx, req)
	}
}

func deny(code string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: code}}}
}

// Example shows the two-step confirmation of a refund: the server answers
// the first call with an elicitation stating the exact action and a signed
// state; the client asks its user and retries with the answer; the refund
// runs once. The go-sdk client performs the retry itself.
func Example() {
	ctx := context.Background()
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "2026-07", Secret: []byte("use 32+ random bytes from a vault")}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	refund := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Println("server: refund executed")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}},
		confirmGuard(signer, "alice", refund))

	c := mcp.NewClient(&mcp.Implementation{Name: "app"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("user sees:", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "refund",
		Arguments: map[string]any{"customer_id": "CUST-00001", "amount": 12.5, "confirm": true},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("client gets:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// user sees: Run refund with amount=12.5, confirm=true, customer_id=CUST-00001
	// server: refund executed
	// client gets: refunded
}

// Example_manual performs the two rounds by hand, and shows that the state
// cannot be used twice.
func Example_manual() {
	ctx := context.Background()
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "2026-07", Secret: []byte("use 32+ random bytes from a vault")}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "close_account", InputSchema: map[string]any{"type": "object"}},
		confirmGuard(signer, "alice", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil
		}))
	c := mcp.NewClient(&mcp.Implementation{Name: "app"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	args := map[string]any{"account": "ACC-7"}
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "close_account", Arguments: args})
	if err != nil {
		log.Fatal(err)
	}
	ask := first.InputRequests[confirm.InputKey].(*mcp.ElicitParams)
	fmt.Println("round 1: needs input:", first.NeedsInput(), "|", ask.Message)

	answer := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	for round := 2; round <= 3; round++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "close_account", Arguments: args,
			InputResponses: answer, RequestState: first.RequestState,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("round %d: %s\n", round, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// round 1: needs input: true | Run close_account with account=ACC-7
	// round 2: closed
	// round 3: CONFIRMATION_REQUIRED
}
