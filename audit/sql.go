package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // driver "sqlite", the embedded default

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// Dialect names the SQL flavour of a [SQLSink]'s database.
type Dialect string

// The supported dialects.
const (
	// SQLite, through modernc.org/sqlite (driver name "sqlite"); see [OpenSQLite].
	SQLite Dialect = "sqlite"
	// Postgres, through github.com/jackc/pgx/v5/stdlib (driver name "pgx"):
	// PostgreSQL 10 or later (see [SQLSink] on a COMMIT without an answer).
	Postgres Dialect = "postgres"
)

// SchemaVersion is the version of the audit_log table this package creates
// and writes, recorded in the table audit_schema_version. NewSQL upgrades an
// older table in place. Version 2 (SQLite only; nothing changes on
// PostgreSQL) makes the column time, derived from time_ns, a column the sink
// writes instead of a generated one. Version 3 (PostgreSQL only) indexes the
// first 256 characters of session_id, subject, tool and correlation_id
// instead of the whole value, which PostgreSQL refuses to index past about
// 2.7 kB (the row, and its event, were lost). Version 4 adds the column
// request_id ([Event].RequestID), empty in the rows before. Version 5
// indexes request_id in the rows that have one. Version 6 adds the column
// parent_id ([Event].ParentID), empty in the rows before, indexed in the
// rows that have one.
const SchemaVersion = 6

// SQLOptions configures a [SQLSink]. A nil *SQLOptions means defaults.
type SQLOptions struct {
	// BatchSize is the most rows one transaction of the background writer
	// commits: on PostgreSQL in multi-row INSERTs of power-of-two sizes (a
	// batch of 300 rows: 256, 32, 8 and 4), at most 1024 rows (zero: 256);
	// on SQLite in INSERTs of at most 32 rows (8 through a driver other
	// than modernc.org/sqlite), at most 65536 rows (zero: 32768).
	//
	// On SQLite the writer takes at most 1024 queued rows at a time and
	// inserts them into its open transaction; it commits when nothing more
	// is queued, when a WriteDurable or a Flush waits for a row it
	// inserted (a WriteDurable waits for the insertion of the round under
	// way and of its own, at most 2048 rows as with transactions of 1024,
	// then for the commit), when the transaction holds BatchSize rows, or
	// when its rows (past 1 MiB) would take about half of the connection's
	// page cache (cache_size). Transactions grow only while events are
	// queued faster than they are inserted: each commit writes every index
	// page it changed to the WAL again, and with spread sessions, subjects
	// and tools that doubles the pages written per row at 1024 rows per
	// commit.
	BatchSize int
	// QueueSize is how many events Write queues before it blocks (until the
	// queue has room or its context ends; events are never dropped to make
	// room). Zero: 8192.
	QueueSize int
	// OnError is called by the background writer when a batch fails (the
	// batch is retried), and on SQLite when a checkpoint of the WAL fails
	// (the next one tries again), one call at a time: it need not be safe
	// for concurrent use. Zero: the error is printed to standard error.
	// A panic of OnError's (on the writer's or checkpointer's goroutine,
	// where it would end the process) is logged to slog.Default at Error, with its value and
	// stack, and the writer goes on.
	OnError func(error)
}

// SQLStats counts what a [SQLSink] has done since it was created.
type SQLStats struct {
	Rows    uint64 // rows committed
	Batches uint64 // transactions committed by the background writer
	Lost    uint64 // events not recorded: rows the database refused, and rows given up at Close while it kept failing
}

// SQLSink records events in the table audit_log of a SQLite or PostgreSQL
// database through database/sql. It creates the table (and records its
// version) if needed. Write queues the event for a background writer that
// commits multi-row INSERTs in batches; [SQLSink.WriteDurable] inserts and
// commits synchronously. The database's own commit durability applies: with
// [OpenSQLite]'s synchronous=NORMAL in WAL mode a commit survives a process
// crash but the last commits may be lost on power loss (open with
// _pragma=synchronous(FULL) to prevent that).
//
// On PostgreSQL (10 or later) a batch whose COMMIT gets no answer (its
// connection broke) is not inserted again unless the server says its
// transaction did not commit (txid_status), or that it committed but the
// rows are not there (after a crash the server may give the id of a
// transaction that never reached the disk to another): while that
// transaction is still in progress, the writer ends its backend with
// pg_terminate_backend (allowed on the backends of the sink's own role),
// which settles it; it ends no other backend. On an older server it looks
// for the rows, which may not be there yet while the commit is under way.
//
// On SQLite through modernc.org/sqlite, the background writer inserts each
// batch with the SQLite C API on one connection of db's pool (taken with
// (*sql.Conn).Raw, so its pragmas and busy timeout apply), binding values by
// index: database/sql and the driver's argument binding cost more than
// SQLite's own inserts. With another SQLite driver it writes through
// database/sql. While events keep coming faster than it inserts them, the
// native writer keeps its transaction open for up to BatchSize rows (see
// [SQLOptions]): events queued by Write become visible, and survive a
// crash, at its commit, which a Flush or a WriteDurable brings forward.
//
// The native writer also keeps SQLite's WAL checkpoints out of its commits:
// it turns the automatic checkpoint of its connection off for the length of
// a batch (restoring the connection's wal_autocheckpoint after) and, each
// time it has written wal_autocheckpoint pages to the WAL, has another
// connection of db's pool run a PASSIVE checkpoint concurrently with the
// next batches; every 8 such intervals it runs one itself between two
// batches, so that the WAL starts over (the WAL file then grows to about 9
// intervals plus one transaction instead of 1: 36 MB with the default of
// 1000 pages of 4 KB, plus at most half the page cache). A
// checkpoint syncs as the automatic one does; durability is unchanged. With
// wal_autocheckpoint set to 0 no checkpoint is run.
//
// On SQLite, a database file removed or replaced while the sink runs (its
// directory deleted, a backup moved over it) goes on taking commits into
// the file SQLite still has open, which no one can open again: after each
// batch the writer checks that the file at the database's path is still
// the one it opened and, when it is not, counts that batch's events lost,
// returns the error to its WriteDurable calls and to the next Flush, and
// reports it to OnError (once); so with every batch after. (A database with no
// file, ":memory:", is not checked.)
//
// SQLSink implements [Sink], [DurableWriter] and [Keeper] and is safe for concurrent
// use. It does not close the *sql.DB. The zero SQLSink, or a nil one, is not
// usable (its methods return an error wrapping [ErrClosed]): make one with
// [NewSQL].
type SQLSink struct {
	db      *sql.DB
	d       Dialect
	batch   int // most rows in one transaction
	round   int // most rows taken from the queue at a time (SQLite: sqliteRound)
	perStmt int // most rows in one INSERT statement
	onError func(error)
	queue   chan item
	durable chan item // SQLite: rows of WriteDurable, for the writer's next batch
	done    chan struct{}

	mu     sync.RWMutex // guards closed and sends on queue
	closed bool
	// closing is set by Close before it closes the queue: a writer that
	// is already retrying a row against an unreachable database gives up
	// instead of retrying for as long as the database is down, and calls
	// made from then on are refused with ErrClosed at once.
	closing atomic.Bool
	// stop is the context of the writer's calls to the database and of
	// WriteDurable's on PostgreSQL; Close cancels it once nothing was
	// settled for closeStall (see watch): a server that stopped answering
	// without closing its connections would hold them, and Close, for good.
	stop      context.Context
	cancel    context.CancelFunc
	watchOnce sync.Once

	// stmtSem (a semaphore of one) guards stmts; it is not held while one
	// is prepared (see stmt).
	stmtSem chan struct{}
	stmts   map[int]*sql.Stmt // INSERT statements by row count (powers of two)

	lastErr atomic.Pointer[error]

	noNative atomic.Bool // the SQLite connections are not modernc.org/sqlite's

	ckpt     walCheckpointer // SQLite: checkpoints off the batch writer's path
	ckptDone chan struct{}

	rows, batches, lost atomic.Uint64

	// SQLite: the database's file, and what it was when the sink was
	// made (see fileMoved); "" when it has none.
	file      string
	fileInfo  os.FileInfo
	movedTold bool // the writer reported fileMoved's error to OnError
}

