package stdio

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// maxTrackedLine bounds the bytes of one incoming line kept to see whether
// it is a request; a longer line is not tracked.
const maxTrackedLine = 16 << 20

// inflight counts the requests read but not yet answered.
type inflight struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced whenever n goes down
}

func newInflight() *inflight { return &inflight{changed: make(chan struct{})} }

func (f *inflight) add(n int) {
	f.mu.Lock()
	f.n += n
	f.mu.Unlock()
}

func (f *inflight) done(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = max(f.n-n, 0)
	close(f.changed)
	f.changed = make(chan struct{})
}

// wait returns when every request read has been answered, or after timeout.
func (f *inflight) wait(timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		f.mu.Lock()
		n, ch := f.n, f.changed
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// message is what the drain needs to know of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (m *message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// count returns the requests (with method and id) and the responses (id,
// no method) in one line: a message or a batch.
func count(line []byte) (requests, responses int) {
	line = bytes.TrimSpace(line)
	var msgs []message
	if len(line) > 0 && line[0] == '[' {
		if json.Unmarshal(line, &msgs) != nil {
			return 0, 0
		}
	} else {
		var m message
		if json.Unmarshal(line, &m) != nil {
			return 0, 0
		}
		msgs = []message{m}
	}
	for i := range msgs {
		switch {
		case !msgs[i].hasID():
		case msgs[i].Method != "":
			requests++
		default:
			responses++
		}
	}
	return requests, responses
}

// lines splits a byte stream into lines and calls fn for each.
type lines struct {
	partial []byte
	skip    bool // the current line outgrew maxTrackedLine
}

func (l *lines) feed(p []byte, fn func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.skip && len(l.partial)+len(p) <= maxTrackedLine {
				l.partial = append(l.partial, p...)
			} else {
				l.skip, l.partial = true, l.partial[:0]
			}
			return
		}
		if !l.skip && len(l.partial)+i <= maxTrackedLine {
			if len(l.partial) == 0 {
				fn(p[:i])
			} else {
				fn(append(l.partial, p[:i]...))
			}
		}
		l.partial, l.skip = l.partial[:0], false
		p = p[i+1:]
	}
}

// flush calls fn for a last line that had no newline, if any.
func (l *lines) flush(fn func([]byte)) {
	if !l.skip && len(l.partial) > 0 {
		fn(l.partial)
	}
	l.partial, l.skip = l.partial[:0], false
}

// drainReader counts the requests it reads and, at end of input, holds the
// end of file back until they are answered (or a timeout), so that a client
// that writes its requests and closes stdin still gets every answer.
type drainReader struct {
	r       io.ReadCloser
	f       *inflight
	timeout time.Duration
	lines   lines
}

func (d *drainReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.lines.feed(p[:n], func(line []byte) {
		if req, _ := count(line); req > 0 {
			d.f.add(req)
		}
	})
	if err == io.EOF {
		// The last line may have no newline: the go-sdk's decoder still
		// takes its message, so count it before waiting for the answers.
		d.lines.flush(func(line []byte) {
			if req, _ := count(line); req > 0 {
				d.f.add(req)
			}
		})
		d.f.wait(d.timeout)
	}
	return n, err
}

func (d *drainReader) Close() error { return d.r.Close() }

// countingWriter counts the responses written through it.
type countingWriter struct {
	w     io.WriteCloser
	f     *inflight
	mu    sync.Mutex
	lines lines
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.feed(p[:n], func(line []byte) {
		if _, res := count(line); res > 0 {
			c.f.done(res)
		}
	})
	return n, err
}

func (c *countingWriter) Close() error { return c.w.Close() }
