package stdio

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// reader is the input of the transport. It splits stdin into lines and
// hands the go-sdk only those it takes as a JSON-RPC message ([checkLine],
// [session.admit]): the SDK ends the session at the first line it cannot
// decode, with the answers in flight. A refused line is answered with a
// JSON-RPC error through the writer and logged, and the session goes on.
// At end of input, or a read error, it holds the end back until the
// requests passed are answered (or a timeout), so that a client that writes
// its requests and closes stdin still gets every answer. A stop does the
// same while the input stays open: from then on the reader refuses every
// request it reads, passes the rest (a handler may wait for the answer to
// a request of its own), and reports end of file once the requests passed
// before are answered (or the timeout after the stop). When such a wait
// starts, it hands the SDK a cancellation of each subscriptions/listen call
// in flight, which would otherwise never end ([reader.startDrain]); and
// once the input has ended, an error answer to each request of the
// server's that the client has not answered ([reader.answerAsked]).
//
// Its input is read by a goroutine of its own (started by the first Read),
// so that a Read waiting for input also sees the stop, the last answer,
// the timeout and Close. Reads are serialized: two sessions connected to
// one transport (which [Serve] refuses) share its input, each line going
// to one of them, never to both.
type reader struct {
	mu     sync.Mutex  // held by Read
	served atomic.Bool // a [Serve] took the transport

	r       io.ReadCloser
	w       *writer
	s       *session
	log     *slog.Logger
	timeout time.Duration   // how long to wait for answers; negative: not at all
	stop    <-chan struct{} // Options.Stop; nil: never

	chunks  chan chunk       // from pump, once started
	free    chan []byte      // the buffer, back to pump
	stopped bool             // the stop was seen
	inErr   error            // the error that ended the input, if it has
	grace   <-chan time.Time // the end of the drain's timeout, once started

	lines   lines
	ready   []byte // lines passed, not yet read by the SDK
	err     error  // reported once ready is empty: the input's error, or io.EOF after a stop
	n       int    // lines read
	closing int    // requests refused (-32004) because read after the stop
	busy    int    // requests refused (-32029) since a request last passed
}

// chunk is one read of the input.
type chunk struct {
	b   []byte
	err error
}

func newReader(r io.ReadCloser, w *writer, s *session, log *slog.Logger, timeout time.Duration) *reader {
	return &reader{r: r, w: w, s: s, log: log, timeout: timeout, lines: lines{max: maxLine + lineSlack}}
}

func (r *reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.ready) == 0 && r.err == nil {
		r.next()
	}
	if len(r.ready) > 0 {
		n := copy(p, r.ready)
		r.ready = r.ready[n:]
		if len(r.ready) == 0 {
			r.ready = nil
		}
		return n, nil
	}
	return 0, r.err
}

// next waits for, and handles, what comes first: a chunk of input, the
// stop, Close, and once the input has ended or the stop come (the drain),
// the last answer or the end of the timeout, which end the input for the
// go-sdk (the SDK ends the session on either, so the requests already
// passed are answered first).
func (r *reader) next() {
	if r.chunks == nil {
		r.chunks, r.free = make(chan chunk), make(chan []byte, 1)
		r.free <- make([]byte, 64<<10)
		go r.pump()
	}
	var chunks <-chan chunk
	if r.inErr == nil {
		chunks = r.chunks
	}
	stop := r.stop
	if r.stopped {
		stop = nil
	}
	var answered <-chan struct{}
	if r.inErr != nil || r.stopped {
		// The channel is taken before the asks: one the go-sdk writes
		// after answerAsked took them closes it.
		n, changed := r.s.unanswered()
		if r.inErr != nil && r.timeout >= 0 && r.answerAsked() {
			return
		}
		if n == 0 || r.timeout < 0 {
			r.end()
			return
		}
		answered = changed
	}
	select {
	case c := <-chunks:
		// A stop that came meanwhile comes first: what is read after
		// it is refused.
		r.checkStop()
		r.lines.feed(c.b, r.line)
		r.free <- c.b[:cap(c.b)]
		if c.err != nil {
			// The last line may have no newline: the go-sdk's decoder
			// still takes its message.
			r.lines.flush(r.line)
			r.inErr = c.err
			r.startDrain()
		}
	case <-stop:
		r.stopNow()
	case <-answered:
	case <-r.grace:
		n, _ := r.s.unanswered()
		r.log.Warn("stdio: ending the input with requests unanswered; the go-sdk cancels them and drops their answers",
			"requests", n, "drain_timeout", r.timeout)
		r.end()
	case <-r.s.closed:
		r.end()
	}
}

