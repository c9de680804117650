package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"
)

// FuzzReview22EnvelopeKeys fuzzes the bytes of a viewer's POST body and its
// Content-Type (given once or twice) through a gateway in front of the
// recording downstream, and asserts that nothing the downstream receives
// names an admin_* tool in a tools/call by any reading: encoding/json's
// (member names matched case-insensitively, the last one winning), an exact
// one, one that cuts member names (and values) at a NUL as C strings do,
// each taking the first or the last of a name given twice; and, for a body
// declared UTF-7 by any of the charsets its Content-Type names, the same
// on the body decoded from UTF-7. A body forwarded with a Content-Type
// naming any charset other than UTF-8 fails too: the gateway refuses them
// all (checkBodyCoding).
func FuzzReview22EnvelopeKeys(f *testing.F) {
	smuggled := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","x":"` +
		utf7(`","name":"admin_reset_key`) + `"}}`
	const ct = "application/json"
	for _, body := range []string{
		// review22_lead_test.go
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000x":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME\u0000":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method\u0000":"tools/call","method":"tools/list","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"amount\u0000":1e9,"amount":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"Amount\u0000z":1e9,"amount":1}}}`,
		call(`2`, "trigger_refund", `{"amount":1,"note":"a\u0000b"}`),
		call(`3`, "get_customer_record", `{"x\u0000":1}`),
		// Case variants, escapes and duplicates.
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","Name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","n\u0061me":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key","name":"get_customer_record"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"admin_reset_key"},"params":{"name":"get_customer_record"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call\u0000","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key\u0000"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u212a":"admin_reset_key","name":"get_customer_record"}}`,
		`[` + call(`1`, "get_customer_record", "") + `,` + call(`2`, "admin_reset_key", "") + `]`,
	} {
		f.Add(body, ct, "")
	}
	// review22_gwenvelope_test.go
	for _, c := range []string{
		"application/json; charset=utf-7; charset*=utf-8''utf-8",
		"application/json; charset*=utf-8''utf-8; charset=utf-7",
		"application/json; charset=utf-7; charset*0=utf-8",
		"application/json; charset=utf-7; charset*0=utf; charset*1=-8",
		"application/json; charset=utf-7; charset*0*=utf-8''utf-8",
		"application/json; charset*=utf-8''utf-8",
		"application/json; charset=utf-8",
	} {
		f.Add(smuggled, c, "")
	}
	f.Add(smuggled, "application/json; charset=utf-8", "application/json; charset=utf-7")
	f.Add(smuggled, "application/json", "application/json; charset=utf-7")
	f.Add(call(`1`, "get_customer_record", ""), "application/json; charset=utf-8", "text/plain; charset=utf-7")

	rg := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body, ct1, ct2 string) {
		if !clientSendable(ct1) || !clientSendable(ct2) {
			return // no HTTP client sends these
		}
		rg.down.mu.Lock()
		rg.down.received = nil
		rg.down.mu.Unlock()
		req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Accept", "application/json, text/event-stream")
		if ct1 != "" {
			req.Header.Add("Content-Type", ct1)
		}
		if ct2 != "" {
			req.Header.Add("Content-Type", ct2)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, r := range rg.down.log() {
			if r.Method != http.MethodPost {
				continue
			}
			readings := []string{r.Body}
			for _, cs := range looseCharsets(r.Header["Content-Type"]) {
				switch cs {
				case "", "utf-8", "utf8":
				case "utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7":
					readings = append(readings, fromUTF7(r.Body))
					fallthrough
				default:
					t.Errorf("forwarded with Content-Type %q (charset %q): %q (request %q, %q, %q)",
						r.Header["Content-Type"], cs, r.Body, body, ct1, ct2)
				}
			}
			for _, b := range readings {
				if m, n, ok := adminCallAnyReading([]byte(b)); ok {
					t.Fatalf("the downstream received %q, a tools/call of %q by some reading (method %q) (request %q, Content-Type %q, %q)",
						b, n, m, body, ct1, ct2)
				}
			}
		}
	})
}

