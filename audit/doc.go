// Package audit records every decision mcpguard makes about a tool call.
//
// An [Event] is one record: who (subject, roles, session), what (tool, class,
// argument hash), which decision (allowed, code, dry run) and when, and, for
// a call another guarded call's handler made, that call's correlation id
// (its parent). Sinks record events: [JSONLSink] appends JSON lines to a
// file, buffered or durable (fsync with group commit), follows a log rotator's rename on
// [JSONLSink.Reopen] and, on Unix, the removal of its file on its own, and
// may share its file with other processes' sinks; [SQLSink] inserts batches
// into an audit_log table on SQLite or PostgreSQL (10 or later); [SlogSink]
// hands events to a slog.Handler; [Fanout] writes to several sinks at once.
//
// [NewSQL] upgrades a table of an earlier [SchemaVersion] in place, in one
// transaction. The upgrades to versions 4 and 6 add a column with a
// constant default, which rewrites no row on SQLite and on PostgreSQL 11 or
// later (PostgreSQL 10 rewrites the whole table and its indexes). But the
// upgrades to versions 3 (PostgreSQL), 5 and 6 build indexes over the whole
// table, and the one to version 2 (SQLite) rewrites every row: on
// PostgreSQL an upgrade through version 3 or 6 holds, until it commits, a
// lock that stops every reader and writer of the table (one to version 5
// alone stops writers), and on SQLite every upgrade holds the database's
// write lock. Replicas of the older version that share the database wait
// meanwhile, their durable writes (write tools' intents) with them: upgrade
// a large table at a quiet time.
//
// # Durability
//
// A write tool's handler runs only after its intent is durable:
// [WriteDurable] uses a sink's [DurableWriter] method when it has one. For a
// [JSONLSink] that means written and fsynced (written, to a pipe or a
// terminal, which cannot be fsynced); for a [SQLSink], committed.
// Plain Write on a buffered sink returns once the event is queued; call Flush
// or Close to drain.
//
// # Reading back
//
// [ReadJSONL] streams a JSONL file as (Event, error) pairs: a torn or corrupt
// line is an error carrying its line number, never an event (but see
// [JSONLSink] on a line that lost only its newline), and iteration
// can continue past it. [QueryJSONL], [SQLSink.Query] and [QuerySQL] select
// events by session, subject, tool, correlation, request or parent id, phase,
// outcome and time range with one [Filter], all in one order (time, then
// the order stored); [Filter.Next] pages through a trail of any size, each
// record once, where more records share an instant than a page holds.
package audit
