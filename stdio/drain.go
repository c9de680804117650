package stdio

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// noBatchVersion is the first MCP protocol version without JSON-RPC
// batching; the go-sdk ends the session on a batch once it is negotiated.
const noBatchVersion = "2025-06-18"

// maxInFlight bounds the requests passed to the go-sdk and not yet
// answered. The SDK reads every request and runs each call in a goroutine
// of its own, so without a bound a client that floods a server whose
// handlers are slow grows it without limit (some 10 KB a call).
const maxInFlight = 4096

// maxBytesInFlight bounds the bytes of the requests in flight (as read,
// the JSON value of each): the go-sdk holds a call's params while it runs
// (about twice their size), so the bound of requests alone would let 4096
// calls of up to 16 MiB each hold some 128 GiB. A request alone is never
// refused for its size: a line the transport takes can always be served.
const maxBytesInFlight = 64 << 20

// session is what the reader and the writer of one transport share: the
// ids of the requests passed to the go-sdk and not yet answered, and what
// the SDK keeps of the session that decides whether it takes a batch. It is
// safe for concurrent use.
type session struct {
	mu      sync.Mutex
	pending map[idKey]bool // ids of requests passed, not yet answered
	sizes   map[idKey]int  // their sizes in bytes, as read
	bytes   int            // the sum of sizes
	changed chan struct{}  // closed and replaced whenever pending shrinks or the server asks
	closed  chan struct{}  // closed by close: stop waiting

	inits      map[idKey]bool // ids of initialize requests passed, not yet answered
	negotiated string         // the protocolVersion of the first successful answer to one
	initFailed bool           // one was answered without a version: the SDK may have negotiated one

	listens     map[idKey]json.RawMessage // the ids, as read, of the subscriptions/listen calls in flight
	asked       map[idKey]ask             // the server's requests the client has not answered
	batchIDs    map[idKey]bool            // ids of batch members the SDK still tracks
	maxInFlight int                       // requests in flight beyond which one is refused
	maxBytes    int                       // bytes of requests in flight beyond which one is refused
	stopped     bool                      // the transport was stopped: every request is refused
	closeOnce   sync.Once
}

func newSession() *session {
	return &session{
		pending:     map[idKey]bool{},
		sizes:       map[idKey]int{},
		changed:     make(chan struct{}),
		closed:      make(chan struct{}),
		inits:       map[idKey]bool{},
		listens:     map[idKey]json.RawMessage{},
		asked:       map[idKey]ask{},
		batchIDs:    map[idKey]bool{},
		maxInFlight: maxInFlight,
		maxBytes:    maxBytesInFlight,
	}
}

func (s *session) close() { s.closeOnce.Do(func() { close(s.closed) }) }

// stopping makes admit refuse every request from now on.
func (s *session) stopping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
}

// batchRefusal returns why the go-sdk may not take a batch now, or "" when
// it surely does: until an initialize request is passed, and once one is
// answered with a protocol version before 2025-06-18. While the answer to an
// initialize is not out yet, the SDK may already have negotiated a version
// without batches, and which one the transport cannot tell: the server may
// not support the version asked for
// (ServerOptions.SupportedProtocolVersions), and the SDK reads the
// request's members by their exact names. The SDK negotiates once, when
// its initialize handler first runs, whatever the answer: a receiving
// middleware that fails after calling it has initialize answered with an
// error at the version negotiated. So once an initialize is answered
// without a version (an error), batches are refused until one is answered
// with a version, as the next to succeed is the one that negotiates (after
// a late failure, every later initialize is refused as a duplicate).
func (s *session) batchRefusal() string {
	switch {
	case s.negotiated != "":
		if s.negotiated >= noBatchVersion {
			return "JSON-RPC batches are not supported from protocol version " + noBatchVersion + " on"
		}
	case len(s.inits) > 0:
		return "a JSON-RPC batch must wait for the answer to initialize (the protocol version is not known yet)"
	case s.initFailed:
		return "a JSON-RPC batch must wait for an initialize that succeeds (one was answered with an error: the protocol version is not known)"
	}
	return ""
}

