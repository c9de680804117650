//go:build unix

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// review16dChild makes TestReview16dCutAndGlued the child process that
// makes the write; its value is the file's path.
const review16dChild = "MCPGUARD_AUDIT_REVIEW16D_CHILD"

// TestReview16dCutAndGlued: another writer of the file tears a line after
// the sink checked the end of the file, and the sink's own write, which
// continues that line, is then cut short (the file size limit here; a full
// disk, which likely tore the other line too). appendChecked reports how
// much of b the file took, and Reopen keeps in the old file the whole
// lines within that count: each of them must read back from it. Before the
// fix the count included the first line, which read back as part of the
// other's torn line, so that Reopen left it out of the new file: lost.
func TestReview16dCutAndGlued(t *testing.T) {
	if path := os.Getenv(review16dChild); path != "" {
		fmt.Println(review16dCutAndGlued(path))
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestReview16dCutAndGlued$")
	cmd.Env = append(os.Environ(), review16dChild+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "ok") {
		t.Errorf("child: %s", got)
	}
}

// review16dCutAndGlued is the child's part: it returns "ok" or what went
// wrong.
func review16dCutAndGlued(path string) string {
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		return "open: " + err.Error()
	}
	ev := func(id string) *Event {
		return &Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CorrelationID: id, Phase: PhaseIntent, Tool: "refund", Detail: strings.Repeat("d", 300)}
	}
	if err := s.WriteDurable(context.Background(), ev("before")); err != nil {
		return "write: " + err.Error()
	}
	st, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	checked := st.Size()
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err.Error()
	}
	torn := `{"time":"2026-01-02T03:04:05Z","correlation_id":"torn","de`
	if _, err := other.WriteString(torn); err != nil {
		return err.Error()
	}
	var b []byte
	for _, id := range []string{"l1", "l2", "l3"} {
		if b, err = ev(id).AppendJSON(b); err != nil {
			return err.Error()
		}
		b = append(b, '\n')
	}
	first := bytes.IndexByte(b, '\n') + 1
	// Room for the first line and half the second.
	limit := uint64(checked) + uint64(len(torn)) + uint64(first) + uint64(first)/2
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, rlimit(limit)); err != nil {
		return "setrlimit: " + err.Error()
	}
	s.ioSem <- struct{}{}
	n, werr := s.appendChecked(s.f, b, checked)
	<-s.ioSem
	if werr == nil {
		return fmt.Sprintf("appendChecked = %d, nil; want the write cut short", n)
	}
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	got := map[string]int{}
	for e, err := range ReadJSONL(f) {
		if err == nil {
			got[e.CorrelationID]++
		}
	}
	cut := bytes.LastIndexByte(b[:n], '\n') + 1
	var kept []string
	for _, line := range bytes.SplitAfter(b[:cut], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err.Error()
		}
		kept = append(kept, e.CorrelationID)
		if got[e.CorrelationID] != 1 {
			return fmt.Sprintf("appendChecked = %d, %v: counts %s as in the file, which reads back %d times (records %v)", n, werr, e.CorrelationID, got[e.CorrelationID], got)
		}
	}
	return fmt.Sprintf("ok (counted %v, error %v)", kept, werr)
}

// rlimit is the limit v, soft and hard, in the platform's type for it
// (uint64 on most systems, int64 on FreeBSD and DragonFly).
func rlimit(v uint64) *syscall.Rlimit {
	var r syscall.Rlimit
	setRlim(&r.Cur, v)
	setRlim(&r.Max, v)
	return &r
}

func setRlim[T int64 | uint64](p *T, v uint64) { *p = T(v) }
