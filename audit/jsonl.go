package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// JSONLOptions configures a [JSONLSink]. A nil *JSONLOptions means defaults.
type JSONLOptions struct {
	// Durable makes every Write durable: the line is written and fsynced
	// before Write returns, and concurrent writers share one fsync (group
	// commit). Zero: buffered; Write returns once the line is in memory, and
	// the buffer reaches the file on FlushInterval, when BufferSize is
	// reached, and on Flush, WriteDurable, Sync and Close. A process that
	// ends without Close (killed, or a panic nothing recovers) loses the
	// lines still buffered: those written since the last flush, about
	// BufferSize bytes at most, and, with a positive FlushInterval, less
	// than FlushInterval ago. A line written to what cannot be fsynced (a
	// pipe, a terminal) counts as durable once written.
	Durable bool
	// FlushInterval is how often a buffered sink writes its buffer to the file
	// (without fsync). Zero: 100ms. Negative: never in the background.
	FlushInterval time.Duration
	// BufferSize is the number of buffered bytes at which a Write first
	// writes the buffer to the file. It bounds the buffer too: a Write or
	// Keep that finds BufferSize bytes buffered already (the file is
	// slower than its writers, or a write to it hangs) waits for the
	// buffer to be written before it adds its event, until its ctx ends;
	// it then returns ctx's error, and the event is not recorded (as a
	// [SQLSink]'s Write that finds its queue full). Zero: 64 KiB.
	BufferSize int
	// Perm is the mode of a newly created file. Zero: 0600.
	Perm os.FileMode
}

// JSONLStats counts what a [JSONLSink] has done since it was opened.
type JSONLStats struct {
	Events uint64 // events accepted
	Writes uint64 // write system calls to the file
	Syncs  uint64 // fsyncs of the file
}

// JSONLSink appends events to a file, one JSON object per line, encoded by
// [Event.AppendJSON], except that a NUL byte in one of the event's own text
// fields (not in Roles or Args) is recorded as U+FFFD, as a [SQLSink]
// stores it (PostgreSQL refuses NUL in text): the same event reads back
// the same from every sink. A line reaches the file in one write call, so lines of
// concurrent writers never interleave; a crash can leave at most a torn last
// line, which [ReadJSONL] reports as an error and never as an event. When
// reopened, a file whose last line is torn gets a newline so that the torn
// line stays separate from new records. (A line cut just before its
// newline holds a whole record: once the reopened sink has ended it, it
// reads back as one, though its writer may have been told it failed.)
//
// Several sinks, of one process or of several, may append to one file.
// Before each write to a regular file the sink ends a torn last line that
// another left (killed, or out of disk space, in the middle of a write), so
// that its own lines never continue it; should another tear a line between
// that check and the write, the sink writes its first line again, after
// the others of that write.
//
// After a failed write to the file the sink refuses further writes (the
// file's tail is unknown) and returns that error. On Unix, once its file
// has no name left (removed, or replaced by a file renamed over the path)
// the sink moves to the file at the path, creating it as [OpenJSONL] does,
// and writes there the lines it had just written to the nameless file
// before it acknowledges them, rather than let records vanish with a file
// nobody can open; if it cannot (the directory is gone), that is a failed
// write.
//
// A buffered sink's [JSONLSink.Keep] holds the event itself and encodes it
// later, in a batch with others: on the background flusher (woken when 64
// events wait), on every flush, and on the caller when 512 wait. Kept
// events count towards BufferSize at their estimated length, so Keep writes
// the buffer through, and reports a failed write, when Write would.
//
// JSONLSink implements [Sink], [DurableWriter] and [Keeper] and is safe for
// concurrent use. The zero JSONLSink, or a nil one, is not usable (its
// methods return an error wrapping [ErrClosed]): open one with [OpenJSONL].
type JSONLSink struct {
	f       *os.File // replaced by Reopen, under ioSem
	regular bool     // f is a regular file (see writeLines); under ioSem
	tail    [1]byte  // writeLines' scratch; under ioSem
	// endF and end: the file this sink last wrote to and its size then,
	// its last byte a newline, so that while the size is the same no
	// other writer has touched its end (writeLines); under ioSem.
	endF     *os.File
	end      int64
	path     string
	perm     os.FileMode
	durable  bool
	bufSize  int
	ioSem    chan struct{}
	stop     chan struct{}
	flusherD chan struct{}
	wake     chan struct{} // asks the flusher to encode the kept events

	mu       sync.Mutex // guards the fields below; taken after ioSem
	buf      []byte
	spare    []byte
	kept     []kept // events taken by Keep, not yet encoded into buf
	keptSize int    // their estimated encoded size
	scratch  []byte // room for a kept event's argument hash
	appended uint64 // sequence number of the last event in buf, kept or in the file
	synced   uint64 // sequence number of the last event on stable storage
	written  uint64 // sequence number of the last event written to the file
	err      error  // sticky write error
	closed   bool

	events, writes, syncs atomic.Uint64
}