// admit applies the rules of the go-sdk that depend on the session to the
// messages of a line that passed [checkLine] and, when it passes, records
// them.
func (s *session) admit(msgs []info, batch bool) *lineError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if batch {
		if reason := s.batchRefusal(); reason != "" {
			return invalid(reason)
		}
		// The SDK tracks every batch member with a method by id, a
		// notification as the empty id, and refuses a batch that repeats
		// an id or reuses one it still tracks. It answers a batch once
		// every id it tracks is answered: never when a notification is
		// among its requests (go-sdk v1.8.0), nor when a member reuses the
		// id of a request in flight outside the batch, which jsonrpc2
		// drops unanswered.
		seen := map[idKey]bool{}
		calls, notifications, size := 0, 0, 0
		for _, m := range msgs {
			if !m.request {
				continue
			}
			if seen[m.id] || s.batchIDs[m.id] || s.pending[m.id] {
				return invalid("a batch repeats the id of a request in flight (a notification counts as an empty id)")
			}
			seen[m.id] = true
			if m.id.set {
				calls++
				size += len(m.raw)
			} else {
				notifications++
			}
		}
		if calls > 0 && notifications > 0 {
			return invalid("a batch that mixes requests and notifications is never answered by the go-sdk v1.8.0")
		}
		if lerr := s.refusal(calls, size); calls > 0 && lerr != nil {
			// Each request is answered with its id (none is in flight,
			// nor repeated); the reader still passes the batch's
			// answers to the server's requests.
			for _, m := range msgs {
				if m.request {
					lerr.ids = append(lerr.ids, m.answerID())
				}
			}
			return lerr
		}
		for id := range seen {
			s.batchIDs[id] = true
		}
	} else if m := msgs[0]; m.request && m.id.set {
		if s.pending[m.id] {
			// jsonrpc2 clears the id of a request that reuses the id of
			// one in flight and handles it as a notification: never
			// answered.
			return invalid("a request reuses the id of a request in flight, which the go-sdk v1.8.0 drops unanswered")
		}
		if lerr := s.refusal(1, len(m.raw)); lerr != nil {
			lerr.id, lerr.key = m.answerID(), m.id
			return lerr
		}
	}
	for _, m := range msgs {
		if !m.request || !m.id.set {
			continue
		}
		s.pending[m.id] = true
		s.sizes[m.id] = len(m.raw)
		s.bytes += len(m.raw)
		if m.method == "initialize" && s.negotiated == "" {
			s.inits[m.id] = true
		}
		if m.method == methodListen {
			// A copy: the id is a slice of the input's buffer.
			s.listens[m.id] = bytes.Clone(m.rawID)
		}
	}
	return nil
}

// methodListen is the call the go-sdk holds until it is cancelled (SEP-2575).
const methodListen = "subscriptions/listen"

// listening returns the ids of the subscriptions/listen calls in flight,
// as they were read: a cancellation that names one so is shorter than the
// call's own line, and fits in the go-sdk's frame as it did.
func (s *session) listening() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]json.RawMessage, 0, len(s.listens))
	for _, id := range s.listens {
		ids = append(ids, id)
	}
	return ids
}

// refusal returns why n requests of size bytes in all may not pass now,
// or nil: the stop, or one of the bounds on requests in flight. The bound
// of bytes holds only when requests are in flight, so that a request alone
// always passes. A batch of more requests than may ever be in flight is
// invalid, not busy: no retry would pass it.
func (s *session) refusal(n, size int) *lineError {
	switch {
	case s.stopped:
		return closing()
	case n > s.maxInFlight:
		return &lineError{code: codeInvalidRequest, reason: "a batch of " + strconv.Itoa(n) + " requests, more than the " + strconv.Itoa(s.maxInFlight) + " that may be in flight at once: it can never pass; send fewer"}
	case len(s.pending)+n > s.maxInFlight:
		return busy(s.maxInFlight)
	case len(s.pending) > 0 && s.bytes+size > s.maxBytes:
		return &lineError{code: codeBusy, reason: "too many bytes in flight (requests of at most " + strconv.Itoa(s.maxBytes) + " bytes in all, as read); retry once some are answered"}
	}
	return nil
}

// busy is the refusal of a request beyond limit requests in flight.
func busy(limit int) *lineError {
	return &lineError{code: codeBusy, reason: "too many requests in flight (at most " + strconv.Itoa(limit) + "); retry once some are answered"}
}

// closing is the refusal of a request read after the stop.
func closing() *lineError {
	return &lineError{code: codeClosing, reason: "the server is stopping and starts no new request; the requests read before the stop are answered"}
}

// outgoing is what the session needs of a message the go-sdk writes: its
// id, and whether it has a method. Its members are kept raw, so that no
// message, whatever its shape, fails the decoding of the line (and leaves
// the requests it answers in flight for good); the result and the params
// are not kept, so that reading a message copies none of them, whatever
// their size. The result is read only for an answer to initialize
// ([initVersion]), the params only for a cancellation ([cancelledID]).
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
}