// checkStop notes a stop that has come.
func (r *reader) checkStop() {
	if r.stopped || r.stop == nil {
		return
	}
	select {
	case <-r.stop:
		r.stopNow()
	default:
	}
}

// stopNow starts the drain of a stop: from now on requests are refused.
func (r *reader) stopNow() {
	r.stopped = true
	r.s.stopping()
	r.startDrain()
}

// startDrain starts the drain, at the first of the end of input and the
// stop: its timeout, and the end of the subscriptions/listen calls in
// flight. The go-sdk holds such a call until it is cancelled, and only the
// client cancels it, so the drain would otherwise wait for it until the
// timeout, and the SDK then drop its answer. The reader hands the SDK a
// notifications/cancelled for each, as the client would (and as the SDK's
// own ServerSession.Close cancels them): the SDK answers it, and the
// client reads the end of its listen.
func (r *reader) startDrain() {
	if r.grace != nil || r.timeout < 0 {
		return
	}
	r.grace = time.After(r.timeout)
	for _, id := range r.s.listening() {
		r.ready = append(r.ready, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
		r.ready = append(r.ready, id...)
		r.ready = append(r.ready, "}}\n"...)
	}
}

// answerAsked hands the go-sdk, once the input has ended, an error answer
// to each request of the server's that the client has not answered: none
// can come now, and the handler waiting for one (roots, sampling,
// elicitation) would hold its call, and the drain, until DrainTimeout, and
// its answer would be lost though the client still reads the output. The
// answer is -32003, the SDK's "client is closing", but for a ping: -32601
// (method not found), which the SDK's keepalive takes for a client without
// ping, and stops, where another failure would close the session and drop
// the answers of the calls under way. It reports whether it handed any.
func (r *reader) answerAsked() bool {
	asks := r.s.takeAsked()
	for _, a := range asks {
		code := "-32003,\"message\":\"client is closing"
		if a.ping {
			code = "-32601,\"message\":\"method not found"
		}
		r.ready = append(r.ready, `{"jsonrpc":"2.0","id":`...)
		r.ready = append(r.ready, a.id...)
		r.ready = append(r.ready, `,"error":{"code":`...)
		r.ready = append(r.ready, code...)
		r.ready = append(r.ready, `: the input ended before the client answered"}}`+"\n"...)
	}
	return len(asks) > 0
}

// end ends the input for the go-sdk: with its error, or at end of file
// after a stop (or Close). It logs how many requests read after the stop
// were refused: only the first has a line of its own.
func (r *reader) end() {
	r.err = r.inErr
	if r.err == nil {
		r.err = io.EOF
	}
	r.busyEnded()
	if r.closing > 0 {
		r.log.Warn("stdio: refused the requests read after the stop (-32004, server is closing)", "requests", r.closing)
		r.closing = 0
	}
}

// busyEnded ends a run of requests refused as busy: when more than the
// first (logged on its own) were refused, one line counts them all.
func (r *reader) busyEnded() {
	if r.busy > 1 {
		r.log.Warn("stdio: requests refused as busy (-32029) in one run, the first logged on its own", "requests", r.busy)
	}
	r.busy = 0
}

// pump reads the input, one chunk at a time into the one buffer, until a
// read error or Close. Its Read may outlive Close: a read of a blocking
// descriptor (a pipe or a terminal on stdin) is not interrupted by closing
// it, as for the go-sdk's own reading goroutine.
func (r *reader) pump() {
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.s.closed:
			return
		}
		n, closed, err := r.read(buf)
		if closed {
			return
		}
		select {
		case r.chunks <- chunk{buf[:n], err}:
		case <-r.s.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// read reads into buf as a read of a blocking descriptor does: a read that
// would block (EAGAIN: the input's descriptor, blocking when Isolate took
// it and so outside the runtime's poller, made non-blocking since by
// another process that shares it) is no end of input, and is tried again
// after a pause (from 1ms, doubling up to maxWouldBlockPause) until input
// comes or the read fails otherwise; closed reports that Close ended the
// wait.
func (r *reader) read(buf []byte) (n int, closed bool, err error) {
	pause := time.Millisecond
	for {
		n, err = r.r.Read(buf)
		if !wouldBlock(err) {
			return n, false, err
		}
		if n > 0 {
			return n, false, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-r.s.closed:
			t.Stop()
			return 0, true, nil
		}
		pause = min(2*pause, maxWouldBlockPause)
	}
}

// line passes one input line to the go-sdk or answers it.
func (r *reader) line(line []byte, tooLong bool) {
	r.n++
	var lerr *lineError
	size := len(line)
	if tooLong {
		lerr, size = invalid("the line is longer than 16 MiB"), r.lines.max+1
	} else {
		pass, msgs, batch, e := checkLine(line)
		var alone *lineError // batch members refused alone, the rest going on
		if e != nil && e.keys != nil {
			alone, e = e, nil
		}
		if e == nil && (pass != nil || alone != nil) {
			e = r.s.admit(msgs, batch)
			if e != nil && e.ids != nil {
				r.passAnswers(msgs)
			}
		}
		if alone != nil && (e == nil || e.ids != nil) {
			// The batch itself may pass (a refusal of it whole
			// answers it whole, with a null id).
			r.refuseAlone(alone, size)
		}
		if e == nil {
			if pass != nil {
				r.s.replied(msgs)
				r.ready = append(r.ready, pass...)
				r.ready = append(r.ready, '\n')
				if hasCall(msgs) {
					r.busyEnded()
				}
			}
			return
		}
		lerr = e
		if lerr.id != nil && r.s.inFlight(lerr.key) {
			// A request with this id is in flight: an answer with the id
			// would be taken for its answer.
			lerr.id = nil
		}
		// The stop or a bound at work, not a fault of the line: a
		// client that pipelines its requests may send many more. The
		// first is logged, the rest counted (see end and busyEnded).
		var count *int
		switch lerr.code {
		case codeClosing:
			count = &r.closing
		case codeBusy:
			count = &r.busy
		}
		if count != nil {
			first := *count == 0
			*count += max(1, len(lerr.ids))
			if !first {
				r.w.answer(errorLine(lerr))
				return
			}
		}
	}
	r.log.Warn("stdio: refused an input line",
		"line", r.n, "bytes", size, "code", lerr.code, "reason", lerr.reason)
	r.w.answer(errorLine(lerr))
}

// refuseAlone answers the members of a batch refused alone (lerr.ids),
// once the rest of the batch is admitted: an id that names a request in
// flight, as the go-sdk compares ids, is answered as null, as for a line
// refused whole.
func (r *reader) refuseAlone(lerr *lineError, size int) {
	for i, key := range lerr.keys {
		if r.s.inFlight(key) {
			lerr.ids[i] = nil
		}
	}
	r.log.Warn("stdio: refused an input line",
		"line", r.n, "bytes", size, "code", lerr.code, "reason", lerr.reason, "members", len(lerr.ids))
	r.w.answer(errorLine(lerr))
}

// hasCall reports whether msgs hold a request with an id.
func hasCall(msgs []info) bool {
	for _, m := range msgs {
		if m.request && m.id.set {
			return true
		}
	}
	return false
}

// passAnswers passes, one line each, the answers to the server's requests
// among msgs, the members of a batch whose requests are refused: a handler
// may be waiting for one of them, holding its place in flight.
func (r *reader) passAnswers(msgs []info) {
	r.s.replied(msgs)
	for _, m := range msgs {
		if !m.request {
			r.ready = append(r.ready, m.raw...)
			r.ready = append(r.ready, '\n')
		}
	}
}

// Close closes the input, stops a wait for answers, and ends a Read under
// way.
func (r *reader) Close() error {
	r.s.close()
	return r.r.Close()
}