// OpenJSONL opens (creating if needed) the file at path for appending and
// returns a sink writing to it. Close the sink to flush and release the file.
// A relative path is taken from the working directory now: Reopen, and the
// move to a new file when this one is removed, use the same absolute path
// whatever the working directory is then. An empty path is an error.
func OpenJSONL(path string, opts *JSONLOptions) (*JSONLSink, error) {
	var o JSONLOptions
	if opts != nil {
		o = *opts
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 64 << 10
	}
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	if path == "" {
		return nil, errors.New("audit: the JSONL path is empty")
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, err := openJSONLFile(path, o.Perm)
	if err != nil {
		return nil, err
	}
	s := &JSONLSink{
		f:       f,
		regular: isRegular(f),
		path:    path,
		perm:    o.Perm,
		durable: o.Durable,
		bufSize: o.BufferSize,
		ioSem:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		buf:     make([]byte, 0, o.BufferSize+1024),
		spare:   make([]byte, 0, o.BufferSize+1024),
		wake:    make(chan struct{}, 1),
	}
	if !o.Durable && o.FlushInterval > 0 {
		s.flusherD = make(chan struct{})
		go s.flusher(o.FlushInterval)
	}
	return s, nil
}

// openJSONLFile opens (creating if needed) the file at path for appending,
// ends a torn last line and, for a new file, makes its directory entry
// durable.
func openJSONLFile(path string, perm os.FileMode) (*os.File, error) {
	created := false
	var f *os.File
	var err error
	// A file renamed away between the two opens (a rotator renaming again)
	// fails the second with ENOENT: create it then, up to 100 times. A
	// rotator renaming in a loop wins both races now and then: with 8
	// tries, one open in 80,556 lost all eight under the rename storm of
	// TestReview28OpenJSONLFileRenameRace. Only a path that stays a
	// dangling symbolic link uses all 100.
	for range 100 {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			created = true
			break
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, perm); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err) // *os.PathError names path
	}
	if err := terminateTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if created {
		// Make the new directory entry itself durable.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("audit: open %s: %w", path, err)
		}
	}
	return f, nil
}

// terminateTornTail appends a newline when the file is non-empty and does not
// end with one (a torn line left by a crash).
func terminateTornTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], st.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return err
	}
	return f.Sync()
}

