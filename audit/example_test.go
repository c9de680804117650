package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// Record a write tool's intent durably, then its outcome, in a JSONL file,
// and read the session back.
func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")
	sink, err := audit.OpenJSONL(path, nil) // buffered; intents are made durable on demand
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	args := json.RawMessage(`{"title": "Broken build", "body": "CI red on main"}`)
	e := audit.Event{
		Time: time.Now(), CorrelationID: "c-42", SessionID: "demo-1", Subject: "alice",
		Roles: []string{"engineering"}, Tool: "create_ticket", Class: "write",
		Phase: audit.PhaseIntent, Allowed: true, ArgsSHA256: audit.ArgsSHA256(args), // the outcome carries the cost
	}
	if err := audit.WriteDurable(ctx, sink, &e); err != nil {
		fmt.Println("AUDIT_UNAVAILABLE:", err) // the handler must not run
		return
	}
	e.Phase, e.LatencyMS, e.Cost = audit.PhaseOutcome, 0.25, 5
	if err := sink.Write(ctx, &e); err != nil {
		fmt.Println(err)
	}
	sink.Close()

	events, err := audit.QueryJSONL(path, audit.Filter{SessionID: "demo-1"})
	if err != nil {
		fmt.Println(err)
	}
	stripTime := regexp.MustCompile(`"time":"[^"]*",`)
	for _, ev := range events {
		line, _ := ev.AppendJSON(nil)
		fmt.Println(stripTime.ReplaceAllString(string(line), ""))
	}
	// Output:
	// {"correlation_id":"c-42","session_id":"demo-1","subject":"alice","roles":["engineering"],"tool":"create_ticket","class":"write","phase":"intent","allowed":true,"dry_run":false,"latency_ms":0,"args_sha256":"a751ca17d55926c2e6039135c68fb6f18b3c40f98c1b2c6d6e4e91cab28fbef1"}
	// {"correlation_id":"c-42","session_id":"demo-1","subject":"alice","roles":["engineering"],"tool":"create_ticket","class":"write","phase":"outcome","allowed":true,"dry_run":false,"latency_ms":0.25,"args_sha256":"a751ca17d55926c2e6039135c68fb6f18b3c40f98c1b2c6d6e4e91cab28fbef1","cost":5}
}

// ArgsSHA256 identifies arguments without recording them: key order and
// whitespace do not change the hash.
func ExampleArgsSHA256() {
	a := audit.ArgsSHA256(json.RawMessage(`{"b": 2, "a": "x"}`))
	b := audit.ArgsSHA256(json.RawMessage(`{"a":"x","b":2}`))
	fmt.Println(a == b, len(a))
	// Output: true 64
}

// Export a trail page by page, every record once, also where more records
// share an instant than a page holds; and go on later from where it ended.
func ExampleFilter_Next() {
	dir, err := os.MkdirTemp("", "audit-export")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	db, err := audit.OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ctx := context.Background()
	sink, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, sec := range []int{0, 1, 1, 1, 1, 2} { // four records in one second of a coarse clock
		e := audit.Event{Time: at.Add(time.Duration(sec) * time.Second), CorrelationID: fmt.Sprintf("c-%d", i), Phase: audit.PhaseOutcome}
		if err := sink.Write(ctx, &e); err != nil {
			fmt.Println(err)
		}
	}
	if err := sink.Flush(ctx); err != nil {
		fmt.Println(err)
	}

	// A record can take a moment from its time to being stored (a sink's
	// queue, its retries): stop a margin before now.
	f := audit.Filter{Until: time.Now().Add(-time.Minute), Limit: 2}
	for {
		page, err := sink.Query(ctx, f)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range page {
			fmt.Println(e.CorrelationID, e.Time.Format(time.TimeOnly))
		}
		f = f.Next(page)
		if len(page) < f.Limit {
			break
		}
	}
	// Keep f: the next export sets f.Until anew and goes on from there.
	fmt.Println("next: since", f.Since.Format(time.TimeOnly), "offset", f.Offset)
	// Output:
	// c-0 03:04:05
	// c-1 03:04:06
	// c-2 03:04:06
	// c-3 03:04:06
	// c-4 03:04:06
	// c-5 03:04:07
	// next: since 03:04:07 offset 1
}