// newFuzzRig is newRig for a fuzz target: one gateway and downstream for all
// the inputs of a worker, its logs discarded (newRig keeps them in memory,
// which a million inputs would fill).
func newFuzzRig(tb testing.TB) *rig {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	tb.Cleanup(dsrv.Close)
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	gw := httptest.NewServer(g)
	tb.Cleanup(gw.Close)
	return &rig{url: gw.URL, gw: gw, down: d, dsrv: dsrv}
}

// clientSendable reports whether an HTTP client would send v as a header
// field value.
func clientSendable(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// looseCharsets returns every charset the Content-Type values name, by a
// lenient reading: each "charset" parameter, plain or in the RFC 2231 form
// (charset*=, charset*0=, charset*0*=), unquoted, without an RFC 2231
// charset'language' prefix, percent-decoded, lower-cased.
func looseCharsets(vals []string) []string {
	var out []string
	for _, v := range vals {
		low := strings.ToLower(v)
		for {
			i := strings.Index(low, "charset")
			if i < 0 {
				break
			}
			low = low[i+len("charset"):]
			rest := strings.TrimLeft(low, "*0123456789")
			rest = strings.TrimLeft(rest, " \t")
			if !strings.HasPrefix(rest, "=") {
				continue
			}
			rest = strings.TrimLeft(rest[1:], " \t")
			val := rest
			if j := strings.IndexByte(val, ';'); j >= 0 {
				val = val[:j]
			}
			val = strings.Trim(strings.TrimSpace(val), `"`)
			if j := strings.LastIndexByte(val, '\''); j >= 0 {
				val = val[j+1:]
			}
			if u, err := url.PathUnescape(val); err == nil {
				val = u
			}
			out = append(out, strings.TrimSpace(val))
		}
	}
	return out
}

// fromUTF7 decodes s as UTF-7 (RFC 2152), leniently.
func fromUTF7(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '+' {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", s[j]) >= 0 {
			j++
		}
		if j == i+1 {
			if j < len(s) && s[j] == '-' {
				b.WriteByte('+')
				i = j
			} else {
				b.WriteByte('+')
			}
			continue
		}
		enc := s[i+1 : j]
		if len(enc)%4 == 1 {
			enc = enc[:len(enc)-1] // bits that make no byte
		}
		raw, _ := base64.RawStdEncoding.DecodeString(enc)
		var units []uint16
		for k := 0; k+1 < len(raw); k += 2 {
			units = append(units, binary.BigEndian.Uint16(raw[k:]))
		}
		b.WriteString(string(utf16.Decode(units)))
		i = j - 1
		if j < len(s) && s[j] == '-' {
			i = j
		}
	}
	return b.String()
}

// objMember is one member of a JSON object, in order, duplicates kept.
type objMember struct {
	key string
	val json.RawMessage
}

// members returns the members of the JSON object at the start of raw (what
// follows it is ignored, as a lenient reader does).
func members(raw []byte) ([]objMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []objMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		out = append(out, objMember{k, v})
	}
	return out, true
}

// A keyReading is how one reader matches a objMember name: exactly or ignoring
// case, the name cut at a NUL or not, the first or the last match winning.
type keyReading struct{ fold, cut, last bool }

func (kr keyReading) lookup(ms []objMember, want string) (json.RawMessage, bool) {
	var got json.RawMessage
	found := false
	for _, m := range ms {
		k := m.key
		if kr.cut {
			k, _, _ = strings.Cut(k, "\x00")
		}
		if k == want || kr.fold && strings.EqualFold(k, want) {
			if found && !kr.last {
				continue
			}
			got, found = m.val, true
		}
	}
	return got, found
}

// stringReadings returns v as a JSON string, as is, cut at a NUL, and
// trimmed.
func stringReadings(v json.RawMessage) []string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil
	}
	cut, _, _ := strings.Cut(s, "\x00")
	return []string{s, cut, strings.TrimSpace(s), strings.TrimSpace(cut)}
}

