package stdio

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options select the files [Isolate] works on and how its transport ends.
// A nil *Options means the process's own standard streams, with the
// defaults below. Where descriptors are redirected, the descriptor of a
// Stdin or Stdout above 2 is left close-on-exec, so that child processes
// do not inherit it; 0, 1 and 2 are theirs to inherit.
type Options struct {
	// Stdin is the file the JSON-RPC channel reads from. Nil means os.Stdin.
	// After Isolate its descriptor reads the null device.
	Stdin *os.File
	// Stdout is the file the JSON-RPC channel writes to. Nil means
	// os.Stdout. After Isolate its descriptor writes to Stderr.
	Stdout *os.File
	// Stderr receives everything written to Stdout's descriptor after
	// Isolate. Nil means os.Stderr.
	Stderr *os.File
	// DrainTimeout is how long the transport holds back the end of its
	// input (end of file, a read error, or Stop) while requests already
	// read are still unanswered, so that a client that writes its requests
	// and closes stdin at once, or a server stopped on a signal, still
	// answers every call under way (the go-sdk ends the session at end of
	// input and drops answers in flight). It runs from the first of the
	// end of input and the stop. Past it the transport logs how many
	// requests are unanswered, and the SDK ends the session and cancels
	// the calls still running (their context's cause is io.EOF, or the read
	// error); their answers are lost. A call waiting, at end of input, for
	// the client's answer to a request of the server's does not hold it:
	// the transport answers that request to the SDK with an error. A
	// subscriptions/listen call, which the SDK holds until it is
	// cancelled, is cancelled when the drain
	// starts (the transport hands the SDK a notifications/cancelled for
	// it), and answered. Zero means 5 seconds; negative turns draining off
	// (end of input, or the stop, ends the session at once).
	DrainTimeout time.Duration
	// Stop, once closed, stops the server gracefully, as closing its input
	// does though the input stays open: the transport starts no new
	// request, and ends its input for the go-sdk (end of file, so the
	// session ends without error) once the requests it read before the
	// stop are answered, or after DrainTimeout. A request it reads after
	// the stop (alone or in a batch) is not passed on: it is answered at
	// once with -32004, the go-sdk's code for a request that comes while
	// its session is closing ("server is closing"), and its id; the first
	// is logged, and one line when the input ends counts them all.
	// Notifications (a cancellation, say) and the client's answers to the
	// server's own requests (elicitation, sampling, roots) still pass: a
	// call under way may be waiting for one. Give it the Done channel of
	// the context that signal.NotifyContext returns, and serve the session
	// with a context the signal does not cancel (server.Run with that
	// context would close the session at the signal and drop the answers
	// of the calls under way; see the package documentation). Nil means
	// no stop.
	Stop <-chan struct{}
	// Logger receives a warning for each input line refused (its number,
	// length, the error code and the reason, never its bytes): not a
	// JSON-RPC message the go-sdk would answer, the first request refused
	// as busy (beyond a bound of requests in flight) since a request last
	// passed (the others of the run get no line of their own: when there
	// were any, one warning when a request passes again, or the input
	// ends, counts the whole run, the first included), or the first
	// request read after the stop (likewise, one warning when the input
	// ends gives the number of all those refused after the stop); and one
	// when DrainTimeout ends the input with requests unanswered. Nil means
	// a text logger on Stderr. A handler that panics (its bug) loses that
	// record, which is said on standard error; the transport goes on.
	Logger *slog.Logger
}

