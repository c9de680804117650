package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The SQLite batch writer below bypasses database/sql and the driver's
// argument binding, which matches each parameter to its argument by a linear
// scan (quadratic in the parameters of a statement) and copies every string
// into a C allocation of its own. Inside (*sql.Conn).Raw, which gives it the
// exclusive use of one pooled connection, it calls the SQLite C API of
// modernc.org/sqlite/lib on that connection's own handle, so everything the
// user configured on the connection (pragmas, busy timeout, hooks) applies.
// It binds by index, copies the strings of a statement into one C buffer
// bound without a further copy (SQLITE_STATIC), and inserts
// sqliteNativeRowsPerStmt rows per statement: one statement keeps its
// B-tree cursors positioned from row to row (the next key of each index
// usually goes right after the last one), where single-row statements seek
// from the root of the table and of every index for each row.
//
// The handle is read from the unexported fields db and tls of the driver's
// connection type: sqliteNative checks their names and types and reports
// false when they are not there (another driver, another version of
// modernc.org/sqlite); the sink then writes through database/sql.
// TestSQLiteNativePath fails when that happens with the pinned version.

// sqliteNativeRowsPerStmt is the most rows of one INSERT of the native path;
// smaller remainders use power-of-two sizes.
const sqliteNativeRowsPerStmt = 32

// errNoNative reports that a driver connection is not one the native path
// can use; nothing was written.
var errNoNative = errors.New("audit: not a modernc.org/sqlite connection")

// sqliteNative returns the sqlite3* handle and the libc TLS of a
// modernc.org/sqlite driver connection (zero for a closed one), or ok ==
// false when dc is not one.
func sqliteNative(dc any) (db uintptr, tls *libc.TLS, ok bool) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, nil, false
	}
	v = v.Elem()
	t := v.Type()
	if v.Kind() != reflect.Struct || t.PkgPath() != "modernc.org/sqlite" || t.Name() != "conn" {
		return 0, nil, false
	}
	fdb, ok1 := t.FieldByName("db")
	ftls, ok2 := t.FieldByName("tls")
	if !ok1 || !ok2 || fdb.Type != reflect.TypeFor[uintptr]() || ftls.Type != reflect.TypeFor[*libc.TLS]() {
		return 0, nil, false
	}
	db = uintptr(v.FieldByIndex(fdb.Index).Uint())
	tls = (*libc.TLS)(v.FieldByIndex(ftls.Index).UnsafePointer())
	return db, tls, true
}

// insertNative inserts *rows in one transaction through the native path,
// with the rows grow (when not nil) adds to *rows meanwhile (see
// nativeConn.insert). It returns errNoNative, having written nothing and
// not called grow, when the database's connections are not
// modernc.org/sqlite's.
func (s *SQLSink) insertNative(ctx context.Context, rows *[]row, grow func() bool) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		db, tls, ok := sqliteNative(dc)
		switch {
		case !ok:
			return errNoNative
		case db == 0 || tls == nil:
			return driver.ErrBadConn // closed: database/sql discards it
		}
		return nativeConn{db: db, tls: tls}.insert(rows, grow, &s.ckpt)
	})
}

// sqliteCkptSyncEvery is how many autocheckpoint intervals of WAL frames
// the batch writer lets the background checkpointer handle before it runs
// one checkpoint itself, between two transactions (see walCheckpointer).
const sqliteCkptSyncEvery = 8

// walCheckpointer moves the WAL checkpoints of the native batch writer off
// its write path. SQLite's automatic checkpoint (after a commit leaves
// wal_autocheckpoint frames or more in the WAL, default 1000) runs inside
// the COMMIT of the connection that wrote: it copies the WAL's pages into
// the database file and syncs both, while the writer holds its queue. The
// native writer turns its connection's automatic checkpoint off for the
// length of a batch (and restores the connection's setting after) and,
// each time its commits have written that many frames, wakes a goroutine
// that runs a PASSIVE checkpoint on another connection of the pool,
// concurrently with the next batches: the same work and the same syncs as
// the automatic checkpoint, on another core.
//
// A concurrent checkpoint cannot let the WAL start over (SQLite rewinds the
// WAL when a write transaction begins after a checkpoint copied all of it),
// so after sqliteCkptSyncEvery intervals of frames the writer runs one
// PASSIVE checkpoint itself before its next BEGIN, which then rewinds the
// WAL: the WAL stays below about sqliteCkptSyncEvery+1 intervals (plus one
// batch) when no reader holds an old snapshot, instead of about one. A
// connection whose wal_autocheckpoint is 0 or negative (turned off by the
// user) is left alone: no checkpoint at all.
type walCheckpointer struct {
	mu      sync.Mutex    // one checkpoint of ours at a time
	wake    chan struct{} // capacity 1: a checkpoint is wanted
	pending atomic.Int64  // frames written since the last wake
	unsync  atomic.Int64  // frames written since the writer's last checkpoint
	runs    atomic.Uint64 // checkpoints run in the background
}

