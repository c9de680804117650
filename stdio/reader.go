package stdio

import (
	"io"
	"log/slog"
	"time"
)

// reader is the input of the transport. It splits stdin into lines and
// hands the go-sdk only those it takes as a JSON-RPC message ([checkLine],
// [session.admit]): the SDK ends the session at the first line it cannot
// decode, with the answers in flight. A refused line is answered with a
// JSON-RPC error through the writer and logged, and the session goes on.
// At end of input, or a read error, it holds the end back until the
// requests passed are answered (or a timeout), so that a client that writes
// its requests and closes stdin still gets every answer.
type reader struct {
	r       io.ReadCloser
	w       *writer
	s       *session
	log     *slog.Logger
	timeout time.Duration // how long to wait for answers; negative: not at all

	buf   []byte
	lines lines
	ready []byte // lines passed, not yet read by the SDK
	err   error  // the error of the input, reported once ready is empty
	n     int    // lines read
}

func newReader(r io.ReadCloser, w *writer, s *session, log *slog.Logger, timeout time.Duration) *reader {
	return &reader{r: r, w: w, s: s, log: log, timeout: timeout, lines: lines{max: maxLine + lineSlack}}
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.ready) == 0 && r.err == nil {
		if r.buf == nil {
			r.buf = make([]byte, 64<<10)
		}
		n, err := r.r.Read(r.buf)
		r.lines.feed(r.buf[:n], r.line)
		if err != nil {
			// The last line may have no newline: the go-sdk's decoder
			// still takes its message.
			r.lines.flush(r.line)
			r.err = err
		}
	}
	if len(r.ready) > 0 {
		n := copy(p, r.ready)
		r.ready = r.ready[n:]
		if len(r.ready) == 0 {
			r.ready = nil
		}
		return n, nil
	}
	// End of input or a read error: the SDK ends the session on either,
	// so first let the requests already passed be answered.
	if r.timeout >= 0 {
		r.s.wait(r.timeout)
		r.timeout = -1
	}
	return 0, r.err
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
		if e == nil && pass != nil {
			e = r.s.admit(msgs, batch)
			if e != nil && e.ids != nil {
				r.passAnswers(msgs)
			}
		}
		if e == nil {
			if pass != nil {
				r.ready = append(r.ready, pass...)
				r.ready = append(r.ready, '\n')
			}
			return
		}
		lerr = e
		if lerr.id != nil && r.s.inFlight(lerr.key) {
			// A request with this id is in flight: an answer with the id
			// would be taken for its answer.
			lerr.id = nil
		}
	}
	r.log.Warn("stdio: refused an input line",
		"line", r.n, "bytes", size, "code", lerr.code, "reason", lerr.reason)
	r.w.answer(errorLine(lerr))
}

// passAnswers passes, one line each, the answers to the server's requests
// among msgs, the members of a batch whose requests are refused: a handler
// may be waiting for one of them, holding its place in flight.
func (r *reader) passAnswers(msgs []info) {
	for _, m := range msgs {
		if !m.request {
			r.ready = append(r.ready, m.raw...)
			r.ready = append(r.ready, '\n')
		}
	}
}

// Close closes the input and stops a wait for answers.
func (r *reader) Close() error {
	r.s.close()
	return r.r.Close()
}