// Isolate moves the JSON-RPC channel of a stdio server off the standard
// descriptors and returns a transport over private copies of them. After it
// returns, writes to the standard output descriptor go to standard error
// and reads from the standard input descriptor see end of file; only the
// returned transport reads and writes the channel. Closing the transport
// closes the copies, so the client sees end of file on the server's output.
// (Closing does not interrupt a read of the input under way, by the
// transport's one reading goroutine, when the input is a blocking pipe or
// terminal, as is usual: the read ends when the client writes or closes
// its end. Until then, or until the process exits, that goroutine and the
// input's copy stay, as the go-sdk's own stdio transport leaves its
// reading goroutine.) Where descriptors are redirected, a read that would
// block (another process sharing the input made it non-blocking) is no end
// of input: the transport waits it out, as a blocking input waits for the
// client to write.
// At end of input the transport waits (up to Options.DrainTimeout) for the
// answers to requests already read, then reports end of file; it does the
// same when Options.Stop is closed, refusing (-32004) the requests it reads
// after it. Once the input has ended, it answers to the go-sdk itself, with
// an error, the server's requests to the client that the client has not
// answered (-32003; -32601 to a ping), as none can come. It cancels, when
// it starts that wait, the subscriptions/listen calls in flight, which end
// only so. Where
// descriptors are redirected, and Stdout or Stderr is descriptor 1 or 2,
// Isolate also asks for SIGPIPE ([os/signal.Notify]): a write to a broken
// pipe on the standard output or error descriptor then fails with EPIPE
// instead of killing the process, so a server whose client went away
// (closing its standard error too) still runs its shutdown.
//
// The transport reads its input line by line and hands the server only the
// lines that the go-sdk takes as a JSON-RPC message or batch; the SDK would
// end the session at the first other line. It answers such a line itself,
// on the same output and one line long, with a JSON-RPC error: -32700
// (parse error, id null) for a line that is not one JSON value, -32600
// (invalid request) for any other (not an object, "jsonrpc" not "2.0", an
// id of the wrong type, a member given twice with an occurrence of the
// wrong type, an empty batch, a batch of more than 4096 messages (refused
// whole before any of its messages is read, so that it costs one pass over
// its bytes), a batch where the negotiated protocol version has none or
// sent before the answer to initialize is out (or, after an initialize
// answered with an error, before one succeeds), a JSON value that with its
// newline is longer than 16 MiB, or that nests deeper than the go-sdk's
// 1000 levels); it logs it, and goes on serving. The -32600 answer carries
// the request's id when it can be read (a line longer than 16 MiB is
// dropped unread) and no request with that id is in flight, else null.
// Messages must not span lines, as the MCP stdio transport requires.
//
// It refuses too, with -32600 and a null id, the messages that the go-sdk
// v1.8.0 reads but never answers, or ends the session on: a request, alone
// or in a batch, that reuses the id of a request in flight (jsonrpc2 drops
// it unanswered), a batch that repeats an id, and a batch that mixes
// requests and notifications. Ids compare as the SDK reads them: 1, 1.0,
// 1e0 and 1.5 are one id, "1" another. A notification in a batch counts as
// an empty id that the SDK keeps in use for good: after a batch that
// carried one, a batch that carries another is refused.
//
// It answers itself, with -32029 (server busy) and the request's id, a
// request that arrives while 4096 requests are in flight (passed to the
// go-sdk and not yet answered), or whose bytes (its JSON value as read)
// with theirs would pass 64 MiB, and passes nothing of it; a request with
// none in flight is never refused for its size. When the requests of a
// batch would go beyond a bound, it answers each of them so, with its id,
// in one batch answer, and passes only the batch's answers to the
// server's requests. A batch of more than 4096 messages is refused whole
// as invalid, as above, whatever it holds: its notifications and answers
// count with its requests, and are refused with them. The SDK would
// run every call at once in a goroutine of its own, holding its params
// (about twice their size) until it ends, so a flood of requests to slow
// handlers would otherwise grow the server without limit: 4096 calls of
// 16 MiB would hold some 128 GiB. Notifications and responses pass
// whatever is in flight (but in a batch of more than 4096 messages): a
// handler may be waiting for the answer to a request of its own. A
// request counts as answered when the go-sdk writes its answer, which it
// does for a cancelled request too; the SDK writes none for a
// result it cannot marshal (a tool handler's NaN in StructuredContent,
// say), and such a request stays in flight for good.
//
// The line limit is fixed at the go-sdk's default, 16 MiB
// ([mcp.DefaultMaxLineLength]), counted on the JSON value and its newline:
// the blanks around the value (a CRLF line's '\r') are not passed on and do
// not count, up to 64 bytes of them. Leave the MaxLineLength of the returned
// transport zero. The SDK reads that field, the transport does not: a
// lower value would let the SDK end the session on a line the transport
// passed, and a higher one changes nothing.
//
// Isolate must be called once, before other goroutines use the standard
// streams. It returns an error, leaving the descriptors as they were, when a
// file is nil or closed; when standard output and standard error (or, where
// descriptors are redirected, standard input and another stream) are one
// descriptor; when a descriptor cannot be duplicated or redirected; when
// standard input reads the null device while standard output goes to
// standard error's file, terminal or pipe (as Isolate leaves them: a second
// call, or a server with no channel to serve); or when standard output and
// standard error are one pipe or socket (as after 2>&1): writes to standard
// error would then reach the channel, and nothing could keep it clean. See
// the package documentation for the platforms where the redirection is done
// on the descriptors and where it falls back to the os variables.
func Isolate(opts *Options) (*mcp.IOTransport, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	std := o.Stdin == nil && o.Stdout == nil && o.Stderr == nil
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if err := checkStreams(o.Stdin, o.Stdout, o.Stderr); err != nil {
		return nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("stdio: opening %s: %w", os.DevNull, err)
	}
	defer null.Close()
	if sameFile(o.Stdin, null) && sameFile(o.Stdout, o.Stderr) {
		return nil, errors.New("stdio: standard input reads the null device and standard output goes where standard error does, as Isolate leaves them: either Isolate was already called (call it once), or the server was started so (stdin from /dev/null, 2>&1) and has no JSON-RPC channel to serve")
	}
	if sameChannel(o.Stdout, o.Stderr) {
		return nil, errors.New("stdio: standard output and standard error are the same pipe or socket (2>&1?): stray output would still reach the JSON-RPC channel; give standard error its own destination")
	}
	in, out, err := isolate(o.Stdin, o.Stdout, o.Stderr, null, std)
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(o.Stderr, nil))
	} else {
		// It logs on the transport's reader goroutine: a panic of the
		// handler's (its bug) there ended the process.
		o.Logger = logsafe.Logger(o.Logger)
	}
	s := newSession()
	w := newWriter(out, s)
	r := newReader(in, w, s, o.Logger, o.DrainTimeout)
	r.stop = o.Stop
	return &mcp.IOTransport{Reader: r, Writer: w}, nil
}

