package fastschema

import (
	"encoding/json"
	"testing"
)

// FuzzReview56Names compares the fast path with the oracle on schemas
// whose property names the fuzzer picks (letter case, '_' and '-',
// escapes, names outside ASCII, names that fold alike), for documents it
// picks too.
func FuzzReview56Names(f *testing.F) {
	for _, s := range [][3]string{
		{"user_id", "userid", `{"user_id":1,"userid":"x"}`},
		{"ß", "ẞ", `{"\u00df":1}`},
		{"ı", "I", `{"i":1}`},
		{"K", "k", `{"\u212a":1}`},
		{"a-b", "A_B", `{"ab":1}`},
		{"", "_", `{"":1,"-":"x"}`},
		{"~1", "/", `{"~1":1}`},
		{"a\u0000", "b", `{"a\u0000":1}`},
		{"\ufffd", "x", "{\"\xff\":1}"},
	} {
		f.Add(s[0], s[1], []byte(s[2]), uint8(0))
		f.Add(s[0], s[1], []byte(s[2]), uint8(3))
	}
	f.Fuzz(func(t *testing.T, a, b string, raw []byte, form uint8) {
		ka, _ := json.Marshal(a)
		kb, _ := json.Marshal(b)
		req := `"required":[` + string(ka) + `],`
		if form&1 != 0 {
			req = ""
		}
		ap := "false"
		if form&2 != 0 {
			ap = "true"
		}
		src := `{"type":"object",` + req + `"additionalProperties":` + ap +
			`,"properties":{` + string(ka) + `:{"type":"integer","maximum":5},` +
			string(kb) + `:{"type":"string","maxLength":2}}}`
		if form&4 != 0 {
			src = `{"type":"object","properties":{"n":{"type":"array","items":` + src + `}}}`
		}
		var probe any
		if json.Unmarshal([]byte(src), &probe) != nil {
			return
		}
		opts := Options{MaxStringBytes: 64, AllowControlChars: form&8 != 0}
		fast, ok := Compile(decodeSchema(t, src), opts)
		if !ok {
			return
		}
		agree(t, fast, newOracle(t, decodeSchema(t, src), opts), raw)
	})
}