// syncFile fsyncs f, a file of the sink; regular says whether it is a
// regular file. A pipe, a socket or a terminal cannot be fsynced (EINVAL)
// and holds nothing a crash of this host could lose: a line written to
// it is as durable as it gets, and its fsync no failure.
func syncFile(f *os.File, regular bool) error {
	err := f.Sync()
	if err != nil && !regular && errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// isRegular reports whether f is a regular file (not a pipe, a terminal,
// a device).
func isRegular(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// writeLines appends b, whole lines, to f (the sink's file, or the one
// Reopen moves to) in one write call and returns how much of b it wrote;
// ioSem is held. Another process may append to the same file (two servers
// sharing a trail) and be cut short in the middle of a line: killed, or
// out of disk space or of its file size limit. Lines appended after its
// torn line would continue it, and read back as one corrupt line with it.
// So when f is a regular file writeLines first ends a torn last line, as
// [OpenJSONL] does, and then checks where b landed (see appendChecked).
func (s *JSONLSink) writeLines(f *os.File, regular bool, b []byte) (int, error) {
	if !regular {
		s.writes.Add(1)
		return f.Write(b)
	}
	before, err := s.endTornLine(f)
	if err != nil {
		s.endF = nil
		return 0, err
	}
	n, err := s.appendChecked(f, b, before)
	if err != nil {
		s.endF = nil
	}
	return n, err
}

// appendChecked appends b, whole lines, to the regular file f and returns
// how much of b it wrote: len(b) or, when it fails, less. Should another
// process have torn a line just before b (after writeLines checked the
// end of the file), b's first line continued it: appendChecked writes
// that line again, after b, where it reads back (after the lines that
// followed it in b). ioSem is held.
func (s *JSONLSink) appendChecked(f *os.File, b []byte, before int64) (int, error) {
	n, glued, err := s.appendLines(f, b, before)
	first := b[:bytes.IndexByte(b, '\n')+1]
	for try := 0; glued && err == nil; try++ {
		if try == 3 {
			return 0, errors.New("another writer of the file tore a line before each write of this one")
		}
		if before, err = s.endTornLine(f); err == nil {
			_, glued, err = s.appendLines(f, first, before)
		}
	}
	if err != nil && n == len(b) {
		n = 0 // the first line is not readable; the others are, but say none is
	}
	return n, err
}

// appendLines appends b to the regular file f in one write call and
// reports how much of b it wrote (none when a write cut short may have
// continued a torn line: its first line is not readable), and whether
// the byte before b is not a newline: b's first line then continues
// another writer's torn line.
// before is where endTornLine found f ending with a newline (or empty),
// or -1: a write that starts there needs no look at the byte before it.
// ioSem is held.
func (s *JSONLSink) appendLines(f *os.File, b []byte, before int64) (n int, glued bool, err error) {
	s.writes.Add(1)
	if n, err = f.Write(b); err != nil {
		if n > 0 && !s.startsLine(f, int64(n), before) {
			n = 0 // b's first line continued a torn line: not readable
		}
		return n, false, err
	}
	// With O_APPEND, the write left the file offset at the end of b.
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return n, false, err
	}
	start := end - int64(len(b))
	if start <= 0 || start == before {
		s.endF, s.end = f, end
		return n, false, nil
	}
	if _, err := f.ReadAt(s.tail[:], start-1); err != nil {
		if err == io.EOF {
			err = nil // truncated since (copytruncate): b went with the rest
		}
		return n, false, err
	}
	if s.tail[0] != '\n' {
		return n, true, nil
	}
	s.endF, s.end = f, end
	return n, false, nil
}

// startsLine reports whether the write of n bytes that just ended at f's
// offset (a write cut short) started a line: at the start of the file, at
// before, or after a newline. When it cannot tell, it says no (the caller
// then counts none of the write's lines as in the file). ioSem is held.
func (s *JSONLSink) startsLine(f *os.File, n, before int64) bool {
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false
	}
	start := end - n
	if start <= 0 || start == before {
		return true
	}
	_, err = f.ReadAt(s.tail[:], start-1)
	return err == nil && s.tail[0] == '\n'
}

// endTornLine appends a newline to the regular file f unless it is empty
// or ends with one, and returns the size at which it found f ending with
// a newline (or empty), or -1 when it does not know (it ended the line
// itself, or the file shrank meanwhile); ioSem is held. A file whose size
// is the one this sink's last write left (endF, end) is taken as it left
// it, ending with a newline: one fstat, instead of a seek and a read.
func (s *JSONLSink) endTornLine(f *os.File) (int64, error) {
	if f == s.endF {
		if st, err := f.Stat(); err == nil && st.Size() == s.end {
			return s.end, nil
		}
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || end == 0 {
		return end, err
	}
	if _, err := f.ReadAt(s.tail[:], end-1); err != nil {
		if err == io.EOF {
			err = nil // truncated since (copytruncate): nothing to end
		}
		return -1, err
	}
	if s.tail[0] == '\n' {
		return end, nil
	}
	return -1, s.endLine(f)
}

// endLine appends a newline to f; ioSem is held.
func (s *JSONLSink) endLine(f *os.File) error {
	s.writes.Add(1)
	s.tail[0] = '\n'
	_, err := f.Write(s.tail[:])
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *JSONLSink) flusher(every time.Duration) {
	defer close(s.flusherD)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
			// Encode what Keep handed over, off the callers' path.
			_ = s.encodeKeptFlushFull(context.Background()) // a failure is sticky

		case <-t.C:
			s.mu.Lock()
			empty := len(s.buf) == 0 && len(s.kept) == 0
			s.mu.Unlock()
			if !empty {
				_ = s.flush(context.Background(), false, 0) // a failure is sticky; the next Write reports it
			}
		}
	}
}

