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
// one in a form the gateway cannot read, or twice (the TypeScript SDK
// decodes a body in the charset its Content-Type names, UTF-7 included, in
// which a string the gateway read as an argument can close the string and
// name another tool). JSON between systems is UTF-8 (RFC 8259 §8.1); a
// Content-Type without a charset is not checked.
func checkBodyCoding(h http.Header) *rpcError {
	if c := contentCoding(h); c != "" {
		return errUnsupportedBody("Content-Encoding " + quoted(c) + " not supported: send the body unencoded")
	}
	if otherCharset(h) {
		return errUnsupportedBody("the body must be UTF-8 JSON: Content-Type names another charset, or cannot be read")
	}
	return nil
}

// readableAnswer reports whether the gateway reads a downstream answer
// with header h as its client does: unencoded (the gateway asks for
// identity) and, for an event stream (stream), in UTF-8. A client inflates
// a gzip answer the gateway would check compressed (net/http, fetch and
// httpx all do), and httpx, under the Python SDK, decodes an event stream
// in the charset its Content-Type names (UTF-7; or ISO-8859-1, where a
// byte the gateway read inside a UTF-8 character is a line break): the
// messages the client reads would not be those the gateway checked. (The
// SDKs read a JSON answer as UTF-8 whatever its charset.)
func readableAnswer(h http.Header, stream bool) bool {
	return contentCoding(h) == "" && !(stream && otherCharset(h))
}

// contentCoding returns the first content coding other than identity that
// h's Content-Encoding names, or "".
func contentCoding(h http.Header) string {
	for _, v := range h["Content-Encoding"] {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return c
			}
		}
	}
	return ""
}

// otherCharset reports whether h's Content-Type names a charset other than
// UTF-8, or names one in a form that cannot be read, or names one twice:
// mime.ParseMediaType reads "charset=utf-7; charset*=utf-8'en'utf-8" (or
// "charset*0=utf-8") as UTF-8, its RFC 2231 value, where the content-type
// package (the TypeScript SDK's) and Python's email.message (httpx's) read
// UTF-7, the plain one.
func otherCharset(h http.Header) bool {
	for _, v := range h["Content-Type"] {
		n := strings.Count(strings.ToLower(v), "charset")
		if n == 0 {
			continue
		}
		if _, params, err := mime.ParseMediaType(v); n > 1 || err != nil || !strings.EqualFold(params["charset"], "utf-8") {
			return true
		}
	}
	return false
}
