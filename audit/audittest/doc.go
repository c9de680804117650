// Package audittest is a conformance kit for [audit.Sink] implementations, in
// the spirit of testing/slogtest: a sink that passes [Run] records every
// field of every event faithfully (unicode, control characters, HTML
// characters, opted-in arguments), does not retain the events it is given,
// loses nothing under concurrent writers, honours [audit.DurableWriter] when
// it implements it, and is an io.Closer whose Close flushes what it
// buffers and makes later writes fail. [RunKeeper] checks the
// [audit.Keeper] of a sink that hands its events' encoding off.
// Every sink built into package audit passes them.
package audittest