// Write records e. In durable mode it returns once e is on stable storage;
// otherwise once e is buffered (see [JSONLOptions]). It returns
// [ErrInvalidEvent] for an event without correlation id, phase or time or
// that cannot be encoded, [ErrClosed] after
// Close, and the sink's sticky error after a failed file write. It returns
// ctx's error, e not recorded, when ctx ends while it waits for a full
// buffer to be written (see [JSONLOptions].BufferSize). In durable mode it
// also returns ctx's error when ctx ends before e is durable (the file is
// busy, or its write or fsync hangs): e is then on its way to the file,
// and may still be recorded, as with [JSONLSink.WriteDurable].
func (s *JSONLSink) Write(ctx context.Context, e *Event) error {
	if s == nil {
		return errNotOpened
	}
	return s.write(ctx, e, s.durable)
}

// WriteDurable records e and returns once e and every event written before it
// are written to the file and fsynced, sharing the fsync with concurrent
// durable writers. It returns an error if ctx ends first, in which case e may
// or may not become durable.
func (s *JSONLSink) WriteDurable(ctx context.Context, e *Event) error {
	return s.write(ctx, e, true)
}

func (s *JSONLSink) write(ctx context.Context, e *Event, durable bool) error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	if err := e.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	seq, full, err := s.append(e)
	for err == errBufferFull {
		// The buffer holds BufferSize bytes: wait for the file, or for
		// ctx, before adding to it. A ctx that ends first leaves e out,
		// and says so: the buffer, and what a crash loses, stays bounded
		// however long a write to the file takes.
		if err = s.flush(ctx, false, 0); err != nil {
			return err
		}
		seq, full, err = s.append(e)
	}
	if err != nil {
		return err
	}
	s.events.Add(1)
	if durable {
		return s.flush(ctx, true, seq)
	}
	if full {
		// The event is buffered: a flush that ctx cut short is left to the
		// next one, and must not read as a failed write (a caller that
		// retried would record the event twice).
		if err := s.flush(ctx, false, 0); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// append encodes e as a line at the end of the buffer and returns its
// sequence number and whether the buffer is now full. It encodes straight
// into the buffer, under the lock: no scratch buffer to fetch and copy
// from, which is most of what a single write touches. A panic while
// encoding (a MarshalJSON of a value in e.Args) leaves the buffer as it
// was and the lock released.
func (s *JSONLSink) append(e *Event) (seq uint64, full bool, err error) {
	s.mu.Lock()
	if s.unusable() == nil {
		s.encodeKept() // they came first
	}
	n := len(s.buf)
	done := false
	defer func() {
		if !done {
			s.buf = s.buf[:n]
		}
		s.mu.Unlock()
	}()
	if err := s.unusable(); err != nil {
		return 0, false, err
	}
	if len(s.buf) >= s.bufSize {
		return 0, false, errBufferFull
	}
	if hasNUL(e) {
		c := *e
		c.nulToReplacement()
		e = &c
	}
	line, err := e.AppendJSON(s.buf)
	if err != nil {
		return 0, false, err
	}
	if len(line)-n+1 > MaxLineSize {
		// ReadJSONL would refuse the line: refuse the event instead of
		// acknowledging a record that can never be read back.
		return 0, false, fmt.Errorf("%w: the record is longer than %d bytes", ErrInvalidEvent, MaxLineSize)
	}
	s.buf = append(line, '\n')
	done = true
	s.appended++
	return s.appended, len(s.buf) >= s.bufSize, nil
}

// Keep implements [Keeper]. A buffered sink holds e and encodes it later
// (see [JSONLSink]), unless e has Args, args are longer than 4 KiB, or e
// could fail to encode (a NaN or an infinite cost or latency, a time in
// year 0 or 9999 or with a zone offset of a day or more, strings near
// [MaxLineSize]): those are written at once, as by Write, so that every
// error Write would return is returned here. A durable sink writes e at once.
func (s *JSONLSink) Keep(ctx context.Context, e *Event, args json.RawMessage) error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	if err := e.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	size, ok := keepable(e, args)
	if s.durable || !ok {
		if e.ArgsSHA256 == "" && len(args) > 0 {
			e.ArgsSHA256 = ArgsSHA256(args)
		}
		return s.write(ctx, e, s.durable)
	}
	for {
		s.mu.Lock()
		if err := s.unusable(); err != nil {
			s.mu.Unlock()
			return err
		}
		if len(s.buf)+s.keptSize < s.bufSize {
			break // s.mu held
		}
		// Full: wait for the file, as Write does.
		s.mu.Unlock()
		if err := s.flush(ctx, false, 0); err != nil {
			return err
		}
	}
	s.kept = append(s.kept, kept{e, args})
	s.keptSize += size
	s.appended++
	n := len(s.kept)
	// Write writes the buffer through once it holds BufferSize bytes and
	// returns what that write returns; so does Keep, counting the kept
	// events at their estimated size: a failing file is reported as soon
	// as Write would report it.
	full := len(s.buf)+s.keptSize >= s.bufSize
	s.mu.Unlock()
	s.events.Add(1)
	switch {
	case full:
		if err := s.flush(ctx, false, 0); err != nil && ctx.Err() == nil {
			return err
		}
	case n >= maxKept:
		// The flusher is behind (or there is none): the caller encodes.
		if err := s.encodeKeptFlushFull(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	case n == keptWake && s.flusherD != nil:
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// errBufferFull is append's answer when the buffer holds BufferSize bytes:
// the caller waits for a flush before it adds its event.
var errBufferFull = errors.New("audit: jsonl buffer full")

// kept is an event taken over by Keep, and the arguments to hash into it.
type kept struct {
	e    *Event
	args json.RawMessage
}

// keptWake kept events wake the flusher to encode them; at maxKept the
// caller encodes them itself. Each holds its event (and what references
// it) until then.
const (
	keptWake = 64
	maxKept  = 512
)

// keepable reports whether e, with the hash of args, cannot fail to encode,
// so that Keep may put its encoding off, and estimates its line's length.
func keepable(e *Event, args json.RawMessage) (size int, ok bool) {
	if len(e.Args) > 0 || len(args) > 4<<10 {
		return 0, false
	}
	if math.IsNaN(e.LatencyMS) || math.IsInf(e.LatencyMS, 0) || math.IsNaN(e.Cost) || math.IsInf(e.Cost, 0) {
		return 0, false
	}
	// AppendJSON writes the time in its own zone (whole minutes) or in
	// UTC: a year one away from either end, and an offset under a day,
	// always fit RFC 3339.
	if y := e.Time.Year(); y < 1 || y > 9998 {
		return 0, false
	}
	if _, off := e.Time.Zone(); off <= -86400 || off >= 86400 {
		return 0, false
	}
	// At most six bytes of JSON per byte of a string (\u00XX).
	n := len(e.CorrelationID) + len(e.SessionID) + len(e.Subject) + len(e.Tool) + len(e.Class) +
		len(e.Phase) + len(e.Code) + len(e.Detail) + len(e.ArgsSHA256) + len(e.ProtocolVersion) + len(e.ClientName) + len(e.RequestID) +
		len(e.ParentID)
	for _, r := range e.Roles {
		n += len(r) + 1
	}
	if n >= (MaxLineSize-4096)/6 {
		return 0, false
	}
	// The field names, time, numbers and the hash, then the strings
	// (escapes aside).
	return 320 + n, true
}

// encodeKeptFlushFull encodes the kept events and writes the buffer once it
// is full, as Write does.
func (s *JSONLSink) encodeKeptFlushFull(ctx context.Context) error {
	s.mu.Lock()
	s.encodeKept()
	full := len(s.buf) >= s.bufSize
	s.mu.Unlock()
	if !full {
		return nil
	}
	return s.flush(ctx, false, 0)
}

// encodeKept encodes the kept events into the buffer, in the order Keep
// took them; s.mu is held. keepable made sure none can fail; should one
// fail all the same, the sink records the loss as a failed write does: it
// refuses further writes, each of which returns the error, and so does a
// flush that encoded it.
func (s *JSONLSink) encodeKept() {
	for i := range s.kept {
		k := &s.kept[i]
		ev := *k.e
		if hasNUL(&ev) {
			ev.nulToReplacement()
		}
		if ev.ArgsSHA256 == "" && len(k.args) > 0 {
			h := AppendArgsSHA256(s.scratch[:0], k.args)
			s.scratch = h[:0]
			if len(h) > 0 {
				ev.ArgsSHA256 = unsafe.String(&h[0], len(h)) // ev does not outlive h
			}
		}
		n := len(s.buf)
		line, err := ev.AppendJSON(s.buf)
		if err != nil {
			s.buf = s.buf[:n]
			if s.err == nil {
				s.err = fmt.Errorf("audit: jsonl: a kept event could not be encoded and is not in the file: %w", err)
			}
			*k = kept{}
			continue
		}
		s.buf = append(line, '\n')
		*k = kept{}
	}
	s.kept = s.kept[:0]
	s.keptSize = 0
}

// unusable returns the error that refuses a write; s.mu is held.
func (s *JSONLSink) unusable() error {
	if s.closed {
		return ErrClosed
	}
	return s.err
}

// flush writes the buffer to the file and, when sync is set, fsyncs it unless
// the event with sequence number seq is already on stable storage.
func (s *JSONLSink) flush(ctx context.Context, sync bool, seq uint64) error {
	// A busy file is waited for, or ctx.
	if err := acquire(ctx, s.ioSem); err != nil {
		return err
	}
	if ctx.Done() == nil {
		return s.flushHeld(sync, seq)
	}
	// The write and the fsync heed no context: a file that stops taking
	// writes (a pipe nobody reads, a disk that hangs) would hold the
	// caller for as long as it lasts, past a deadline it was given (the
	// guard's write-ahead bound). They run on a goroutine of their own,
	// which the caller leaves when ctx ends; the lines stay on their way
	// to the file (written once, when it takes them), and the file stays
	// taken (ioSem) until then.
	done := make(chan error, 1)
	go func() { done <- s.flushHeld(sync, seq) }()
	return await(ctx, done)
}

// flushHeld is flush once ioSem is taken; it releases it.
func (s *JSONLSink) flushHeld(sync bool, seq uint64) error {
	defer func() { <-s.ioSem }()
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		if err == ErrClosed && (!sync || s.synced >= seq) {
			// Close wrote and synced every event appended before it:
			// a writer that appended one, then lost the race to Close,
			// has its event recorded.
			err = nil
		}
		s.mu.Unlock()
		return err
	}
	if sync && s.synced >= seq {
		s.mu.Unlock()
		return nil // a concurrent writer's fsync covered this event
	}
	s.encodeKept()
	b := s.buf
	s.buf = s.spare[:0]
	target := s.appended
	s.mu.Unlock()

	var err error
	if len(b) > 0 {
		_, err = s.writeLines(s.f, s.regular, b)
	}
	if err == nil && sync {
		s.syncs.Add(1)
		err = syncFile(s.f, s.regular)
	}
	if err == nil && len(b) > 0 && s.regular && unlinked(s.f) {
		err = s.follow(b, sync)
	}
	s.mu.Lock()
	s.spare = b[:0]
	if err != nil {
		s.err = fmt.Errorf("audit: jsonl write: %w", err)
		err = s.err
	} else if s.err != nil {
		// encodeKept lost an event: the lines in b are written, but the
		// caller must hear of the loss.
		err = s.err
	} else {
		s.written = target
		if sync {
			s.synced = target
		}
	}
	s.mu.Unlock()
	return err
}

// follow moves the sink to the file its path names now, once its own file
// has no name left (removed, or replaced by a file renamed over the path),
// and writes b there too (and fsyncs it when sync): the lines just written
// would otherwise go with the nameless file when the process ends, as would
// every line after them. ioSem is held. If the path cannot be opened, or
// names what is not a regular file, it returns the error, which the sink
// keeps (see [JSONLSink]).
func (s *JSONLSink) follow(b []byte, sync bool) error {
	f, err := openJSONLFile(s.path, s.perm)
	if err != nil {
		return fmt.Errorf("the file was removed: %w", err)
	}
	ost, err1 := s.f.Stat()
	nst, err2 := f.Stat()
	switch {
	case err1 == nil && err2 == nil && os.SameFile(ost, nst):
		// The same file after all (a file system that counts no links):
		// b is in it.
		f.Close()
		return nil
	case err2 != nil || !nst.Mode().IsRegular():
		f.Close()
		return fmt.Errorf("the file was removed, and %s is not a regular file", s.path)
	}
	if _, err = s.writeLines(f, true, b); err == nil && sync {
		s.syncs.Add(1)
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("the file was removed: %s: %w", s.path, err)
	}
	s.mu.Lock()
	old := s.f
	s.f = f
	s.mu.Unlock()
	old.Close()
	return nil
}

// Flush writes buffered lines to the file (without fsync). After Close it
// returns [ErrClosed].
func (s *JSONLSink) Flush() error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return s.flush(context.Background(), false, 0)
}

// Sync writes buffered lines to the file and fsyncs it. After Close it
// returns [ErrClosed].
func (s *JSONLSink) Sync() error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	s.mu.Lock()
	seq, closed := s.appended, s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if seq == 0 {
		seq = 1 // force an fsync even when nothing was written through this sink
	}
	return s.flush(context.Background(), true, seq)
}