// fileMoved returns an error when the SQLite database's file is no longer
// at its path: removed, or replaced by another.
func (s *SQLSink) fileMoved() error {
	if s.file == "" {
		return nil
	}
	fi, err := os.Stat(s.file)
	if err == nil && os.SameFile(fi, s.fileInfo) {
		return nil
	}
	return fmt.Errorf("audit: the SQLite database %s was removed or replaced: events committed since are in no file at its path", s.file)
}

// item is a queued row, or (when flushed != nil) a Flush marker.
type item struct {
	r       row
	args    json.RawMessage // a kept event's arguments, hashed by the writer
	flushed chan error
	durable chan error // a WriteDurable waiting for r's commit (SQLite)
}

// row is an event converted to column values; it retains nothing of the
// event's slices or maps.
type row struct {
	timeNS                                    int64
	corr, session, subject, roles, tool, cls  string
	phase, code, detail, argsHash, proto, cli string
	reqID, parentID                           string
	allowed, dryRun                           bool
	latency, cost                             float64
	args                                      sql.NullString
	timeText                                  [timeTextLen]byte // SQLite only: the column time
}

const columns = columnsV1 + ", request_id, parent_id"

// columnsV1 are the columns of schema versions 1 to 3, in the order of
// columns: a query of such a table reads "" for request_id and parent_id
// (one of versions 4 and 5, "" for parent_id).
const columnsV1 = "time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args"

// What a query selects from a table of an earlier schema version, which no
// sink of this version has upgraded: "" for the columns it lacks.
const (
	columnsBeforeV4 = columnsV1 + ", '', ''"
	columnsBeforeV6 = columnsV1 + ", request_id, ''"
)

const nColumns = 20

// insertColumns returns the columns an INSERT of dialect d sets: on SQLite,
// the sink also writes the column time (see schemaV2).
func insertColumns(d Dialect) (names string, n int) {
	if d == SQLite {
		return columns + ", time", nColumns + 1
	}
	return columns, nColumns
}

// timeTextLen is the length of the column time: 2006-01-02T15:04:05.000Z
// (years 1678 to 2261, four digits).
const timeTextLen = 24

// appendTimeText appends the column time of an event at timeNS: the UTC
// time in milliseconds, truncated toward zero as SQLite's expression
// strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch')
// (the generated column of schema version 1) computes it.
func appendTimeText(dst []byte, timeNS int64) []byte {
	return append(time.UnixMilli(timeNS/1e6).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000"), 'Z')
}

// sqliteRound is the most rows the SQLite writer takes from the queue at a
// time, and sqliteMaxTx the largest BatchSize on SQLite (see BatchSize).
const (
	sqliteRound = 1024
	sqliteMaxTx = 65536
)

// sqliteRowsPerStmt bounds the rows of one SQLite INSERT (see NewSQL).
const sqliteRowsPerStmt = 8

// sqliteURIPath escapes path for a "file:" URI: the driver cuts the query
// at the first '?', and SQLite reads '#' as a fragment and decodes %xx.
// Absolute paths keep their leading slash ("file:/a/b"), relative ones
// stay relative; a path beginning "//" would name a URI host, so it is
// made "/" once the escaping is done.
func sqliteURIPath(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	p := b.String()
	for strings.HasPrefix(p, "//") {
		p = p[1:]
	}
	return p
}

// OpenSQLite opens (creating if needed) the SQLite database at path with the
// driver "sqlite" (modernc.org/sqlite) and the pragmas journal_mode=WAL,
// synchronous=NORMAL, busy_timeout=10000, temp_store=memory and
// cache_size=-32768 (a page cache of 32 MiB per connection), and immediate
// write transactions. A new database file is created with mode 0600 (its
// journal files take the same mode), as the JSONL sink's file is: an audit
// trail is not for every user of the machine to read; a path that is a
// symbolic link to no file is refused (an error wrapping [os.ErrNotExist])
// rather than have the file it names created. Several processes may open
// one database at once (each waits for the others: 10 s of tries, the last
// of which may wait the busy timeout too, so 20 s at most).
//
// The path ":memory:" (or "", a temporary one on disk) opens a database
// private to the returned *sql.DB, gone once it is closed. SQLite gives
// each connection such a database of its own, so the pool holds one
// connection, kept open: with a second one, the sink would insert into a
// database without its table, or a query would read another, empty one.
// Do not change its limits; and do not wait on the sink (Flush,
// WriteDurable, Close) while holding that connection (open *sql.Rows, a
// transaction): the sink's writer needs it.
func OpenSQLite(path string) (*sql.DB, error) {
	private := path == "" || path == ":memory:"
	if !private {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			err = f.Close()
		} else if errors.Is(err, os.ErrExist) {
			err = nil
			if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
				// A symbolic link to no file, which O_EXCL does not
				// follow: SQLite would create its target, with mode
				// 0644. Refused, as OpenJSONL refuses it.
				err = fmt.Errorf("a symbolic link to a file that does not exist: %w", serr)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("audit: open sqlite %s: %w", path, err)
		}
	}
	// The driver sets busy_timeout before the other pragmas wherever it
	// is listed: a switch to WAL that meets another process's lock waits.
	// Two processes switching one new database at once can deadlock,
	// which SQLite answers at once with SQLITE_BUSY: see pingSQLite.
	dsn := "file:" + sqliteURIPath(path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=temp_store(memory)&_pragma=cache_size(-32768)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: open sqlite %s: %w", path, err)
	}
	if private {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
	}
	if err := pingSQLite(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: open sqlite %s: %w", path, err)
	}
	return db, nil
}

