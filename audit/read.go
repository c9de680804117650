package audit

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxLineSize is the longest JSONL line [ReadJSONL] accepts (16 MiB).
const MaxLineSize = 16 << 20

// LineError reports a JSONL line that is not a record: torn (no final
// newline), not valid JSON, longer than [MaxLineSize], or missing the
// correlation id, phase or time every record has.
type LineError struct {
	Line int   // 1-based line number
	Err  error // what is wrong with it
}

// Error implements error.
func (e *LineError) Error() string { return fmt.Sprintf("audit: jsonl line %d: %v", e.Line, e.Err) }

// Unwrap returns e.Err.
func (e *LineError) Unwrap() error { return e.Err }

// ErrTornLine is the [LineError.Err] of a last line without its newline:
// a write cut short, never an acknowledged record; or, in a file a sink is
// writing to as it is read, a line still being written (a reader may see
// part of a write in progress). Only the last line read can be torn; a
// torn line a sink has since ended with a newline reads as a corrupt line
// (or, cut just before its newline, as the record it holds).
var ErrTornLine = errors.New("torn line (no terminating newline)")

// plainEvent has Event's fields and JSON tags but not its methods, so that
// encoding/json decodes it by reflection.
type plainEvent Event

// ReadJSONL returns an iterator over the records of a JSONL audit stream.
// Each complete, valid line yields (event, nil). A torn or corrupt line yields
// (Event{}, *LineError) and the iteration goes on with the next line unless
// the caller stops; an error reading r is yielded last. Blank lines are
// skipped. Numbers in Args read back as float64, as encoding/json decodes
// them, except where the float64 would not be the number as written (an
// integer past 2^53 such as a 17-digit id, 1e400): those are json.Number.
func ReadJSONL(r io.Reader) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		var long []byte
		line := 0
		tooLong := false
		for {
			chunk, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				if !tooLong {
					long = append(long, chunk...)
					if len(long) > MaxLineSize {
						tooLong, long = true, nil
					}
				}
				continue
			}
			if len(chunk) == 0 && len(long) == 0 && !tooLong && err != nil {
				// Nothing of a line is pending. (A long torn line whose
				// length is a whole number of buffers ends here with an
				// empty chunk: it is reported below.)
				if !errors.Is(err, io.EOF) {
					yield(Event{}, fmt.Errorf("audit: jsonl read: %w", err))
				}
				return
			}
			line++
			data := chunk
			if len(long) > 0 {
				data = append(long, chunk...)
				long = long[:0]
			}
			var ev Event
			var lerr error
			switch {
			case tooLong || len(data) > MaxLineSize:
				lerr = fmt.Errorf("line longer than %d bytes", MaxLineSize)
				tooLong = false
			case data[len(data)-1] != '\n':
				lerr = ErrTornLine
			default:
				data = bytes.TrimRight(data, "\r\n")
				if len(bytes.TrimSpace(data)) == 0 {
					if err != nil {
						return
					}
					continue
				}
				ev, lerr = decodeLine(data)
			}
			if lerr != nil {
				if !yield(Event{}, &LineError{Line: line, Err: lerr}) {
					return
				}
			} else if !yield(ev, nil) {
				return
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(Event{}, fmt.Errorf("audit: jsonl read: %w", err))
				}
				return
			}
		}
	}
}