// Reopen moves the sink to the file its path names now, for log rotation:
// once a rotator has renamed the file (logrotate's default, with Reopen
// called from its postrotate step, typically through SIGHUP), records go on
// to a new file at the path and no longer to the renamed one, which the
// rotator may compress or delete. Reopen first writes the buffered lines
// to the old file and fsyncs it; it then opens the path as [OpenJSONL]
// does (creating the file, or appending to the one found there, its torn
// last line ended) and closes the old file. A path that still names the
// same file is simply opened again.
//
// Nothing is lost on the way: lines that did not reach the old file
// durably (its write or fsync failed) are written to the new one, from
// the start of a line cut short (the lines before it once the old file is
// fsynced), so that a line may read back from both files but never from
// neither; so are, on Unix, all the buffered lines when the old file has
// no name left (removed since the rotator renamed it). Writes that wait for their
// line to be durable are answered once it is, in either file. The one
// exception is the lines earlier flushes wrote to the old file without
// fsync, which are no longer buffered: if the old file, a regular file,
// then fails its fsync, they may be lost; the sink refuses further
// writes, as after a failed write, and Reopen returns the error.
//
// Until Reopen is called the sink writes to the renamed file (and, on
// Unix, to the file at the path once the renamed one is removed; see
// [JSONLSink]).
//
// If the path cannot be opened, or names what is not a regular file (a
// directory, a named pipe) where the sink's file is one, the sink writes
// on to the old file and Reopen returns the error; but when lines were to
// go to the new file (the old one failed them, or has no name left), the
// sink refuses further writes, as after a failed write. A sink that refuses
// writes after a failed write ([JSONLSink]) stays so: Reopen returns that
// error and does nothing (open a new sink). After Close Reopen returns
// [ErrClosed].
func (s *JSONLSink) Reopen() error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	s.ioSem <- struct{}{}
	defer func() { <-s.ioSem }()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	s.encodeKept()
	b := s.buf
	s.buf = s.spare[:0]
	target := s.appended
	// Lines earlier flushes wrote to the old file without fsync: durable
	// only once its fsync succeeds, and not in b to be written again.
	unsynced := s.written > s.synced
	s.mu.Unlock()

	// rest is what is not known to be durable in the old file.
	rest := b
	var n int
	var oldErr error
	oldSynced := false
	if len(b) > 0 {
		n, oldErr = s.writeLines(s.f, s.regular, b)
	}
	if oldErr == nil {
		s.syncs.Add(1)
		if oldErr = syncFile(s.f, s.regular); oldErr == nil {
			rest, oldSynced = nil, true
		}
	} else if cut := bytes.LastIndexByte(b[:n], '\n') + 1; cut > 0 || unsynced {
		// The lines the old file took whole stay there, once they are
		// durable: the page cache does not survive a crash.
		s.syncs.Add(1)
		if syncFile(s.f, s.regular) == nil {
			rest, oldSynced = b[cut:], true
		}
	}
	if len(b) > 0 && s.regular && unlinked(s.f) {
		// The old file has no name left (removed, or replaced by a file
		// renamed over the path): b would go with it, so b goes to the
		// new file, as a flush moves its lines (see follow).
		rest = b
		if oldErr == nil {
			oldErr = errors.New("the file was removed")
		}
	}
	if oldErr != nil {
		oldErr = fmt.Errorf("audit: jsonl write: %w", oldErr)
	}
	// An fsync of a regular old file that failed may have lost the lines
	// earlier flushes wrote to it: the sink refuses writes, as after a
	// failed write, rather than pass them for durable. (A pipe or a device
	// cannot be fsynced, and holds nothing to lose.)
	lostOld := unsynced && !oldSynced && s.regular

	f, openErr := openJSONLFile(s.path, s.perm)
	if openErr == nil {
		openErr = sameKind(s.f, f, s.path)
		if openErr != nil {
			f.Close()
			f = nil
		}
	}
	var newErr error
	newRegular := openErr == nil && isRegular(f)
	if openErr == nil && len(rest) > 0 {
		if _, newErr = s.writeLines(f, newRegular, rest); newErr == nil {
			s.syncs.Add(1)
			newErr = syncFile(f, newRegular)
		}
		if newErr != nil {
			newErr = fmt.Errorf("audit: jsonl write: %w", newErr)
		}
	}
	var old *os.File
	s.mu.Lock()
	s.spare = b[:0]
	if openErr == nil {
		old, s.f, s.regular = s.f, f, newRegular
	}
	switch {
	case lostOld:
		s.err = oldErr
	case len(rest) == 0 || (openErr == nil && newErr == nil):
		s.synced, s.written = target, target // every line is durable, in one file or the other
	case newErr != nil:
		s.err = newErr
	default:
		s.err = oldErr
	}
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if openErr == nil && newErr == nil && !lostOld {
		return nil // the old file's failure, if any, lost nothing
	}
	return errors.Join(oldErr, openErr, newErr)
}