// pingSQLite opens db's first connection, which runs the pragmas. Two
// processes turning one new database to WAL at once can deadlock on its
// locks, and SQLite then answers one of them SQLITE_BUSY at once, busy
// timeout or not: that connection is tried again, for 10 s (a try may
// itself wait the busy timeout, 10 s).
func pingSQLite(db *sql.DB) error {
	wait := 5 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.Ping()
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || time.Now().After(deadline) {
			return err
		}
		if c := coded.Code() & 0xff; c != 5 && c != 6 { // BUSY, LOCKED
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// NewSQL returns a sink writing to db in dialect d, after creating or
// checking the schema (an error if the database holds a newer schema version
// than [SchemaVersion], a table audit_log that is not this package's, or, on
// SQLite, takes no writes). On SQLite, while another connection or process
// holds the database's write lock, NewSQL waits for it 30 s at most, or
// until ctx ends. Close the sink to drain its queue.
func NewSQL(ctx context.Context, db *sql.DB, d Dialect, opts *SQLOptions) (*SQLSink, error) {
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("audit: unknown SQL dialect %q", d)
	}
	if db == nil {
		return nil, errors.New("audit: nil *sql.DB")
	}
	var o SQLOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
		if d == SQLite {
			// Transactions as large as the flow of events allows (see
			// BatchSize): each commit writes the last pages of the table
			// and of its five indexes to the WAL again.
			o.BatchSize = sqliteMaxTx / 2
		}
	}
	if d == SQLite {
		o.BatchSize = min(o.BatchSize, sqliteMaxTx)
	} else {
		o.BatchSize = min(o.BatchSize, 1024) // PostgreSQL allows 65535 parameters
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 8192
	}
	if o.OnError == nil {
		o.OnError = func(err error) { fmt.Fprintln(os.Stderr, err) }
	}
	// The writer and the checkpointer call it from their own goroutines.
	onError, onErrorMu := o.OnError, new(sync.Mutex)
	o.OnError = func(err error) {
		onErrorMu.Lock()
		defer onErrorMu.Unlock()
		defer func() {
			if v := recover(); v != nil {
				logsafe.Logger(slog.Default()).Error("audit: the SQL sink's OnError panicked", "err", err, "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
			}
		}()
		onError(err)
	}
	if err := migrate(ctx, db, d); err != nil {
		return nil, err
	}
	s := &SQLSink{
		db:      db,
		d:       d,
		batch:   o.BatchSize,
		round:   o.BatchSize,
		perStmt: o.BatchSize,
		onError: o.OnError,
		queue:   make(chan item, o.QueueSize),
		done:    make(chan struct{}),
		stmtSem: make(chan struct{}, 1),
		stmts:   map[int]*sql.Stmt{},
	}
	s.stop, s.cancel = context.WithCancel(context.Background())
	if d == SQLite {
		var file string
		if err := db.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err == nil && file != "" {
			if fi, err := os.Stat(file); err == nil {
				s.file, s.fileInfo = file, fi
			}
		}
		s.durable = make(chan item)
		s.ckpt.wake = make(chan struct{}, 1)
		s.ckptDone = make(chan struct{})
		go func() {
			defer close(s.ckptDone)
			s.ckpt.run(db, s.onError)
		}()
		// modernc.org/sqlite matches each parameter to its argument by a
		// linear scan: binding is quadratic in the parameters of a
		// statement. Short statements in one transaction are fastest.
		s.perStmt = min(s.perStmt, sqliteRowsPerStmt)
		s.round = min(s.round, sqliteRound)
	}
	go s.writer()
	return s, nil
}

func toRow(e *Event, d Dialect) (row, error) {
	if err := e.validate(); err != nil {
		return row{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if y := e.Time.UTC().Year(); y < 1678 || y > 2261 { // the instant's year, whatever its location
		return row{}, fmt.Errorf("%w: time %v outside the range of Unix nanoseconds", ErrInvalidEvent, e.Time)
	}
	if bad(e.LatencyMS) || bad(e.Cost) {
		return row{}, fmt.Errorf("%w: NaN or infinite number", ErrInvalidEvent)
	}
	r := row{
		timeNS: e.Time.UnixNano(), corr: text(e.CorrelationID), session: text(e.SessionID),
		subject: text(e.Subject), tool: text(e.Tool), cls: text(e.Class), phase: string(e.Phase),
		allowed: e.Allowed, dryRun: e.DryRun, code: text(e.Code), detail: text(e.Detail),
		latency: e.LatencyMS, argsHash: text(e.ArgsSHA256), cost: e.Cost,
		proto: text(e.ProtocolVersion), cli: text(e.ClientName), reqID: text(e.RequestID),
		parentID: text(e.ParentID),
	}
	if d == SQLite {
		var buf [64]byte // AppendFormat wants room to spare
		copy(r.timeText[:], appendTimeText(buf[:0], r.timeNS))
	}
	if len(e.Roles) > 0 {
		var b []byte
		b = append(b, '[')
		for i, role := range e.Roles {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, role)
		}
		r.roles = text(string(append(b, ']')))
	}
	if len(e.Args) > 0 {
		b, ok := appendAny(nil, e.Args, 0)
		if !ok {
			return row{}, fmt.Errorf("%w: args not encodable", ErrInvalidEvent)
		}
		r.args = sql.NullString{String: text(string(b)), Valid: true}
	}
	if d == Postgres && r.textLen() > maxPostgresRowText {
		// pgx refuses to send it, the server would end the connection:
		// no answer, which the writer would retry for good (see answered).
		return row{}, fmt.Errorf("%w: %d bytes of text, over the %d that one message to PostgreSQL carries", ErrInvalidEvent, r.textLen(), maxPostgresRowText)
	}
	return r, nil
}

// maxPostgresRowText is the most text (the bytes of its strings) a row
// stored on PostgreSQL may hold: the server takes a message of at most
// 1 GiB (PQ_LARGE_MESSAGE_LIMIT, which pgx checks before it sends), and
// the rest of one row's INSERT (its numbers, the lengths and names of the
// protocol) takes far less than the 64 KiB left.
const maxPostgresRowText = 1<<30 - 1<<16

// text makes s storable in any TEXT column: each byte of invalid UTF-8, as
// in the JSON encoding of a [JSONLSink] (and encoding/json), and each NUL
// byte (which PostgreSQL refuses) becomes U+FFFD.
func text(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == 0 || c == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

func bad(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

func (r *row) appendArgs(dst []any, d Dialect) []any {
	dst = append(dst, r.timeNS, r.corr, r.session, r.subject, r.roles, r.tool, r.cls,
		r.phase, r.allowed, r.dryRun, r.code, r.detail, r.latency, r.argsHash, r.cost,
		r.proto, r.cli, r.args, r.reqID, r.parentID)
	if d == SQLite {
		dst = append(dst, string(r.timeText[:]))
	}
	return dst
}

// Write queues e for the background writer. It blocks while the queue is
// full, until there is room or ctx ends (then it returns ctx's error and e is
// not recorded). It returns [ErrInvalidEvent] for an event that has no
// correlation id, phase or time or cannot be stored (a NaN or infinite
// number, a time outside years 1678-2261 in UTC, which Unix nanoseconds do
// not hold; on PostgreSQL, one of more than 1 GiB less 64 KiB of text,
// which one message to the server cannot carry), and [ErrClosed] after
// Close. A nil error means queued: use Flush, Close or WriteDurable to
// know it is committed.
func (s *SQLSink) Write(ctx context.Context, e *Event) error {
	if s == nil || s.queue == nil {
		return errNotOpened
	}
	r, err := toRow(e, s.d)
	if err != nil {
		return err
	}
	return s.enqueue(ctx, item{r: r})
}

// Keep implements [Keeper]: e is converted at once, as by Write (so Keep
// returns every error Write returns), and only the hash of args, when
// e.ArgsSHA256 is empty, is put off to the background writer.
func (s *SQLSink) Keep(ctx context.Context, e *Event, args json.RawMessage) error {
	if s == nil || s.queue == nil {
		return errNotOpened
	}
	r, err := toRow(e, s.d)
	if err != nil {
		return err
	}
	it := item{r: r}
	if r.argsHash == "" && len(args) > 0 {
		it.args = args
	}
	return s.enqueue(ctx, it)
}

func (s *SQLSink) enqueue(ctx context.Context, it item) error {
	return s.send(ctx, s.queue, it)
}

// send sends it on ch, one of the writer's channels, unless the sink is
// closed or ctx ends first.
func (s *SQLSink) send(ctx context.Context, ch chan item, it item) error {
	if s.closing.Load() {
		// Close has begun: it may wait on s.mu for the calls under way
		// (up to closeStall, on a silent server), and a call taking
		// s.mu.RLock now would wait with it, whatever its ctx says.
		return ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case ch <- it:
		return nil
	default:
	}
	select {
	case ch <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WriteDurable returns once e is committed (or the insert failed, or ctx
// ended, or [SQLSink.Close] gave up on the database). Events queued by
// Write before it may still be uncommitted then: e goes ahead of them. On
// PostgreSQL it inserts e in its own statement, once more when the server
// answered with an error of the moment (its connection ended by the
// server, a deadlock), which leaves e uncommitted.
// On SQLite, where one connection writes at a time, the background writer
// puts e in its next batch, ahead of the queued events, and commits it
// with them: a concurrent insert would wait for the write lock, which the
// busy writer of a flood of events may take again before the busy
// handler's next try; concurrent WriteDurable calls share one commit.
// When the database cannot take rows for the moment (its disk full, its
// write lock held past the busy timeout), WriteDurable returns the error
// once the writer's first attempts have failed, rather than wait for as
// long as that lasts: the writer goes on retrying e with the queued events,
// so e may still be recorded. A WriteDurable called on SQLite while the
// writer is already retrying returns that error too, and its event is not
// recorded.
func (s *SQLSink) WriteDurable(ctx context.Context, e *Event) error {
	if s == nil || s.queue == nil {
		return errNotOpened
	}
	r, err := toRow(e, s.d)
	if err != nil {
		return err
	}
	if s.durable != nil {
		done := make(chan error, 1)
		if err := s.send(ctx, s.durable, item{r: r, durable: done}); err != nil {
			return err
		}
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Ended by Close too, should the server stop answering (see watch).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	// Held until the row is in: Close, which takes s.mu, waits for the
	// inserts under way before it closes the statements they use. A call
	// made once Close has begun is refused at once (see send).
	if s.closing.Load() {
		return ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	st, err := s.stmt(ctx, 1)
	if err != nil {
		return err
	}
	var arr [nColumns + 1]any
	args := r.appendArgs(arr[:0], s.d)
	_, err = st.ExecContext(ctx, args...)
	var answered interface{ SQLState() string }
	if err != nil && errors.As(err, &answered) && s.transient(err) && ctx.Err() == nil {
		// The server answered the INSERT with an error of the moment (a
		// connection it had ended, 57P01, a deadlock): the row is not in,
		// and another connection of the pool may take it. Once only: a
		// connection error without an answer may hide a commit.
		_, err = st.ExecContext(ctx, args...)
	}
	if err != nil {
		return fmt.Errorf("audit: sql insert: %w", err)
	}
	s.rows.Add(1)
	return nil
}

// Flush returns once every event queued before the call is committed, or
// with the error of the last batch that lost events since the previous Flush
// returned (such a batch may have been committed before the call), or ctx's
// error.
func (s *SQLSink) Flush(ctx context.Context) error {
	if s == nil || s.queue == nil {
		return errNotOpened
	}
	ch := make(chan error, 1)
	if err := s.enqueue(ctx, item{flushed: ch}); err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting events, waits for the WriteDurable calls under way
// (and the Write calls waiting for room in a full queue, which then queue
// their events), commits every queued event and returns. If the database
// keeps failing, Close gives up after a few attempts; once 5 seconds pass
// in which no row was committed or refused, it ends the calls to the
// database under way (the writer's, and WriteDurable's on PostgreSQL): a
// server that stops answering without closing its connections (stopped,
// or behind a network that drops its packets) would hold them for good.
// The events of those calls and those still queued are then counted lost,
// though the server may yet commit a transaction whose COMMIT it was sent
// (a slow server, as well as a silent one). Close then no longer waits
// for the closing of the sink's prepared statements either, which goes on
// in the background: pgx waits up to 5 s for the server's answer on each
// idle connection of the pool. On SQLite a call waiting for a lock that
// another connection holds (another process writing to the database, a
// backup) is not ended: SQLite's busy handler heeds no interrupt, so Close
// waits for it up to the busy timeout (10 s with [OpenSQLite]). It
// returns an error when events were lost ([SQLStats].Lost: given up at
// Close, or refused by the database earlier), counting them. It does not
// close the *sql.DB.
func (s *SQLSink) Close() error {
	if s == nil || s.queue == nil {
		return errNotOpened
	}
	// Tell the writer first: a Write or Flush blocked on a full queue
	// holds s.mu.RLock until the writer takes a row, which it would not
	// while it retried a row the database cannot take.
	s.closing.Store(true)
	s.watchOnce.Do(func() { go s.watch() })
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	<-s.done
	if s.ckptDone != nil {
		close(s.ckpt.wake)
		<-s.ckptDone
	}
	// Closing a statement deallocates it on each idle connection of the
	// pool that prepared it, and pgx waits up to 5 s for each answer: a
	// server that stopped answering would hold Close 5 s per connection.
	// Close waits for it as for the writer (see watch), the rest goes on
	// in the background.
	stmtsClosed := make(chan struct{})
	go func() {
		defer close(stmtsClosed)
		s.stmtSem <- struct{}{}
		defer func() { <-s.stmtSem }()
		for _, st := range s.stmts {
			st.Close()
		}
	}()
	select {
	case <-stmtsClosed:
	case <-s.stop.Done():
	}
	s.cancel() // ends watch
	if n := s.lost.Load(); n > 0 {
		return fmt.Errorf("audit: sql sink closed with %d events not recorded: %w", n, s.loadErr())
	}
	return nil
}

// closeStall is how long Close waits for the database to settle a row
// (commit it, or refuse it) before it ends the calls under way.
const closeStall = 5 * time.Second

// watch, started by Close, cancels s.stop when a period of closeStall
// passes with no row settled, until Close cancels it itself (once the
// writer is done and the statements are closed).
func (s *SQLSink) watch() {
	t := time.NewTicker(closeStall)
	defer t.Stop()
	settled := func() uint64 { return s.rows.Load() + s.lost.Load() }
	last := settled()
	for {
		select {
		case <-s.stop.Done():
			return
		case <-t.C:
		}
		if n := settled(); n != last {
			last = n
			continue
		}
		s.cancel()
		return
	}
}

func (s *SQLSink) loadErr() error {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Stats returns counters of the sink's activity.
func (s *SQLSink) Stats() SQLStats {
	if s == nil {
		return SQLStats{}
	}
	return SQLStats{Rows: s.rows.Load(), Batches: s.batches.Load(), Lost: s.lost.Load()}
}

// writer is the background goroutine: it takes what is queued, up to
// BatchSize rows, and commits it in one transaction. On SQLite it takes
// at most sqliteRound rows at a time: the native writer inserts them and,
// while the transaction stays open, takes the next ones (see grow).
func (s *SQLSink) writer() {
	defer close(s.done)
	b := writerBatch{rows: make([]row, 0, s.round)}
	args := make([]any, 0, s.perStmt*(nColumns+1)) // database/sql path only
	closing := false
	// grow, called by the native SQLite writer between two rounds of
	// inserts into its open transaction, adds the rows queued meanwhile
	// to b and reports whether it added any (they must then be inserted
	// too). It adds none, so that the transaction commits, once a
	// WriteDurable or a Flush waits for it, the queue was empty, the sink
	// is closing or the transaction holds BatchSize rows.
	grow := func() bool {
		if closing || len(b.waiters) > 0 || len(b.markers) > 0 || len(b.rows) >= s.batch {
			return false
		}
		n := len(b.rows)
		closing = !s.gather(&b, min(n+s.round, s.batch))
		return len(b.rows) > n
	}
	if s.d != SQLite {
		grow = nil
	}
	for {
		var it item
		ok := true
		select {
		case it, ok = <-s.queue:
		case it = <-s.durable: // nil (never ready) on PostgreSQL
		}
		closing = !ok
		if ok {
			b.collect(it)
			closing = !s.gather(&b, s.round)
		}
		s.commitBatch(&b, args, closing, true, grow)
		if closing {
			// Drain what remains after close (Close has waited for
			// every WriteDurable to be taken).
			for it := range s.queue {
				b.collect(it)
				if len(b.rows) == s.batch {
					s.commitBatch(&b, args, true, false, nil)
				}
			}
			s.commitBatch(&b, args, true, true, nil)
			return
		}
	}
}

// gather adds to b what is queued, WriteDurable rows first, without
// waiting, until b holds limit rows or nothing is queued. It returns false
// if the queue is closed.
func (s *SQLSink) gather(b *writerBatch, limit int) bool {
	for len(b.rows) < limit {
		// Two receives that do not wait, rather than one select of both:
		// cheaper, and WriteDurable rows first.
		select {
		case it := <-s.durable:
			b.collect(it)
			continue
		default:
		}
		select {
		case it, ok := <-s.queue:
			if !ok {
				return false
			}
			b.collect(it)
		default:
			return true
		}
	}
	return true
}

// writerBatch is what the writer gathered: rows, the WriteDurable calls
// waiting for some of them, and Flush markers.
type writerBatch struct {
	rows    []row
	waiters []waiter
	markers []chan error
	// failed is the error of the last batch that lost events since the
	// last Flush marker was answered: the next marker reports it, even
	// when the batch it arrives with (possibly none) commits.
	failed error
}

// waiter is a WriteDurable waiting for rows[i].
type waiter struct {
	i  int
	ch chan error
}

func (b *writerBatch) collect(it item) {
	switch {
	case it.flushed != nil:
		b.markers = append(b.markers, it.flushed)
	case it.durable != nil:
		b.waiters = append(b.waiters, waiter{i: len(b.rows), ch: it.durable})
		b.rows = append(b.rows, it.r)
	default:
		if it.args != nil {
			it.r.argsHash = ArgsSHA256(it.args)
		}
		b.rows = append(b.rows, it.r)
	}
}

// commitBatch commits b's rows (and, with grow, those grow adds to b
// meanwhile), answers the WriteDurable calls waiting for them and, when
// answer, the Flush markers, and empties b.
func (s *SQLSink) commitBatch(b *writerBatch, args []any, closing, answer bool, grow func() bool) {
	if len(b.rows) > 0 {
		// While the database cannot take rows for the moment (a full disk,
		// a lock held past the busy timeout), commit retries them for as
		// long as that lasts; a WriteDurable waiting for a row not yet
		// committed is told at the first such failure instead.
		// The rows before i are settled by then (committed, or lost):
		// their waiters are answered too, rather than wait for the rows
		// after them, which may take as long as the database cannot.
		stalled := func(i int, err error, lost []lostRow) {
			kept := b.waiters[:0]
			for _, w := range b.waiters {
				if w.i < i {
					var werr error
					for _, l := range lost {
						if l.i == w.i {
							werr = l.err
						}
					}
					w.ch <- werr
					continue
				}
				w.ch <- fmt.Errorf("audit: sql insert: %w", err)
			}
			clear(b.waiters[len(kept):])
			b.waiters = kept
		}
		lost, err := s.commit(&b.rows, args, closing, grow, stalled)
		if moved := s.fileMoved(); moved != nil {
			// Committed, or not, to a file no one can open: all lost.
			n := uint64(len(b.rows) - len(lost))
			s.rows.Add(-n)
			s.lost.Add(n)
			lost = lost[:0]
			for i := range b.rows {
				lost = append(lost, lostRow{i: i, err: moved})
			}
			err = moved
			if s.movedTold {
				s.lastErr.Store(&moved)
			} else {
				s.movedTold = true // OnError once, not for every batch
				s.fail(moved)
			}
		}
		if err != nil {
			b.failed = err
		}
		for _, w := range b.waiters {
			var werr error
			for _, l := range lost {
				if l.i == w.i {
					werr = l.err
				}
			}
			w.ch <- werr
		}
	}
	// Drop the rows' strings, and once a flood is over (a transaction
	// of one round at most) the memory its transactions grew to.
	n := len(b.rows)
	clear(b.rows)
	clear(b.waiters)
	b.rows, b.waiters = b.rows[:0], b.waiters[:0]
	if n <= s.round && cap(b.rows) > 4*s.round {
		b.rows = make([]row, 0, s.round)
	}
	if answer && len(b.markers) > 0 {
		for _, m := range b.markers {
			m <- b.failed
		}
		b.failed, b.markers = nil, b.markers[:0]
	}
}

// lostRow is a row the database refused (or, when closing, could not be
// reached for).
type lostRow struct {
	i   int
	err error
}

// commit inserts *rows in one transaction, retrying with backoff on
// failure. grow (nil: none) may add rows to *rows during the first
// attempt, to be committed in the same transaction (see writer); the
// retries insert every row gathered. After three failed attempts it
// inserts each round of rows (see writer) in a transaction of its own and,
// when that fails too, inserts that round's rows one by one: a row that
// fails while the database answers a ping is refused by the database itself
// (it would block the queue forever) and is counted lost and reported,
// unless its error is of the moment (see transient) or, on PostgreSQL, no
// answer of the server (see answered); rows
// are retried while the database is unreachable, except once the sink is
// closing (closing, or Close called meanwhile), when commit gives up on a
// row after three attempts and counts it lost. Then, if the server did not
// answer, it counts the rest of *rows lost too; if it answered (an error of
// the moment, or a row it will never take: a trigger that raises 53200
// for it), the next row gets one attempt, and the rest are given up only
// if that fails too. The
// first time a row fails while the database is unreachable, before that
// row is retried, commit calls stalled (when not nil) with the row's index,
// its error and the rows lost so far: the rows before that index are
// settled (committed, or lost), those from it on are not committed yet.
func (s *SQLSink) commit(pr *[]row, args []any, closing bool, grow func() bool, stalled func(i int, err error, lost []lostRow)) (lost []lostRow, last error) {
	backoff := 10 * time.Millisecond
	var err error
	unsure := false // a commit failed without saying whether it happened
	var xact pgXact // PostgreSQL: that transaction (see committed)
	for attempt := 1; ; attempt++ {
		err = nil
		if unsure {
			// Insert again only if the rows are not there: a retry of a
			// commit that happened would record them twice.
			var done bool
			if done, err = s.committed(*pr, xact); err == nil && done {
				s.rows.Add(uint64(len(*pr)))
				s.batches.Add(1)
				return nil, nil
			}
		}
		if err == nil {
			unsure = false
			xact, err = s.insertBatch(pr, args, grow)
			grow = nil
			if err == nil {
				s.rows.Add(uint64(len(*pr)))
				s.batches.Add(1)
				return nil, nil
			}
			unsure = errors.Is(err, errCommitUnknown)
		}
		err = fmt.Errorf("audit: sql batch of %d events (attempt %d): %w", len(*pr), attempt, err)
		s.fail(err)
		if attempt >= 3 || s.stop.Err() != nil {
			break
		}
		time.Sleep(backoff)
		backoff *= 2
	}
	rows := *pr
	if unsure {
		// The last attempt committed the whole batch or none of it: look
		// for it as the attempts do (its first and last rows), not for its
		// first row alone, which may repeat an earlier record.
		done, cerr := s.committed(rows, xact)
		if cerr == nil && done {
			s.rows.Add(uint64(len(rows)))
			s.batches.Add(1)
			return nil, nil
		}
		unsure = cerr != nil // not found: the rows are not there
	}
	unreachable := false // while closing, the database was not reachable for a row, or failed two in a row: give up the rest
	probe := false       // while closing, a row was given up though the server answered: the next gets one attempt
	own := false         // unsure is of a row's own insert, not of the batch
	batchIn := false     // a row was found committed by the batch's transaction
	for i := 0; i < len(rows); i++ {
		if own {
			// Of the previous row's insert: this row is not in it, nor
			// in the batch, found not committed before that insert.
			unsure, own = false, false
		}
		if unreachable {
			last = fmt.Errorf("audit: sql event %s not recorded: the sink closed while the database was unreachable or kept failing: %w", rows[i].corr, err)
			lost = append(lost, lostRow{i: i, err: last})
			s.lost.Add(1)
			continue
		}
		if !unsure && i%s.round == 0 && len(rows) > s.round {
			// A transaction grown past one round: first each round in a
			// transaction of its own, so that a refused row costs one
			// round inserted row by row, not the whole transaction.
			chunk := rows[i:min(i+s.round, len(rows))]
			if _, err := s.insertBatch(&chunk, args, nil); err == nil {
				s.rows.Add(uint64(len(chunk)))
				s.batches.Add(1)
				i += len(chunk) - 1
				continue
			}
		}
		for attempt := 1; ; attempt++ {
			one := rows[i : i+1]
			var err error
			if unsure {
				// The batch, or this row's last insert, may have been
				// committed: the row is there or not (a batch commits
				// whole), and is inserted only if not.
				var done bool
				if done, err = s.committed(rows[i:i+1], xact); err == nil && done {
					s.rows.Add(1)
					if own || !batchIn {
						// Its own transaction, or the batch's, counted
						// once for all the rows found of it.
						s.batches.Add(1)
					}
					batchIn = batchIn || !own
					probe = false
					break
				}
			}
			if err == nil {
				unsure, own = false, true
				xact, err = s.insertBatch(&one, args, nil)
				if err == nil {
					s.rows.Add(1)
					s.batches.Add(1)
					probe = false
					break
				}
				unsure = errors.Is(err, errCommitUnknown)
			}
			// A failure of the moment is retried as if the database were
			// unreachable: only a row the database refuses is dropped.
			reachable := s.answered(err) && !s.transient(err) && !errors.Is(err, errCommitUnknown) && s.db.PingContext(s.stop) == nil
			if reachable || ((closing || s.closing.Load()) && (attempt >= 3 || probe || s.stop.Err() != nil)) {
				last = fmt.Errorf("audit: sql event %s not recorded: %w", rows[i].corr, err)
				lost = append(lost, lostRow{i: i, err: last})
				s.lost.Add(1)
				s.fail(last)
				if !reachable {
					// One row the server keeps answering with an error
					// of the moment (a trigger that raises 53200 for it)
					// costs it alone; the rest go if the next fails too.
					answered := s.answered(err) && !errors.Is(err, errCommitUnknown)
					unreachable = probe || !answered
					probe = answered
				}
				break
			}
			s.fail(fmt.Errorf("audit: sql event %s (attempt %d): %w", rows[i].corr, attempt, err))
			if stalled != nil {
				stalled(i, err, lost)
				stalled = nil
			}
			s.pause(backoff, err)
			backoff = min(2*backoff, time.Second)
		}
	}
	return lost, last
}

// pause waits d before the writer retries a row that failed with err. On
// SQLite it answers meanwhile every WriteDurable that hands the writer a
// row with err: its row is not recorded. Otherwise such a call would wait
// for as long as the database cannot take rows, for ever with a context
// that does not end (the guard's write-ahead intent), where the calls
// whose rows the writer holds are told at once (see commit's stalled).
func (s *SQLSink) pause(d time.Duration, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case it := <-s.durable: // nil (never ready) on PostgreSQL
			it.durable <- fmt.Errorf("audit: sql insert: event %s not recorded, the database cannot take rows: %w", it.r.corr, err)
		}
	}
}

// transient reports whether err is a failure of the moment rather than the
// database refusing the row: a lock another connection holds past the busy
// timeout, a full disk or an I/O error, a transaction the database rolled
// back to break a deadlock or a serialization conflict, a statement or lock
// timeout, a lost connection.
func (s *SQLSink) transient(err error) bool { return transientErr(s.d, err) }

// transientErr is [SQLSink.transient] for dialect d.
func transientErr(d Dialect, err error) bool {
	switch d {
	case SQLite:
		// modernc.org/sqlite's *Error and the native writer's nativeError.
		var coded interface{ Code() int }
		if errors.As(err, &coded) {
			switch coded.Code() & 0xff { // the primary result code
			case 5, 6, 7, 8, 10, 13: // BUSY, LOCKED, NOMEM, READONLY (a read-only mount, remounted), IOERR, FULL
				return true
			}
		}
	case Postgres:
		// pgx's *pgconn.PgError.
		var coded interface{ SQLState() string }
		if errors.As(err, &coded) {
			switch st := coded.SQLState(); {
			case strings.HasPrefix(st, "08"), // connection exception
				strings.HasPrefix(st, "40"), // transaction rollback: serialization failure, deadlock
				strings.HasPrefix(st, "53"), // insufficient resources: disk full, out of memory, too many connections
				strings.HasPrefix(st, "57"), // operator intervention: statement timeout, shutdown
				st == "55P03",               // lock not available
				st == "25006":               // read-only transaction: a hot standby, a demoted primary, maintenance
				return true
			}
		}
	}
	return false
}

// answered reports whether err can be the database refusing a row. On
// PostgreSQL only an error the server answered can (it carries an
// SQLSTATE): one without (the connection lost before the answer, or never
// made: end of file, "conn closed", a connect timeout under load) says
// nothing of the row, which the server may never have seen, even when a
// ping on another connection gets through. (Such an error is retried for
// as long as it lasts: the one row that would meet it every time, one of
// more text than a message to the server carries, is refused by Write;
// see maxPostgresRowText.) On SQLite every error is the database's own.
func (s *SQLSink) answered(err error) bool {
	if s.d != Postgres {
		return true
	}
	var coded interface{ SQLState() string }
	return errors.As(err, &coded)
}

func (s *SQLSink) fail(err error) {
	s.lastErr.Store(&err)
	s.onError(err)
}

// insertBatch inserts *rows in one transaction. The native SQLite writer
// also inserts the rows grow (when not nil) adds to *rows meanwhile; the
// database/sql path does not call grow. On PostgreSQL it returns the
// transaction's id and its backend, with which committed settles a commit
// that failed without an answer.
func (s *SQLSink) insertBatch(pr *[]row, args []any, grow func() bool) (x pgXact, err error) {
	ctx := s.stop
	if s.d == SQLite && !s.noNative.Load() {
		err := s.insertNative(ctx, pr, grow)
		if !errors.Is(err, errNoNative) {
			return x, err
		}
		s.noNative.Store(true) // another driver: use database/sql from now on
	}
	rows := *pr
	// The statements first, by log2 of their rows: preparing one takes a
	// connection of db's pool, whose only one (db.SetMaxOpenConns(1)) the
	// transaction would hold: the writer would wait for itself.
	var stmts [11]*sql.Stmt // perStmt is at most 1024 rows
	for left := len(rows); left > 0; {
		n := s.stmtRows(left)
		st, err := s.stmt(ctx, n)
		if err != nil {
			return x, err
		}
		stmts[bits.Len(uint(n))-1] = st
		left -= n
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return x, err
	}
	defer tx.Rollback()
	if s.d == Postgres {
		if err := tx.QueryRowContext(ctx, `SELECT txid_current(), pg_backend_pid()`).Scan(&x.id, &x.pid); err != nil {
			return pgXact{}, err
		}
	}
	for len(rows) > 0 {
		n := s.stmtRows(len(rows))
		st := stmts[bits.Len(uint(n))-1]
		args = args[:0]
		for i := range rows[:n] {
			args = rows[i].appendArgs(args, s.d)
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return x, err
		}
		rows = rows[n:]
	}
	if err := tx.Commit(); err != nil {
		// The connection may have failed after the database committed,
		// or before the server committed (or even got the COMMIT):
		// commit checks before it inserts the rows again.
		return x, fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	return x, nil
}

// stmtRows returns the rows of the next INSERT of insertBatch when left
// rows remain: chunks of power-of-two sizes keep the set of prepared
// statements small.
func (s *SQLSink) stmtRows(left int) int {
	n := 1
	for n*2 <= left && n*2 <= s.perStmt {
		n *= 2
	}
	return n
}

// errCommitUnknown is the error of a COMMIT that failed: it may have
// happened (the connection broke after the database committed).
var errCommitUnknown = errors.New("audit: commit failed, maybe after it happened")

// committed reports whether the rows of a batch whose commit failed are
// in audit_log: whether the commit happened (a batch commits whole).
//
// On PostgreSQL, with the batch's transaction (x, not zero), it first asks
// the server for the transaction's status (txid_status): a COMMIT whose
// connection broke may still be under way (a slow WAL flush, a synchronous
// standby, a deferred trigger), or still on its way to the server, or its
// backend may be waiting, idle in transaction, for a COMMIT it will never
// get on a connection it does not know is lost; rows not there yet would
// pass for rows not there, and the batch would be inserted again and then
// committed twice. While the transaction is in progress, committed ends its
// backend (pg_terminate_backend: the sink's role may end its own backends),
// which settles it: committed if the backend was committing, rolled back
// otherwise; it waits up to a second for that, then returns an error (the
// caller asks again later). Once the transaction is over, it looks for the
// rows as on SQLite, unless the transaction aborted: after a crash of the
// server, the id of a transaction that wrote nothing to disk is handed out
// again, and its status is then another transaction's (one that committed,
// or is in progress in another backend, which committed does not end); the
// rows of a transaction that committed are there. When the server no
// longer knows the transaction (too old) or the status cannot be had, it
// looks for the rows too.
//
// Otherwise it looks for the first row and the last, each by its
// correlation id, time and phase and by the columns that tell apart the
// records of one call or request (a gateway's records of a batch request
// share the first three when its clock did not move between them):
// finding an earlier record that shares a few columns with a row of the
// batch must not pass for finding the batch. Only a batch whose first and
// last rows both repeat records already in the table, to the last of those
// columns, is taken for committed when it is not.
func (s *SQLSink) committed(rows []row, x pgXact) (bool, error) {
	if s.d == Postgres && x.id != 0 {
		if done, known, err := s.xactCommitted(x); known || err != nil {
			return done, err
		}
	}
	q := `SELECT 1 FROM audit_log WHERE correlation_id = ? AND time_ns = ? AND phase = ? AND tool = ? AND code = ? AND detail = ? AND args_sha256 = ? AND subject = ? AND request_id = ? LIMIT 1`
	if s.d == Postgres {
		n := strconv.Itoa(indexPrefix)
		q = `SELECT 1 FROM audit_log WHERE left(correlation_id, ` + n + `) = left($1, ` + n + `) AND correlation_id = $1 AND time_ns = $2 AND phase = $3 AND tool = $4 AND code = $5 AND detail = $6 AND args_sha256 = $7 AND subject = $8 AND request_id = $9 LIMIT 1`
	}
	find := func(r *row) (bool, error) {
		var one int
		err := s.db.QueryRowContext(s.stop, q, r.corr, r.timeNS, r.phase, r.tool, r.code, r.detail, r.argsHash, r.subject, r.reqID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("audit: checking whether a failed commit happened: %w", err)
		}
		return true, nil
	}
	found, err := find(&rows[0])
	if err != nil || !found || len(rows) == 1 {
		return found, err
	}
	return find(&rows[len(rows)-1])
}

// pgXact is a PostgreSQL transaction of the writer: its id, epoch-extended
// (txid_current), and the process id of its backend (pg_backend_pid).
type pgXact struct {
	id  int64
	pid int64
}

// xactCommitted reports whether the PostgreSQL transaction x did not
// commit (known, and done false) or is over and may have (known false: see
// committed). The error of a transaction still in progress carries no
// SQLSTATE: it is no refusal of the rows.
func (s *SQLSink) xactCommitted(x pgXact) (done, known bool, err error) {
	// backend_xid holds the 32 bits of the epoch-extended id.
	xid32 := strconv.FormatUint(uint64(x.id)&0xffffffff, 10)
	wait := 10 * time.Millisecond
	missed := false // x's backend did not hold the id while it was in progress
	for waited := time.Duration(0); ; waited += wait {
		var status sql.NullString
		if err := s.db.QueryRowContext(s.stop, `SELECT txid_status($1)`, x.id).Scan(&status); err != nil {
			if s.answered(err) && !s.transient(err) {
				return false, false, nil // no txid_status: look for the rows
			}
			return false, false, fmt.Errorf("audit: checking whether a failed commit happened: %w", err)
		}
		switch status.String {
		case "aborted":
			return false, true, nil
		case "in progress":
		default: // committed (maybe another transaction given the id again), or NULL: too old to tell
			return false, false, nil
		}
		if missed {
			// In progress still, after x's backend was seen without it:
			// the id is another transaction's, x ended without committing.
			return false, true, nil
		}
		if waited >= time.Second {
			return false, false, fmt.Errorf("audit: checking whether a failed commit happened: transaction %d still in progress", x.id)
		}
		var ended int
		err := s.db.QueryRowContext(s.stop, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = $1 AND backend_xid = $2::text::xid`, x.pid, xid32).Scan(&ended)
		if err != nil {
			// Its backend may end by itself: ask again.
			s.onError(fmt.Errorf("audit: ending the backend of transaction %d, whose commit failed: %v", x.id, err))
		} else if ended == 0 {
			missed = true // x just ended, or the id is another's: ask again at once
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stop.Done():
			t.Stop()
			return false, false, fmt.Errorf("audit: checking whether a failed commit happened: %w", s.stop.Err())
		}
	}
}

// stmt returns the prepared INSERT of n rows, preparing it (with ctx) the
// first time. Its lookup waits for no prepare under way.
func (s *SQLSink) stmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if err := acquire(ctx, s.stmtSem); err != nil {
		return nil, fmt.Errorf("audit: prepare insert: %w", err)
	}
	st, ok := s.stmts[n]
	<-s.stmtSem
	if ok {
		return st, nil
	}
	// Prepared without stmtSem: a prepare waits for a connection of the
	// pool and for the server's answer, and one that hangs (its
	// connection stalled) must not hold the statements prepared already,
	// which every WriteDurable looks up. Two calls may prepare the same
	// statement: the first kept is used, the other closed.
	st, err := s.db.PrepareContext(ctx, insertSQL(s.d, n))
	if err != nil {
		return nil, fmt.Errorf("audit: prepare insert: %w", err)
	}
	s.stmtSem <- struct{}{} // held only for the map now
	kept, ok := s.stmts[n]
	if !ok {
		s.stmts[n], kept = st, st
	}
	<-s.stmtSem
	if kept != st {
		st.Close()
	}
	return kept, nil
}

func insertSQL(d Dialect, n int) string {
	var b strings.Builder
	if d == SQLite && n > 1 {
		// OR FAIL instead of the default ABORT: on SQLite, an INSERT of
		// several rows into a table with NOT NULL columns that may abort
		// must keep a statement journal (a copy of each page it changes,
		// to undo a half-done statement). Multi-row INSERTs run only in
		// the writer's transactions, which a failed INSERT rolls back
		// whole.
		b.WriteString("INSERT OR FAIL")
	} else {
		b.WriteString("INSERT")
	}
	names, nCols := insertColumns(d)
	b.WriteString(" INTO audit_log (" + names + ") VALUES ")
	p := 1
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j := range nCols {
			if j > 0 {
				b.WriteByte(',')
			}
			if d == Postgres {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(p))
			} else {
				b.WriteByte('?')
			}
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

// Query returns the committed events that match f, oldest first (by time,
// then insertion order), their Args read as [ReadJSONL] reads them. Their
// times are in UTC: the instant is stored, not the location (a JSONL record
// keeps the offset it was written with). Call Flush first to include
// queued events. The events are read into memory all at once: bound a
// query of a large table with f.Limit or a time range (page through it with
// [Filter.Next]). A negative f.Offset is an error.
func (s *SQLSink) Query(ctx context.Context, f Filter) ([]Event, error) {
	if s == nil || s.queue == nil {
		return nil, errNotOpened
	}
	return queryEvents(ctx, s.db, s.d, f, columns) // NewSQL upgraded the table
}

// QuerySQL runs a [Filter] over the audit_log table of db, as [SQLSink.Query]
// does, without a sink. It changes nothing in db: a table of an earlier
// schema version, which no sink of this version has upgraded yet, is read
// as it is, its events' RequestID "" (before version 4) and ParentID ""
// (before version 6).
func QuerySQL(ctx context.Context, db *sql.DB, d Dialect, f Filter) ([]Event, error) {
	if db == nil {
		return nil, errors.New("audit: nil *sql.DB")
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	cols := columns
	var v int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM audit_schema_version`).Scan(&v); err == nil && v >= 1 {
		switch {
		case v < 4:
			cols = columnsBeforeV4
		case v < 6:
			cols = columnsBeforeV6
		}
	}
	return queryEvents(ctx, db, d, f, cols)
}

// queryEvents runs the query of f, selecting cols (columns, or what stands
// for them in an older table).
func queryEvents(ctx context.Context, db *sql.DB, d Dialect, f Filter, cols string) ([]Event, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	q, args := querySQLCols(d, f, cols)
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	defer rs.Close()
	return scanEvents(rs)
}

// querySQL returns the SELECT of QuerySQL for f and its arguments.
func querySQL(d Dialect, f Filter) (string, []any) { return querySQLCols(d, f, columns) }

// querySQLCols is querySQL selecting cols.
func querySQLCols(d Dialect, f Filter, cols string) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		ph := "?"
		if d == Postgres {
			ph = "$" + strconv.Itoa(len(args))
		}
		where = append(where, strings.ReplaceAll(cond, "?", ph))
	}
	// indexed is the condition col = ? on a column PostgreSQL indexes by
	// its first indexPrefix characters (see schemaV3): the prefix selects
	// through the index, the whole value decides.
	indexed := func(col string) string {
		if d != Postgres {
			return col + " = ?"
		}
		n := strconv.Itoa(indexPrefix)
		return "left(" + col + ", " + n + ") = left(?, " + n + ") AND " + col + " = ?"
	}
	// broad is the condition on session_id, subject or tool. With a
	// correlation, request or parent id, which select a handful of rows, SQLite
	// (which keeps no statistics of the table) would search the index of
	// the session, subject or tool instead, to spare the sort of the rows
	// found, and read every row of that session, subject or tool: a column
	// behind a unary + is no index's.
	byID := f.CorrelationID != "" || f.RequestID != "" && cols != columnsBeforeV4 || f.ParentID != "" && cols == columns
	broad := func(col string) string {
		if d == SQLite && byID {
			return "+" + col + " = ?"
		}
		return indexed(col)
	}
	if f.SessionID != "" {
		add(broad("session_id"), text(f.SessionID))
	}
	if f.Subject != "" {
		add(broad("subject"), text(f.Subject))
	}
	if f.Tool != "" {
		add(broad("tool"), text(f.Tool))
	}
	if f.CorrelationID != "" {
		add(indexed("correlation_id"), text(f.CorrelationID))
	}
	if f.RequestID != "" {
		if cols != columnsBeforeV4 {
			// request_id <> '' lets the planner use the partial index
			// of schema version 5, which only rows with a request id are in.
			add("request_id <> '' AND "+indexed("request_id"), text(f.RequestID))
		} else {
			// A table before schema version 4 has no request ids.
			where = append(where, "1 = 0")
		}
	}
	if f.ParentID != "" {
		if cols == columns {
			// As for request_id: the partial index of schema version 6.
			add("parent_id <> '' AND "+indexed("parent_id"), text(f.ParentID))
		} else {
			// A table before schema version 6 has no parent ids.
			where = append(where, "1 = 0")
		}
	}
	if f.Phase != "" {
		add("phase = ?", text(string(f.Phase)))
	}
	if f.Code != "" {
		add("code = ?", text(f.Code))
	}
	if f.Allowed != nil {
		add("allowed = ?", *f.Allowed)
	}
	if !f.Since.IsZero() {
		add("time_ns >= ?", clampNS(f.Since))
	}
	if !f.Until.IsZero() {
		add("time_ns < ?", clampNS(f.Until))
	}
	q := "SELECT " + cols + " FROM audit_log"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY time_ns, id"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	} else if f.Offset > 0 && d == SQLite {
		q += " LIMIT -1" // SQLite takes an OFFSET only after a LIMIT
	}
	if f.Offset > 0 {
		q += " OFFSET " + strconv.Itoa(f.Offset)
	}
	return q, args
}

// scanEvents reads the events of rs, a query of querySQL.
func scanEvents(rs *sql.Rows) (out []Event, err error) {
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.timeNS, &r.corr, &r.session, &r.subject, &r.roles, &r.tool,
			&r.cls, &r.phase, &r.allowed, &r.dryRun, &r.code, &r.detail, &r.latency,
			&r.argsHash, &r.cost, &r.proto, &r.cli, &r.args, &r.reqID, &r.parentID); err != nil {
			return out, fmt.Errorf("audit: query: %w", err)
		}
		e := Event{
			Time: time.Unix(0, r.timeNS).UTC(), CorrelationID: r.corr, SessionID: r.session,
			Subject: r.subject, Tool: r.tool, Class: r.cls, Phase: Phase(r.phase),
			Allowed: r.allowed, DryRun: r.dryRun, Code: r.code, Detail: r.detail,
			LatencyMS: r.latency, ArgsSHA256: r.argsHash, Cost: r.cost,
			ProtocolVersion: r.proto, ClientName: r.cli, RequestID: r.reqID,
			ParentID: r.parentID,
		}
		if r.roles != "" {
			if err := json.Unmarshal([]byte(r.roles), &e.Roles); err != nil {
				return out, fmt.Errorf("audit: query: roles of %s: %w", r.corr, err)
			}
		}
		if r.args.Valid {
			// As the JSONL reader does: numbers a float64 does not hold as
			// written (a client can send 1e400, an id past 2^53) stay
			// json.Number instead of failing the query or reading back as
			// another number.
			dec := json.NewDecoder(strings.NewReader(r.args.String))
			dec.UseNumber()
			if err := dec.Decode(&e.Args); err != nil {
				return out, fmt.Errorf("audit: query: args of %s: %w", r.corr, err)
			}
			for k, v := range e.Args {
				e.Args[k] = plainNumbers(v)
			}
		}
		out = append(out, e)
	}
	if err := rs.Err(); err != nil {
		return out, fmt.Errorf("audit: query: %w", err)
	}
	return out, nil
}

// clampNS returns the Unix nanoseconds of t, a [Filter] bound, clamped to
// the range an int64 holds. The bounds are instants: a time in any
// location compares as in UTC.
func clampNS(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