// run is the background goroutine: one PASSIVE checkpoint per wake-up, on
// a pooled connection of db, until wake is closed.
func (w *walCheckpointer) run(db interface {
	Conn(context.Context) (*sql.Conn, error)
}, onError func(error)) {
	for range w.wake {
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			onError(fmt.Errorf("audit: sqlite checkpoint: %w", err))
			continue
		}
		// The connection first, then the mutex: the writer takes the mutex
		// while it holds its connection, so waiting for a connection with
		// the mutex held could deadlock a pool of one connection.
		err = conn.Raw(func(dc any) error {
			h, tls, ok := sqliteNative(dc)
			if !ok || h == 0 || tls == nil {
				return nil
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			_, err := nativeConn{db: h, tls: tls}.checkpoint()
			return err
		})
		conn.Close()
		if err != nil {
			onError(fmt.Errorf("audit: sqlite checkpoint: %w", err))
			continue
		}
		w.runs.Add(1)
	}
}

// wrote records frames written to the WAL by a connection whose automatic
// checkpoint (every interval frames) was off, and wakes the background
// checkpointer after each interval.
func (w *walCheckpointer) wrote(frames, interval int64) {
	w.unsync.Add(frames)
	if w.pending.Add(frames) < interval {
		return
	}
	w.pending.Store(0)
	select {
	case w.wake <- struct{}{}:
	default: // one is running or wanted already
	}
}

// nativeConn is the handle of one driver connection, used inside Raw only.
type nativeConn struct {
	db  uintptr
	tls *libc.TLS
}

func (c nativeConn) err(op string, rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	return &nativeError{msg: fmt.Sprintf("sqlite %s: %s (code %d)", op, msg, rc), code: int(rc)}
}

// nativeError is an error of the native writer. Code returns SQLite's
// result code, as modernc.org/sqlite's *Error does.
type nativeError struct {
	msg  string
	code int
}

func (e *nativeError) Error() string { return e.msg }
func (e *nativeError) Code() int     { return e.code }

// exec runs a statement without parameters or results.
func (c nativeConn) exec(q string) error {
	p, err := libc.CString(q)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, p)
	if rc := sqlite3.Xsqlite3_exec(c.tls, c.db, p, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return c.err(q, rc)
	}
	return nil
}

func (c nativeConn) prepare(q string) (uintptr, error) {
	p, err := libc.CString(q)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(c.tls, p)
	pp := libc.Xcalloc(c.tls, 1, libc.Tsize_t(unsafe.Sizeof(uintptr(0))))
	if pp == 0 {
		return 0, errors.New("sqlite prepare: out of memory")
	}
	defer libc.Xfree(c.tls, pp)
	if rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, p, -1, pp, 0); rc != sqlite3.SQLITE_OK {
		return 0, c.err("prepare", rc)
	}
	return *(*uintptr)(cmem(pp)), nil
}

// queryInt returns the first column of the first row of q, an integer.
func (c nativeConn) queryInt(q string) (int64, error) {
	st, err := c.prepare(q)
	if err != nil {
		return 0, err
	}
	defer sqlite3.Xsqlite3_finalize(c.tls, st)
	if rc := sqlite3.Xsqlite3_step(c.tls, st); rc != sqlite3.SQLITE_ROW {
		return 0, c.err(q, rc)
	}
	return sqlite3.Xsqlite3_column_int64(c.tls, st, 0), nil
}

// checkpoint runs a PASSIVE checkpoint of every database of the connection
// and reports whether it copied the whole WAL (also true outside WAL mode).
func (c nativeConn) checkpoint() (complete bool, err error) {
	p := c.tls.Alloc(8)
	defer c.tls.Free(8)
	pLog, pCkpt := p, p+4
	*(*int32)(cmem(pLog)), *(*int32)(cmem(pCkpt)) = -1, -1
	if rc := sqlite3.Xsqlite3_wal_checkpoint_v2(c.tls, c.db, 0, sqlite3.SQLITE_CHECKPOINT_PASSIVE, pLog, pCkpt); rc != sqlite3.SQLITE_OK {
		if rc == sqlite3.SQLITE_BUSY {
			return false, nil // another connection is checkpointing
		}
		return false, c.err("checkpoint", rc)
	}
	return *(*int32)(cmem(pLog)) == *(*int32)(cmem(pCkpt)), nil
}

