package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrintPinsNullInstructions: a downstream whose initialize (or
// server/discover) answer gives its instructions as JSON null, which the
// go-sdk client reads as none: the file --print-pins writes must be one
// --tool-pins reads. It held "#instructions": "", which ParsePins refuses.
func TestPrintPinsNullInstructions(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, &mcp.ServerOptions{Instructions: "Look records up."})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup"}, func(context.Context, *mcp.CallToolRequest, pinArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := bytes.Replace(rec.Body.Bytes(), []byte(`"instructions":"Look records up."`), []byte(`"instructions":null`), 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(down.Close)
	var out bytes.Buffer
	if err := printPins(context.Background(), slog.New(slog.DiscardHandler), down.URL, 10*time.Second, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), gateway.InstructionsPin) {
		t.Fatalf("the null instructions were not pinned: %s", out.String())
	}
	path := filepath.Join(t.TempDir(), "pins.json")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPins(path); err != nil {
		t.Errorf("--tool-pins refuses what --print-pins wrote: %v\n%s", err, out.String())
	}
}