// decodeLine decodes one record. Numbers inside Args read back as float64
// like encoding/json's, except those a float64 does not hold as written
// (see plainNumber), which stay json.Number: a number a tool recorded
// never makes its whole record unreadable, nor reads back as another.
func decodeLine(data []byte) (Event, error) {
	var p plainEvent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return Event{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Event{}, errors.New("trailing data after the record")
	}
	ev := Event(p)
	for k, v := range ev.Args {
		ev.Args[k] = plainNumbers(v)
	}
	if err := ev.validate(); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// validate checks what every record has (and that there is one: e may be
// nil).
func (e *Event) validate() error {
	switch {
	case e == nil:
		return errors.New("nil event")
	case e.CorrelationID == "":
		return errors.New("missing correlation_id")
	case e.Phase != PhaseIntent && e.Phase != PhaseOutcome:
		return fmt.Errorf("phase %q is neither intent nor outcome", e.Phase)
	case e.Time.IsZero():
		return errors.New("missing time")
	}
	return nil
}

// QueryJSONL returns the records of the JSONL file at path that match f, in
// the order of every reader (see [Filter]): by time, then in file order, also
// where the file is not in time order (concurrent writers of one file,
// records copied in). It reads the whole file on every call, keeping in
// memory the matches up to f.Offset+f.Limit (all of them without a Limit):
// to read a large file once, stream it with [ReadJSONL]. Corrupt or torn
// lines are skipped and reported together in the
// returned error (an errors.Join of *[LineError]), next to the events that
// were read: a non-nil error with events means the events are valid records
// and some lines were not. On a file a sink is appending to, the last line
// may be one still being written, reported as torn ([ErrTornLine]): a
// record in flight, which a query a moment later reads whole. A negative
// f.Offset is an error.
func QueryJSONL(path string, f Filter) ([]Event, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: query %s: %w", path, err)
	}
	defer file.Close()
	// keep is how many of the oldest matches are kept: f.Offset+f.Limit,
	// or all of them (no Limit, or a sum past what an int holds).
	keep := math.MaxInt
	if f.Limit > 0 && f.Offset <= math.MaxInt-f.Limit {
		keep = f.Offset + f.Limit
	}
	var h matchHeap
	var errs []error
	seq := 0
	for ev, err := range ReadJSONL(file) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !f.Match(&ev) {
			continue
		}
		m := match{ev: ev, seq: seq}
		seq++
		switch {
		case len(h) < keep:
			heap.Push(&h, m)
		case m.before(&h[0]):
			// Newer than every kept match but for the newest, which it
			// replaces.
			h[0] = m
			heap.Fix(&h, 0)
		}
	}
	slices.SortFunc(h, func(a, b match) int {
		if a.before(&b) {
			return -1
		}
		return 1
	})
	var out []Event
	if f.Offset < len(h) {
		out = make([]Event, 0, len(h)-f.Offset)
		for _, m := range h[f.Offset:] {
			out = append(out, m.ev)
		}
	}
	return out, errors.Join(errs...)
}

// match is a record QueryJSONL selected, seq the number of matches before it
// in the file.
type match struct {
	ev  Event
	seq int
}

// before reports whether m comes before n in the order of the readers: an
// earlier time, or the same instant earlier in the file.
func (m *match) before(n *match) bool {
	c := m.ev.Time.Compare(n.ev.Time)
	return c < 0 || c == 0 && m.seq < n.seq
}

// matchHeap is a heap of matches, the newest on top.
type matchHeap []match

func (h matchHeap) Len() int           { return len(h) }
func (h matchHeap) Less(i, j int) bool { return h[j].before(&h[i]) }
func (h matchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *matchHeap) Push(x any)        { *h = append(*h, x.(match)) }
func (h *matchHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}

// Filter selects events. Zero fields match everything: every non-zero field
// must match.
//
// Every reader ([SQLSink.Query], [QuerySQL], [QueryJSONL]) returns the
// matching events in one order: by time (the instant, whatever the
// location), then in the order they were stored (a table's insertion order,
// a JSONL file's line order). Offset and Limit take a page of that order;
// [Filter.Next] gives the filter of the next page.
type Filter struct {
	SessionID     string
	Subject       string
	Tool          string
	CorrelationID string
	// RequestID selects the records of the call a proxy in front gave
	// this id ([Event].RequestID): a gateway's correlation id finds the
	// downstream's records of the same call. SQL sinks index it (schema
	// version 5; a table a sink has not upgraded yet is read whole).
	RequestID string
	// ParentID selects the records of the calls made by the handler of
	// the call of this correlation id ([Event].ParentID): the inner calls
	// of a composite tool's call. SQL sinks index it (schema version 6; a
	// table a sink has not upgraded yet has no parent ids, and matches
	// none).
	ParentID string
	Phase    Phase
	Code     string    // the outcome code; "" matches any
	Allowed  *bool     // nil matches both
	Since    time.Time // inclusive; zero: no lower bound
	Until    time.Time // exclusive; zero: no upper bound
	// Offset skips the first Offset matching events (in the order above);
	// a negative Offset is an error. The skipped events are still read: a
	// page far into a trail is found by Since, Offset counting only the
	// events at that instant, as [Filter.Next] sets it.
	Offset int
	Limit  int // at most this many events, oldest first; 0 (or less): no limit
}