// methodCancelled is the notification with which the go-sdk gives up a
// request of its own (its context ended), and the client one of its.
const methodCancelled = "notifications/cancelled"

// cancelledID returns the id of the request that the i-th message of line
// (a batch when batch is set), a notifications/cancelled, gives up, as the
// go-sdk compares ids.
func cancelledID(line []byte, batch bool, i int) idKey {
	type cancelled struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	var c cancelled
	if batch {
		var cs []cancelled
		if json.Unmarshal(line, &cs) != nil || i >= len(cs) {
			return idKey{}
		}
		c = cs[i]
	} else if json.Unmarshal(line, &c) != nil {
		return idKey{}
	}
	id, _ := parseID(c.Params.RequestID)
	return id
}

// versioned is what the session reads of an answer to initialize.
type versioned struct {
	Result struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	} `json:"result"`
}

// initVersion returns the protocol version that the i-th answer of line
// (a batch answer when batch is set) carries, or "" when it carries none
// (an error, or a version that is not a string).
func initVersion(line []byte, batch bool, i int) string {
	var v versioned
	if batch {
		var vs []versioned
		if json.Unmarshal(line, &vs) != nil || i >= len(vs) {
			return ""
		}
		v = vs[i]
	} else if json.Unmarshal(line, &v) != nil {
		return ""
	}
	var version string
	if json.Unmarshal(v.Result.ProtocolVersion, &version) != nil {
		return ""
	}
	return version
}

// sent records a line the go-sdk wrote: its responses answer requests, its
// requests ask the client, and its cancellations give up such requests.
func (s *session) sent(line []byte) {
	line = bytes.TrimSpace(line)
	batch := len(line) > 0 && line[0] == '['
	var msgs []outgoing
	if batch {
		if json.Unmarshal(line, &msgs) != nil {
			return
		}
	} else {
		var m outgoing
		if json.Unmarshal(line, &m) != nil {
			return
		}
		msgs = []outgoing{m}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for i, m := range msgs {
		id, ok := parseID(m.ID)
		if m.Method != nil {
			switch {
			case ok && id.set:
				// The reader answers it when the input ends first
				// ([session.takeAsked]): wake it.
				s.asked[id] = ask{id: m.ID, ping: string(m.Method) == `"ping"`}
				changed = true
			case string(m.Method) == `"`+methodCancelled+`"`:
				delete(s.asked, cancelledID(line, batch, i))
			}
			continue
		}
		if !ok || !id.set {
			continue
		}
		if s.pending[id] {
			delete(s.pending, id)
			s.bytes -= s.sizes[id]
			delete(s.sizes, id)
			delete(s.listens, id)
			changed = true
		}
		delete(s.batchIDs, id)
		if s.inits[id] {
			// The first successful answer carries the version the SDK
			// negotiated; an answer without one (an error) leaves it
			// unknown (see batchRefusal).
			delete(s.inits, id)
			if s.negotiated == "" {
				if v := initVersion(line, batch, i); v != "" {
					s.negotiated = v
				} else {
					s.initFailed = true
				}
			}
		}
	}
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// replied records the client's answers among msgs, messages that passed:
// the server's requests they answer no longer wait.
func (s *session) replied(msgs []info) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if !m.request {
			delete(s.asked, m.id)
		}
	}
}

// ask is a request of the server's to the client.
type ask struct {
	id   json.RawMessage // as the go-sdk wrote it
	ping bool
}

// takeAsked returns the server's requests that the client has not
// answered, and forgets them.
func (s *session) takeAsked() []ask {
	s.mu.Lock()
	defer s.mu.Unlock()
	asks := make([]ask, 0, len(s.asked))
	for k, a := range s.asked {
		asks = append(asks, a)
		delete(s.asked, k)
	}
	return asks
}

// inFlight reports whether a request with id was passed and is not yet
// answered.
func (s *session) inFlight(id idKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[id]
}

// unanswered returns the number of requests passed and not yet answered,
// and a channel closed when that number next shrinks, or the go-sdk next
// writes a request of the server's.
func (s *session) unanswered() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending), s.changed
}

// lines splits a byte stream into lines of at most max bytes; zero max
// means no limit.
type lines struct {
	max     int
	partial []byte
	over    bool // the current line outgrew max; its bytes are dropped
}

