// Package stdio keeps the standard output of a stdio MCP server for
// JSON-RPC alone.
//
// A stdio MCP server speaks newline-delimited JSON-RPC on its standard
// output. Any other byte written there (a debugging fmt.Println in a
// handler, a library that logs to stdout, a child process that inherits the
// descriptor) corrupts the channel, and the client drops the connection.
// Logging to stderr is a convention; [Isolate] makes it a property of the
// process:
//
//   - it duplicates the standard output descriptor and hands the copy to
//     the returned transport, the only writer of JSON-RPC;
//   - it points descriptor 1 (and so os.Stdout, fmt.Print* and child
//     processes) at standard error, so a stray print lands in the log;
//   - it does the same for standard input: the transport reads a private
//     copy and descriptor 0 reads /dev/null, so a handler that reads
//     os.Stdin gets end of file instead of stealing protocol bytes (where
//     descriptors are redirected, a read of the copy that would block,
//     when another process sharing the input made it non-blocking, is
//     waited out, not taken for the end of input);
//   - it hands the server only the input lines that the go-sdk takes as a
//     JSON-RPC message: the SDK ends the session at the first line it
//     cannot decode, dropping the answers in flight. Any other line (not
//     JSON, not a JSON-RPC 2.0 object, an empty or forbidden batch, a batch
//     of more than 4096 messages, longer than 16 MiB, nested deeper than
//     1000 levels) is answered on the channel with a JSON-RPC error, -32700
//     or -32600 (with the request's id when it can be read and no request
//     with it is in flight), logged on standard error, and the session
//     goes on. Batches are refused from protocol version 2025-06-18 on,
//     while the answer to an initialize request is not out, and after one
//     answered with an error until one succeeds (the version is not
//     known: the SDK fixes it when its initialize handler runs, though a
//     middleware may fail the answer after);
//   - it refuses the same way the messages that the go-sdk v1.8.0 reads but
//     never answers: a request, alone or in a batch, that reuses the id of a
//     request in flight (jsonrpc2 drops it), and a batch that mixes
//     requests and notifications (the SDK waits for an answer to the
//     notification too); and a request whose number id the SDK would
//     answer changed, one that is not an integer from -2^53 to 2^53 (it
//     reads ids into an int64: 5.5 is answered as 5, 9007199254740993 as
//     9007199254740992), whose answer the client could not match (in a
//     batch the SDK takes, such requests are answered in one batch answer
//     of their own, and the rest of the batch is served), and a
//     notifications/cancelled whose number requestId is not such an
//     integer (the SDK would cancel another request: 5.5 as 5);
//   - it bounds the requests in flight (passed to the go-sdk, not yet
//     answered) at 4096, and their bytes at 64 MiB (a request alone passes
//     whatever its size): the SDK reads every request and runs each call
//     in a goroutine of its own, holding its params, so a client that
//     floods a server whose handlers are slow would grow it without limit.
//     A request beyond a bound is answered with -32029 and its id (each
//     request of a batch that would go beyond, in one batch answer, while
//     the batch's answers to the server's requests pass; a batch of more
//     than 4096 messages, its notifications and answers counted with its
//     requests, is refused whole with -32600 and a null id, its answers to
//     the server's requests with it, before any of its messages is read,
//     so that its cost is one pass over its bytes); the first of a run is
//     logged and, when more followed, one line counts the whole run (the
//     first included) when a request passes again or the input ends;
//     notifications and responses still pass, and requests pass again once
//     answers are out;
//   - at end of input, or a read error, it waits for the answers to
//     requests already read before reporting it, so `printf ... | server`
//     gets every answer (the go-sdk ends the session at end of input and
//     would drop them); a request of the server's to the client (roots,
//     sampling, elicitation) left unanswered then, or written after, can
//     no longer be answered, so the transport hands the SDK an error
//     answer to it (-32003, "client is closing"; -32601 to a ping, which
//     stops the SDK's keepalive instead of closing the session): the
//     handler waiting for it goes on, and its call is answered;
//   - when [Options.Stop] is closed (on SIGTERM, say), it stops the server
//     gracefully: a request read after the stop is answered at once with
//     -32004 (the go-sdk's "server is closing") and not started, while the
//     calls under way finish and are answered (notifications, and the
//     client's answers to the server's own requests, still pass); then it
//     reports end of input, and the session ends. [Options.DrainTimeout]
//     (5 seconds by default) bounds the wait for those answers, after the
//     stop as at end of input: a call that never ends does not hold the
//     server for good. A subscriptions/listen call (SEP-2575, which the
//     go-sdk's client opens over 2026-07-28 to hear of list changes) ends
//     only when cancelled: when the wait starts, the transport hands the
//     SDK a notifications/cancelled for each in flight, as the client
//     would, so the SDK answers it and it does not hold the wait;
//   - where descriptors are redirected, it asks for SIGPIPE
//     ([os/signal.Notify]), so that a write to a broken pipe on descriptor
//     1 or 2 fails with EPIPE instead of killing the process: a client
//     that goes away closes the server's standard error along with its
//     output, and a Go program dies of SIGPIPE at its next log line or
//     stray print, before its shutdown (flushing an audit trail, say).
//     Child processes still start with SIGPIPE at its default. It does so
//     only when the files it works on include descriptor 1 or 2: on other
//     files, SIGPIPE stays as it was.
//
// Call Isolate once (a second call returns an error), first thing in main,
// before anything writes to stdout or starts goroutines that might, and
// serve the returned transport instead of [mcp.StdioTransport]. To stop
// gracefully on a signal, give the signal's context to [Options.Stop], not
// to the session: [mcp.Server.Run] closes the session as soon as its
// context is done, and the go-sdk then writes no answer of the calls still
// running.
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	t, err := stdio.Isolate(&stdio.Options{Stop: ctx.Done()})
//	if err != nil {
//		log.Fatal(err) // log writes to stderr
//	}
//	// nil: the client closed stdin, or the stop ended the session
//	err = stdio.Serve(ctx, server, t, 6*time.Second, func() { log.Print("stopping") })
//
// [Serve] connects the session with a context the signal does not cancel
// and waits for its end. A handler that ignores its context's cancellation
// still holds the session after DrainTimeout, and so does a client that
// stops reading the server's output (the go-sdk's write of an answer then
// waits for good; on Linux, macOS and the BSDs also when another process
// sharing the output made it non-blocking: the transport waits out a write
// that would block, as a blocking output does, rather than fail it and
// have the SDK end its output): Serve's grace bounds the wait after the
// stop ([ErrStopTimeout]).
//
// The line limit is the go-sdk's default, 16 MiB
// ([mcp.DefaultMaxLineLength]) for the JSON value and its newline (blanks
// around the value, as the '\r' of CRLF, do not count), whatever the
// MaxLineLength of the returned transport: leave that field zero. A lower
// value would let the SDK end the session on a line the transport passed;
// a higher one changes nothing, as the transport refuses longer lines.
//
// On Linux, macOS and the BSDs the redirection is done with dup/dup2 on the
// descriptors themselves, so it also covers cgo code and child processes.
// On other systems (Windows) Isolate falls back to swapping the os.Stdout
// and os.Stdin variables, which covers Go code in the process only; there
// it refuses files given in [Options] with an error.
package stdio