// framesWritten returns the pages the connection wrote (to the WAL, in WAL
// mode) since the last call.
func (c nativeConn) framesWritten() int64 {
	p := c.tls.Alloc(8)
	defer c.tls.Free(8)
	if sqlite3.Xsqlite3_db_status(c.tls, c.db, sqlite3.SQLITE_DBSTATUS_CACHE_WRITE, p, p+4, 1) != sqlite3.SQLITE_OK {
		return 0
	}
	return int64(*(*int32)(cmem(p)))
}

// sqliteTxFloor is the bytes of rows below which insert does not read the
// size of the page cache (two queries, which would double the cost of a
// transaction of one row): a transaction smaller than that never stops
// growing for the cache (SQLite's default cache is 2 MiB).
const sqliteTxFloor = 1 << 20

// sqliteRowCacheBytes is what insert counts for a row in the page cache
// besides its text: its numbers, record headers and the entries of the
// indexes, in pages partly filled.
const sqliteRowCacheBytes = 256

// insert inserts *rows in one IMMEDIATE transaction, rolled back on error,
// leaving the checkpoints to w (see walCheckpointer). After inserting the
// rows it has, it calls grow (when not nil), which may add rows to *rows,
// and inserts those in the same transaction, until grow adds none or the
// rows inserted would take about half of the connection's page cache, and
// at least sqliteTxFloor (a transaction whose changed pages overflow the
// cache writes them to the WAL before it commits, and again when it
// changes them again).
func (c nativeConn) insert(rows *[]row, grow func() bool, w *walCheckpointer) (err error) {
	if sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0 {
		// A transaction left open on a pooled connection: not ours to end.
		return driver.ErrBadConn
	}
	// Hold the connection's (recursive) mutex for the whole batch: every
	// API call below takes it again, and taking a mutex this goroutine
	// already holds is cheaper.
	mu := sqlite3.Xsqlite3_db_mutex(c.tls, c.db)
	if mu != 0 {
		sqlite3.Xsqlite3_mutex_enter(c.tls, mu)
		defer sqlite3.Xsqlite3_mutex_leave(c.tls, mu)
	}
	interval, err := c.queryInt("PRAGMA wal_autocheckpoint")
	if err != nil {
		return err
	}
	if interval > 0 && interval <= math.MaxInt32 {
		sqlite3.Xsqlite3_wal_autocheckpoint(c.tls, c.db, 0)
		defer sqlite3.Xsqlite3_wal_autocheckpoint(c.tls, c.db, int32(interval))
		c.framesWritten() // start counting here
		if w.unsync.Load() >= sqliteCkptSyncEvery*interval {
			w.mu.Lock()
			complete, err := c.checkpoint()
			w.mu.Unlock()
			if err != nil {
				return err
			}
			if complete {
				w.unsync.Store(0)
			}
		}
		defer func() {
			if err == nil {
				w.wrote(c.framesWritten(), interval)
			}
		}()
	}
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	var buf cbuf
	var stmts [8]uintptr // by log2 of the rows of the statement
	defer func() {
		for _, st := range stmts {
			if st != 0 {
				sqlite3.Xsqlite3_finalize(c.tls, st)
			}
		}
		buf.free(c.tls)
		if err != nil && sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0 {
			c.exec("ROLLBACK")
		}
	}()
	var used int64      // bytes of the rows inserted, as counted against budget
	budget := int64(-1) // half the page cache, read once used passes sqliteTxFloor
	for done := 0; ; {
		rs := (*rows)[done:]
		done = len(*rows)
		for len(rs) > 0 {
			k := 0
			for 1<<(k+1) <= min(len(rs), sqliteNativeRowsPerStmt) {
				k++
			}
			n := 1 << k
			if stmts[k] == 0 {
				if stmts[k], err = c.prepare(insertSQL(SQLite, n)); err != nil {
					return err
				}
			}
			if err := c.insertRows(stmts[k], &buf, rs[:n]); err != nil {
				return err
			}
			for i := range rs[:n] {
				used += int64(rs[i].textLen() + sqliteRowCacheBytes)
			}
			rs = rs[n:]
		}
		if grow == nil {
			break
		}
		if used >= sqliteTxFloor {
			if budget < 0 {
				if budget, err = c.cacheBytes(); err != nil {
					return err
				}
				budget /= 2
			}
			if used >= budget {
				break
			}
		}
		if !grow() {
			break
		}
	}
	return c.exec("COMMIT")
}

// cacheBytes returns the size of the connection's page cache in bytes.
func (c nativeConn) cacheBytes() (int64, error) {
	n, err := c.queryInt("PRAGMA cache_size")
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return -n * 1024, nil // KiB
	}
	ps, err := c.queryInt("PRAGMA page_size")
	if err != nil {
		return 0, err
	}
	return n * ps, nil
}