// feed calls fn for each line that p completes, without its newline; a
// line longer than max is reported as fn(nil, true).
func (l *lines) feed(p []byte, fn func(line []byte, tooLong bool)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.over && !l.exceeds(len(l.partial)+len(p)) {
				l.partial = append(l.partial, p...)
			} else {
				l.over, l.partial = true, l.partial[:0]
			}
			return
		}
		switch {
		case l.over || l.exceeds(len(l.partial)+i):
			fn(nil, true)
		case len(l.partial) == 0:
			fn(p[:i], false)
		default:
			fn(append(l.partial, p[:i]...), false)
		}
		l.partial, l.over = l.partial[:0], false
		p = p[i+1:]
	}
}

func (l *lines) exceeds(n int) bool { return l.max > 0 && n > l.max }

// flush calls fn for a last line that had no newline, if any.
func (l *lines) flush(fn func(line []byte, tooLong bool)) {
	switch {
	case l.over:
		fn(nil, true)
	case len(l.partial) > 0:
		fn(l.partial, false)
	}
	l.partial, l.over = l.partial[:0], false
}

// writer is the one writer of the JSON-RPC output: the go-sdk's messages
// and the transport's answers to refused lines, each a whole line. It
// tells the session which requests the SDK answers, from lines of any
// size, before writing them (once written, the client may read an answer
// and reuse its id at once): the SDK writes each line in one call, which
// the writer reads in place, and a line written in parts is gathered whole.
// A write that would block (EAGAIN: the output's descriptor, blocking when
// Isolate took it and so outside the runtime's poller, made non-blocking
// since by another process that shares it) is retried for the rest of its
// line after a pause, as a blocking output waits for the client to read:
// the client is slow, not gone, and a line is never left cut by it. Once
// any other write of the go-sdk's has failed, or one of the transport's
// after writing part of its line, the output is taken for gone (the client
// closed its end, say; the SDK takes a failed write so too): the
// transport's answers are dropped, none held back. An answer of the
// transport's whose write failed with nothing written is lost alone.
// It is safe for concurrent use.
type writer struct {
	mu     sync.Mutex
	w      io.WriteCloser
	s      *session
	lines  lines
	mid    bool     // the output ends inside a line of the SDK's
	queued [][]byte // answers held back while mid is set
	broken bool     // a write of the SDK's failed, or one of ours cut a line
}

func newWriter(w io.WriteCloser, s *session) *writer {
	return &writer{w: w, s: s}
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines.feed(p, func(line []byte, tooLong bool) {
		if !tooLong {
			w.s.sent(line)
		}
	})
	n, err := w.writeAll(p)
	if n > 0 {
		w.mid = p[n-1] != '\n'
	}
	if err != nil {
		// The rest of a line cut short never comes.
		w.broken, w.queued = true, nil
	}
	if err == nil && !w.mid {
		for _, b := range w.queued {
			if !w.write(b) {
				break
			}
		}
		w.queued = nil
	}
	return n, err
}

// write writes line, a whole answer of the transport's own, and reports
// whether the output still takes lines. A write that fails having written
// part of the line leaves it cut for good (a client that closed its end,
// say): the output is broken. One that wrote nothing loses this answer
// alone.
func (w *writer) write(line []byte) bool {
	if n, err := w.writeAll(line); err != nil && n > 0 {
		w.broken = true
	}
	return !w.broken
}

// maxWouldBlockPause bounds the pause between the tries of a write that
// would block.
const maxWouldBlockPause = 20 * time.Millisecond

// writeAll writes p to the output whole, as a write to a blocking file
// does: a write that would block, part of p out or none, is tried again
// for the rest after a pause (from 1ms, doubling up to
// maxWouldBlockPause, and from 1ms again once bytes go out) until the
// output takes it all or fails otherwise (Close ends the wait so). A
// short write without an error is an [io.ErrShortWrite]. w.mu is held.
func (w *writer) writeAll(p []byte) (int, error) {
	n, pause := 0, time.Millisecond
	for {
		m, err := w.w.Write(p[n:])
		n += max(m, 0)
		switch {
		case err == nil && n < len(p):
			return n, io.ErrShortWrite
		case err == nil || !wouldBlock(err):
			return n, err
		case m > 0:
			pause = time.Millisecond
		}
		time.Sleep(pause)
		pause = min(2*pause, maxWouldBlockPause)
	}
}

// answer writes line, a whole line of the transport's own, between the
// go-sdk's lines.
func (w *writer) answer(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return
	}
	if w.mid {
		w.queued = append(w.queued, line)
		return
	}
	w.write(line)
}

func (w *writer) Close() error { return w.w.Close() }