// sameKind returns an error when the sink's file old is a regular file
// and nf, opened at path, is not (a named pipe, a device): a log rotator
// leaves a regular file at the path, or none, and a pipe there would take
// the lines to whoever reads it, or block every write with nobody reading.
func sameKind(old, nf *os.File, path string) error {
	ost, err := old.Stat()
	if err != nil || !ost.Mode().IsRegular() {
		return nil // the sink was opened on no regular file (a device): so be it
	}
	nst, err := nf.Stat()
	if err != nil {
		return fmt.Errorf("audit: reopen %s: %w", path, err)
	}
	if !nst.Mode().IsRegular() {
		return fmt.Errorf("audit: reopen %s: not a regular file (%v); the sink writes on to the file it has", path, nst.Mode().Type())
	}
	return nil
}

// Stats returns counters of the sink's activity.
func (s *JSONLSink) Stats() JSONLStats {
	if s == nil {
		return JSONLStats{}
	}
	return JSONLStats{Events: s.events.Load(), Writes: s.writes.Load(), Syncs: s.syncs.Load()}
}

// Close stops the background flusher, writes and fsyncs buffered lines and
// closes the file. Writes after Close return [ErrClosed]. Close waits for
// the file to take the lines and the fsync to end, however long that is:
// a file that stops taking writes (a pipe nobody reads, a disk that
// hangs) holds it, so that no line is given up. A caller whose shutdown
// must end in time calls it on a goroutine of its own and waits as long as
// it may (unlike [SQLSink.Close], it has no bound of its own).
func (s *JSONLSink) Close() error {
	if s == nil || s.stop == nil {
		return errNotOpened
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	if s.flusherD != nil {
		<-s.flusherD
	}
	// Flush even after closed is set: flush does not check it.
	s.mu.Lock()
	seq := s.appended + 1
	s.mu.Unlock()
	err := s.flush(context.Background(), true, seq)
	// A Flush or Sync that found the sink open and runs only now finds
	// ErrClosed rather than a closed file.
	s.ioSem <- struct{}{}
	s.mu.Lock()
	if s.err == nil {
		s.err = ErrClosed
	}
	s.mu.Unlock()
	cerr := s.f.Close()
	<-s.ioSem
	return errors.Join(err, cerr)
}

var _ io.Closer = (*JSONLSink)(nil)

// hasNUL reports whether one of e's own text fields holds a NUL byte,
// which a [SQLSink] stores as U+FFFD (see text).
func hasNUL(e *Event) bool {
	for _, f := range [...]string{e.CorrelationID, e.SessionID, e.Subject, e.Tool, e.Class,
		e.Code, e.Detail, e.ArgsSHA256, e.ProtocolVersion, e.ClientName, e.RequestID, e.ParentID} {
		if strings.IndexByte(f, 0) >= 0 {
			return true
		}
	}
	return false
}

// nulToReplacement makes e's own text fields what a [SQLSink] stores: NUL
// bytes (and invalid UTF-8, which the encoding replaces anyway) become
// U+FFFD. Roles and Args are left as they are: both sinks record them as
// JSON, where NUL is escaped.
func (e *Event) nulToReplacement() {
	for _, f := range [...]*string{&e.CorrelationID, &e.SessionID, &e.Subject, &e.Tool, &e.Class,
		&e.Code, &e.Detail, &e.ArgsSHA256, &e.ProtocolVersion, &e.ClientName, &e.RequestID, &e.ParentID} {
		*f = text(*f)
	}
}