// checkStreams refuses streams Isolate cannot work on: a nil or closed
// file, or standard output and standard error on one descriptor. (Where
// descriptors are redirected, isolate refuses standard input on the
// descriptor of another stream too.)
func checkStreams(stdin, stdout, stderr *os.File) error {
	for _, s := range []struct {
		name string
		f    *os.File
	}{{"standard input", stdin}, {"standard output", stdout}, {"standard error", stderr}} {
		if s.f.Fd() == ^uintptr(0) { // a nil or closed file
			return fmt.Errorf("stdio: %s is nil or closed", s.name)
		}
	}
	if stdout.Fd() == stderr.Fd() {
		return errors.New("stdio: standard output and standard error are the same descriptor; give each its own")
	}
	return nil
}

// sameFile reports whether a and b are descriptors of one file, device,
// pipe or socket; a file that cannot be examined is not.
func sameFile(a, b *os.File) bool {
	ai, err := a.Stat()
	if err != nil {
		return false
	}
	bi, err := b.Stat()
	return err == nil && os.SameFile(ai, bi)
}

// sameChannel reports whether out and errf are descriptors of one pipe or
// socket, so that redirecting out to errf would leave it on the channel. A
// terminal or a file shared by both is no channel a client reads, and a
// file that cannot be examined is given the benefit of the doubt.
func sameChannel(out, errf *os.File) bool {
	oi, err := out.Stat()
	if err != nil || oi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return false
	}
	ei, err := errf.Stat()
	return err == nil && os.SameFile(oi, ei)
}
