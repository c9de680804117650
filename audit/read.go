package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
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
// a write cut short, never an acknowledged record.
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
// file order (a sink writes in time order, but concurrent writers of one
// file may not: f.Limit keeps the first matches of the file, which are
// then not always the oldest). Corrupt or torn lines are skipped and reported together in the
// returned error (an errors.Join of *[LineError]), next to the events that
// were read: a non-nil error with events means the events are valid records
// and some lines were not.
func QueryJSONL(path string, f Filter) ([]Event, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: query %s: %w", path, err)
	}
	defer file.Close()
	var out []Event
	var errs []error
	for ev, err := range ReadJSONL(file) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.Match(&ev) {
			out = append(out, ev)
			if f.Limit > 0 && len(out) >= f.Limit {
				break
			}
		}
	}
	return out, errors.Join(errs...)
}

// Filter selects events. Zero fields match everything: every non-zero field
// must match.
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
	Phase     Phase
	Code      string    // the outcome code; "" matches any
	Allowed   *bool     // nil matches both
	Since     time.Time // inclusive; zero: no lower bound
	Until     time.Time // exclusive; zero: no upper bound
	Limit     int       // at most this many events, oldest first (QueryJSONL: the first in file order); 0: no limit
}

// Match reports whether e passes the filter. Text is compared as the sinks
// record it: invalid UTF-8 and NUL bytes, in the filter or in e, stand for
// U+FFFD, as in [SQLSink.Query].
func (f *Filter) Match(e *Event) bool {
	switch {
	case f.SessionID != "" && !sameText(e.SessionID, f.SessionID),
		f.Subject != "" && !sameText(e.Subject, f.Subject),
		f.Tool != "" && !sameText(e.Tool, f.Tool),
		f.CorrelationID != "" && !sameText(e.CorrelationID, f.CorrelationID),
		f.RequestID != "" && !sameText(e.RequestID, f.RequestID),
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
