package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview39BatchStreamServerArrays pins how a batch member's event
// stream treats an event whose data is a JSON array: a downstream's own
// batch of requests and notifications is relayed to the client, as its
// single requests and notifications are; an empty array, or one that holds
// a response, a value that is not an object or a nested array, is dropped,
// and so is a message that spells "method" two ways.
// A response inside an array is the one that matters: the client reads a
// merged stream, and an answer smuggled in an array would reach it with an
// id of the downstream's choosing, the member's real answer aside.
func TestReview39BatchStreamServerArrays(t *testing.T) {
	const (
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
		message  = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		answer   = `{"jsonrpc":"2.0","id":1,"result":{}}`
	)
	events := []string{
		`[` + progress + `,` + message + `]`, // relayed
		`[` + message + `]`,                  // relayed
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"smuggled":true}}]`,
		`[` + progress + `,{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`[` + progress + `,"x"]`,
		`[` + progress + `,[` + message + `]]`,
		`{"jsonrpc":"2.0","method":"notifications/message","Method":"x","params":{}}`, // two spellings
		answer, // relayed
	}
	url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, "data: "+e+"\n\n")
		}
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `]`
	got := r28Post(t, url, batch, true)
	want := "data: " + events[0] + "\n\n" + "data: " + events[1] + "\n\n" + "data: " + answer + "\n\n"
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("POST %s: merged stream (-want +got):\n%s", batch, diff)
	}
}

// TestReview39BatchAnswersHeldToLimit pins the bound on what a batch holds:
// a member's answer that would take the batch's answers past 64 MiB is not
// kept (the gateway would hold it until the merged answer is written), and
// the member is answered with the documented upstream error, inside a batch
// answer the client can read.
func TestReview39BatchAnswersHeldToLimit(t *testing.T) {
	url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 64 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return // the gateway stopped reading
			}
		}
		io.WriteString(w, `"}]}}`)
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `]`
	got := r28Post(t, url, batch, false)
	var msgs []struct {
		ID    json.RawMessage
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(got.body), &msgs); err != nil || got.status != http.StatusOK {
		t.Fatalf("POST %s: %d, %.200s (%v); want 200 and a JSON array", batch, got.status, got.body, err)
	}
	type answer struct {
		ID      string
		Code    int
		Message string
	}
	var gotA []answer
	for _, m := range msgs {
		gotA = append(gotA, answer{string(m.ID), m.Error.Code, m.Error.Message})
	}
	wantA := []answer{{"1", CodeUpstreamUnavailable, "Upstream answer too large: a batch's answers are held to 64 MiB in all"}}
	if diff := cmp.Diff(wantA, gotA); diff != "" {
		t.Errorf("POST %s with an answer of over 64 MiB (-want +got):\n%s", batch, diff)
	}
}
