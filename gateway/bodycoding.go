package gateway

import (
	"mime"
	"net/http"
	"strings"
)

// checkBodyCoding refuses (415) a POST whose body a downstream could read
// as other bytes or other characters than the gateway judges, which reads
// it as UTF-8 JSON as sent: a Content-Encoding other than identity (an
// Express downstream, express.json(), inflates deflate, gzip and br
// bodies), or a Content-Type naming a charset other than UTF-8, or naming
// one in a form the gateway cannot read (the TypeScript SDK decodes a body
// in the charset its Content-Type names, UTF-7 included, in which a string
// the gateway read as an argument can close the string and name another
// tool). JSON between systems is UTF-8 (RFC 8259 §8.1); a Content-Type
// without a charset is not checked.
func checkBodyCoding(h http.Header) *rpcError {
	for _, v := range h["Content-Encoding"] {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return errUnsupportedBody("Content-Encoding " + quoted(c) + " not supported: send the body unencoded")
			}
		}
	}
	for _, v := range h["Content-Type"] {
		if !strings.Contains(strings.ToLower(v), "charset") {
			continue
		}
		if _, params, err := mime.ParseMediaType(v); err != nil || !strings.EqualFold(params["charset"], "utf-8") {
			return errUnsupportedBody("the body must be UTF-8 JSON: Content-Type names another charset, or cannot be read")
		}
	}
	return nil
}
