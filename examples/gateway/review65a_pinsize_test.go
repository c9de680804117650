package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReview65aPrintPinsOverReadLimit: --print-pins and --tool-pins agree
// on what a pins file may be: a downstream whose listing makes a file
// larger than the 16 MiB --tool-pins reads (10,000 tools, the most a
// trust-on-first-use set pins, with names of 1024 bytes that JSON escapes,
// "<" as \u003c) had --print-pins write it, and the gateway then refused
// the file it printed. --print-pins now refuses it, saying why.
func TestReview65aPrintPinsOverReadLimit(t *testing.T) {
	const tools = 10000
	var listing bytes.Buffer
	listing.WriteString(`{"tools":[`)
	for i := range tools {
		if i > 0 {
			listing.WriteByte(',')
		}
		name := fmt.Sprintf("t%05d", i)
		name += strings.Repeat("<", 1024-len(name))
		listing.WriteString(`{"name":"` + name + `","inputSchema":{"type":"object"}}`)
	}
	listing.WriteString(`]}`)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.Unmarshal(body, &msg) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := []byte(`{}`)
		switch msg.Method {
		case "initialize":
			result = []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}`)
		case "tools/list":
			result = listing.Bytes()
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`)
		w.Write(result)
		io.WriteString(w, `}`)
	}))
	t.Cleanup(down.Close)

	var out bytes.Buffer
	err := printPins(context.Background(), slog.New(slog.DiscardHandler), down.URL, 30*time.Second, &out)
	if err == nil {
		path := filepath.Join(t.TempDir(), "pins.json")
		if werr := os.WriteFile(path, out.Bytes(), 0o600); werr != nil {
			t.Fatal(werr)
		}
		if _, lerr := loadPins(path); lerr != nil {
			t.Fatalf("--print-pins wrote %d bytes, which --tool-pins refuses: %v", out.Len(), lerr)
		}
		return
	}
	if out.Len() != 0 || !strings.Contains(err.Error(), "--tool-pins") || !strings.Contains(err.Error(), "16 MiB") {
		t.Errorf("--print-pins: wrote %d bytes, err %v; want nothing written and an error naming the --tool-pins limit", out.Len(), err)
	}
}