// insertRows binds rows to the INSERT st of len(rows) rows and steps it.
func (c nativeConn) insertRows(st uintptr, buf *cbuf, rows []row) error {
	n := 0
	for i := range rows {
		n += rows[i].textLen()
	}
	if n > math.MaxInt32 {
		return errors.New("sqlite insert: rows too large")
	}
	if err := buf.reserve(c.tls, n); err != nil {
		return err
	}
	b := binder{c: c, st: st, buf: buf}
	for i := range rows {
		r := &rows[i]
		b.int64(r.timeNS)
		b.text(r.corr)
		b.text(r.session)
		b.text(r.subject)
		b.text(r.roles)
		b.text(r.tool)
		b.text(r.cls)
		b.text(r.phase)
		b.bool(r.allowed)
		b.bool(r.dryRun)
		b.text(r.code)
		b.text(r.detail)
		b.float64(r.latency)
		b.text(r.argsHash)
		b.float64(r.cost)
		b.text(r.proto)
		b.text(r.cli)
		if r.args.Valid {
			b.text(r.args.String)
		} else {
			b.null()
		}
		b.text(r.reqID)
		b.text(r.parentID)
		b.text(unsafe.String(&r.timeText[0], len(r.timeText)))
	}
	if b.rc != sqlite3.SQLITE_OK {
		sqlite3.Xsqlite3_clear_bindings(c.tls, st)
		return c.err("bind", b.rc)
	}
	rc := sqlite3.Xsqlite3_step(c.tls, st)
	sqlite3.Xsqlite3_reset(c.tls, st)
	if rc != sqlite3.SQLITE_DONE {
		return c.err("insert", rc)
	}
	return nil
}

// textLen is the bytes of the text columns of r.
func (r *row) textLen() int {
	return len(r.corr) + len(r.session) + len(r.subject) + len(r.roles) + len(r.tool) +
		len(r.cls) + len(r.phase) + len(r.code) + len(r.detail) + len(r.argsHash) +
		len(r.proto) + len(r.cli) + len(r.args.String) + len(r.reqID) + len(r.parentID) + len(r.timeText)
}

// binder binds successive parameters of a statement; the first error
// sticks in rc and makes the later calls no-ops.
type binder struct {
	c   nativeConn
	st  uintptr
	buf *cbuf
	off int   // bytes of buf used
	i   int32 // parameters bound
	rc  int32
}

func (b *binder) text(s string) {
	b.i++
	if b.rc != sqlite3.SQLITE_OK {
		return
	}
	p := b.buf.p + uintptr(b.off)
	copy(unsafe.Slice((*byte)(cmem(p)), len(s)), s)
	b.off += len(s)
	// SQLITE_STATIC (a nil destructor): buf outlives the statement's step.
	b.rc = sqlite3.Xsqlite3_bind_text(b.c.tls, b.st, b.i, p, int32(len(s)), 0)
}

func (b *binder) int64(v int64) {
	b.i++
	if b.rc == sqlite3.SQLITE_OK {
		b.rc = sqlite3.Xsqlite3_bind_int64(b.c.tls, b.st, b.i, v)
	}
}

func (b *binder) bool(v bool) {
	var i int64
	if v {
		i = 1
	}
	b.int64(i)
}

func (b *binder) float64(v float64) {
	b.i++
	if b.rc == sqlite3.SQLITE_OK {
		b.rc = sqlite3.Xsqlite3_bind_double(b.c.tls, b.st, b.i, v)
	}
}

func (b *binder) null() {
	b.i++
	if b.rc == sqlite3.SQLITE_OK {
		b.rc = sqlite3.Xsqlite3_bind_null(b.c.tls, b.st, b.i)
	}
}

// cmem converts the address of memory from the C allocator of
// modernc.org/libc (outside the Go heap: never moved or collected) to a
// pointer.
func cmem(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cbuf is a C buffer reused for the strings of successive statements. A
// buffer it outgrows is kept until free: the bindings of a statement that
// already ran may still point into it.
type cbuf struct {
	p   uintptr
	n   int
	old []uintptr
}

// reserve makes b.p hold at least n bytes (and never be a null pointer: a
// null text pointer binds NULL).
func (b *cbuf) reserve(tls *libc.TLS, n int) error {
	if n <= b.n && b.p != 0 {
		return nil
	}
	if b.p != 0 {
		b.old = append(b.old, b.p)
	}
	size := max(n, 16<<10)
	b.p = libc.Xmalloc(tls, libc.Tsize_t(size))
	if b.p == 0 {
		return fmt.Errorf("sqlite insert: cannot allocate %d bytes", size)
	}
	b.n = size
	return nil
}

func (b *cbuf) free(tls *libc.TLS) {
	for _, p := range append(b.old, b.p) {
		if p != 0 {
			libc.Xfree(tls, p)
		}
	}
	*b = cbuf{}
}