// Next returns the filter of the page after page, which a query of f
// returned: f with Since the time of page's last event and Offset the
// number of page's events at that instant (added to f.Offset when all of
// page is at f.Since). f.Offset must count events at f.Since: 0, or as Next
// set it. Next of an empty page is f.
//
// An export reads page after page until a page is shorter than Limit (a
// positive one: with no Limit no page is ever shorter, and each is empty
// after the first, which holds every match), and
// can go on later, from the filter Next returned, to read what was stored
// since. It reads once each record stored before the export got past its
// place in the order of the readers (time, then the order stored). A record
// stored later at a place the export has passed is not read: one whose time
// is before the last record read (held up in a sink's queue or buffer,
// stamped by a clock behind, copied in). A record stored later at the last
// record's instant comes after it, and is read; but on PostgreSQL, whose
// concurrent transactions (WriteDurable beside the background writer,
// several sinks) may commit out of insertion order, one can come before it:
// it is not read, and the next page repeats the record it pushed on. To
// read every record exactly once, bound the export with Until a margin
// before now, longer than a record can take from its time to being stored:
// every record before Until is then stored when the export reads it.
func (f Filter) Next(page []Event) Filter {
	if len(page) == 0 {
		return f
	}
	last := page[len(page)-1].Time
	n := 0
	for i := len(page) - 1; i >= 0 && page[i].Time.Equal(last); i-- {
		n++
	}
	if n == len(page) && f.Offset > 0 && last.Equal(f.Since) {
		f.Offset += n
	} else {
		f.Since, f.Offset = last, n
	}
	return f
}

// check returns the error of a filter no reader takes.
func (f *Filter) check() error {
	if f.Offset < 0 {
		return fmt.Errorf("audit: query: negative Filter.Offset %d", f.Offset)
	}
	return nil
}

// Match reports whether e passes the filter. Text is compared as the sinks
// record it: invalid UTF-8 and NUL bytes, in the filter or in e, stand for
// U+FFFD, as in [SQLSink.Query]. Offset and Limit, which select among the
// matches, play no part.
func (f *Filter) Match(e *Event) bool {
	switch {
	case f.SessionID != "" && !sameText(e.SessionID, f.SessionID),
		f.Subject != "" && !sameText(e.Subject, f.Subject),
		f.Tool != "" && !sameText(e.Tool, f.Tool),
		f.CorrelationID != "" && !sameText(e.CorrelationID, f.CorrelationID),
		f.RequestID != "" && !sameText(e.RequestID, f.RequestID),
		f.ParentID != "" && !sameText(e.ParentID, f.ParentID),
		f.Phase != "" && e.Phase != f.Phase,
		f.Code != "" && !sameText(e.Code, f.Code),
		f.Allowed != nil && e.Allowed != *f.Allowed,
		!f.Since.IsZero() && e.Time.Before(f.Since),
		!f.Until.IsZero() && !e.Time.Before(f.Until):
		return false
	}
	return true
}

// sameText reports whether a and b are recorded as the same text (see text).
func sameText(a, b string) bool {
	return a == b || text(a) == text(b)
}

// plainNumbers turns the json.Numbers of v into float64 where the float64
// is the number as written (see plainNumber).
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return plainNumber(x)
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

// plainNumber returns n as a float64 when that float64 is n: when its
// shortest decimal, which is how encoding/json writes it, has n's value
// (0.1, 1.50, 1E+2). Otherwise it returns n itself: an integer past 2^53
// (12345678901234567 would read as 12345678901234568), more digits than a
// float64 holds, a number beyond its range (1e400, 1e-400).
func plainNumber(n json.Number) any {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return n
	}
	// Fifteen significant digits or fewer, no exponent: the nearest
	// float64's shortest decimal is the number itself.
	if len(n) <= 15 && !strings.ContainsAny(string(n), "eE") {
		return f
	}
	if !sameDecimal(string(n), strconv.FormatFloat(f, 'g', -1, 64)) {
		return n
	}
	return f
}

// sameDecimal reports whether the JSON numbers a and b have the same value.
func sameDecimal(a, b string) bool {
	na, da, ea := decimalParts(a)
	nb, db, eb := decimalParts(b)
	if da == "" || db == "" {
		return da == db // zero, of either sign
	}
	return na == nb && da == db && ea == eb
}

// decimalParts returns the value of the JSON number s as a sign, its
// significant digits (no leading or trailing zeros; "" for zero) and the
// power of ten exp of the value 0.digits × 10^exp.
func decimalParts(s string) (neg bool, digits string, exp int) {
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant, e, _ := strings.Cut(strings.ToLower(s), "e")
	ip, fp, _ := strings.Cut(mant, ".")
	all := ip + fp
	point := len(ip) // digits before the decimal point
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	digits = strings.TrimRight(all[lead:], "0")
	// No exponent: 0. One past an int: Atoi's bound; either way clamped
	// to where the sum below cannot overflow (no float64 is near).
	x, _ := strconv.Atoi(strings.TrimPrefix(e, "+"))
	x = max(min(x, math.MaxInt32), math.MinInt32)
	return neg, digits, point - lead + x
}