// adminCallAnyReading reports whether body (an object or a batch) holds a
// message whose method, by some reading, is tools/call and whose tool name,
// by some reading, begins with admin_.
func adminCallAnyReading(body []byte) (method, name string, ok bool) {
	var batch []json.RawMessage
	if d := json.NewDecoder(bytes.NewReader(body)); d.Decode(&batch) == nil {
		for _, m := range batch {
			if method, name, ok = adminCallAnyReading(m); ok {
				return
			}
		}
		return "", "", false
	}
	// encoding/json's own reading.
	var loose struct {
		Method string
		Params struct{ Name string }
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&loose) == nil &&
		strings.EqualFold(loose.Method, "tools/call") && strings.HasPrefix(loose.Params.Name, "admin_") {
		return loose.Method, loose.Params.Name, true
	}
	env, ok := members(body)
	if !ok {
		return "", "", false
	}
	var isCall bool
	var names []string
	for _, fold := range []bool{false, true} {
		for _, cut := range []bool{false, true} {
			for _, last := range []bool{false, true} {
				kr := keyReading{fold, cut, last}
				if v, ok := kr.lookup(env, "method"); ok {
					for _, s := range stringReadings(v) {
						if strings.EqualFold(s, "tools/call") {
							isCall, method = true, s
						}
					}
				}
				pv, ok := kr.lookup(env, "params")
				if !ok {
					continue
				}
				params, ok := members(pv)
				if !ok {
					continue
				}
				// A reader may match the envelope one way and params
				// another: every reading of name in every reading of
				// params.
				for _, fold2 := range []bool{false, true} {
					for _, cut2 := range []bool{false, true} {
						for _, last2 := range []bool{false, true} {
							if v, ok := (keyReading{fold2, cut2, last2}).lookup(params, "name"); ok {
								names = append(names, stringReadings(v)...)
							}
						}
					}
				}
			}
		}
	}
	if !isCall {
		return "", "", false
	}
	for _, n := range names {
		if strings.HasPrefix(n, "admin_") {
			return method, n, true
		}
	}
	return "", "", false
}

// TestReview22FuzzOracle: the readings of FuzzReview22EnvelopeKeys see the
// admin call in each smuggling body, and none in plain calls of other tools.
func TestReview22FuzzOracle(t *testing.T) {
	if s := `a+-b` + utf7(`","name":"admin_x`) + `-c+AGE`; fromUTF7(s) != `a+b","name":"admin_x-ca` {
		t.Errorf("fromUTF7(%q) = %q", s, fromUTF7(s))
	}
	if got := looseCharsets([]string{`application/json; CHARSET="UTF-7"; charset*0*=utf-8'en'utf%2D8`, "charset = x"}); strings.Join(got, ",") != "utf-7,utf-8,x" {
		t.Errorf("looseCharsets = %q", got)
	}
	for _, body := range []string{
		call(`1`, "admin_reset_key", ""),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000":"admin_reset_key","name":"get_customer_record"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key","name":"get_customer_record"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","Name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method\u0000":"tools/call","method":"tools/list","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call\u0000x","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"admin_reset_key"},"params":{"name":"ok"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME\u0000y":"admin_reset_key","name":"ok"}} trailing`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + call(`2`, "admin_x", "") + `]`,
		fromUTF7(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","x":"` +
			utf7(`","name":"admin_reset_key`) + `"}}`),
	} {
		if _, _, ok := adminCallAnyReading([]byte(body)); !ok {
			t.Errorf("no reading sees the admin call in %s", body)
		}
	}
	for _, body := range []string{
		call(`1`, "get_customer_record", `{"name":"admin_x"}`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","x":"admin_y"}}`,
	} {
		if _, _, ok := adminCallAnyReading([]byte(body)); ok {
			t.Errorf("a reading sees an admin call in %s", body)
		}
	}
}
