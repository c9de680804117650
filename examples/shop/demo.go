package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stack is a synthetic gateway and a shop server in front of it, both on
// 127.0.0.1, in this process: what `shop demo` and the HTTP tests run.
type stack struct {
	gw      *fakeGateway
	gwURL   string
	shop    *shop
	mcpURL  string
	stop    func()
	stopped chan struct{}
}

// startStack starts the stack. cfg.gateway is filled in; edit lets a
// caller adjust the built server (a test adds middleware) before it serves.
func startStack(cfg config, o httpOptions, stderr io.Writer, log *slog.Logger, edit func(*shop)) (*stack, error) {
	st := &stack{gw: newFakeGateway(), stopped: make(chan struct{})}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	gwDone := make(chan struct{})
	go func() { _ = serveHTTP(ctx, gln, loopback.Guard(st.gw)); close(gwDone) }()
	st.gwURL = "http://" + gln.Addr().String()
	cfg.gateway = st.gwURL
	st.shop, err = newShop(cfg, stderr, log)
	if err != nil {
		cancel()
		<-gwDone
		return nil, err
	}
	if edit != nil {
		edit(st.shop)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		<-gwDone
		st.shop.Close()
		return nil, err
	}
	st.mcpURL = "http://" + ln.Addr().String() + "/mcp"
	go func() {
		_ = serveHTTP(ctx, ln, mcpHandler(st.shop.server, o, log))
		<-gwDone
		st.shop.Close()
		close(st.stopped)
	}()
	st.stop = func() { cancel(); <-st.stopped }
	return st, nil
}

// bearer adds the caller's RoboShop session to each request.
type bearer struct {
	session string
	next    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.session)
	return b.next.RoundTrip(r)
}

// connectHTTP connects a go-sdk client to url as session.
func connectHTTP(ctx context.Context, url, session string, opts *mcp.ClientOptions, cso *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "shop-client", Version: "v1"}, opts)
	hc := &http.Client{Transport: bearer{session, http.DefaultTransport}}
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, cso)
}

// demo runs the server against the synthetic gateway and shows what a
// customer and an admin see.
func demo(ctx context.Context, out io.Writer) error {
	cfg := defaultConfig()
	cfg.adminWrites = true
	st, err := startStack(cfg, httpOptions{}, io.Discard, nil, nil)
	if err != nil {
		return err
	}
	defer st.stop()
	fmt.Fprintf(out, "RoboShop MCP server at %s, synthetic gateway at %s, admin writes enabled\n", st.mcpURL, st.gwURL)

	ada, err := connectHTTP(ctx, st.mcpURL, sessionCustomer, nil, nil)
	if err != nil {
		return err
	}
	defer ada.Close()
	lt, err := ada.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range lt.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(out, "\n== customer ada discovers %d tools:\n   %s\n", len(names), strings.Join(names, ", "))

	show := func(who string, cs *mcp.ClientSession, tool string, args any) error {
		raw, _ := json.Marshal(args)
		fmt.Fprintf(out, "\n== %s calls %s %s\n", who, tool, raw)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			fmt.Fprintf(out, "   refused: %v\n", err)
			return nil
		}
		b, _ := json.MarshalIndent(res.StructuredContent, "   ", "  ")
		if res.IsError {
			fmt.Fprintf(out, "   tool error: %s\n", b)
			return nil
		}
		fmt.Fprintf(out, "   %s\n", b)
		return nil
	}
	steps := []struct {
		tool string
		args any
	}{
		{"search_products", map[string]any{"query": "robot vacuum", "limit": 3}},
		{"compare_products", map[string]any{"skus": []string{"RB-200", "RB-300", "RB-999"}}},
		{"update_cart", map[string]any{"sku": "RB-100", "quantity": 2}},
		{"update_cart", map[string]any{"sku": "RB-100", "quantity": "2"}},
		{"get_product", map[string]any{"sku": "RB-999"}},
		{"admin_list_users", map[string]any{}},
	}
	for _, s := range steps {
		if err := show("customer ada", ada, s.tool, s.args); err != nil {
			return err
		}
	}

	asked := func(action string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Fprintf(out, "   [the client asks its user] %q -> %s\n", r.Params.Message, action)
			return &mcp.ElicitResult{Action: action}, nil
		}}
	}
	for _, action := range []string{"decline", "accept"} {
		grace, err := connectHTTP(ctx, st.mcpURL, sessionAdmin, asked(action), nil)
		if err != nil {
			return err
		}
		err = show("admin grace", grace, "admin_set_price", map[string]any{"sku": "RB-300", "price": 34.5})
		grace.Close()
		if err != nil {
			return err
		}
	}
	if p := st.gw.price("RB-300"); p != 34.5 {
		return errors.New("the confirmed price change did not reach the gateway")
	}
	fmt.Fprintf(out, "\nthe gateway now lists RB-300 at %.2f EUR\n", st.gw.price("RB-300"))
	return nil
}
