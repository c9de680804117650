package cliarg

import "testing"

// TestShownURL: a URL (or a list of them) with user information, a query
// or a fragment, an entry that is no URL and that Shown hides, or a token
// in a URL's path is not shown; any other is quoted whole.
func TestShownURL(t *testing.T) {
	for _, tc := range []struct {
		v, want string
		secret  bool
	}{
		{"https://shop.example", `"https://shop.example"`, false},
		{"https://a.example,https://b.example:8443", `"https://a.example,https://b.example:8443"`, false},
		{"http://localhost:*", `"http://localhost:*"`, false},
		{"https://user:pw@shop.example", hidden, true},
		{"https://shop.example?k=v", hidden, true},
		{"https://shop.example#frag", hidden, true},
		{"a@b", hidden, true},
		{"x?", hidden, true},
		{"sk_live_51Habcdef0123456789", hidden, true}, // a token in the wrong flag
		{"https://a.example,user:pass", hidden, true}, // an entry without a scheme
		{"https://hooks.example/services/T0001/B0001/XyZ0aBcD1eFgH2iJ", hidden, true}, // a token in a path
		{"https://h.example/eyJhbGciOi", hidden, true},
		{"localhost:8080", `"localhost:8080"`, false},
		{"127.0.0.1:8081/mcp", `"127.0.0.1:8081/mcp"`, false},
		{"[::1]:8080", `"[::1]:8080"`, false},
		{"http://my-service-01234.svc.cluster.local:8080/mcp-server-v2-production", `"http://my-service-01234.svc.cluster.local:8080/mcp-server-v2-production"`, false},
		{"https://h.example/t/abcdEFGH01234567-x", hidden, true},
		{"admin:hunter2", hidden, true},
		{"http:usr1:pw1/x", hidden, true},
		{"*", `"*"`, false},
		{"https://keycloak.example/realms/main", `"https://keycloak.example/realms/main"`, false},
		{"https://shop.example/\n", `"https://shop.example/\n"`, false},
	} {
		if got := URLMayHoldSecret(tc.v); got != tc.secret {
			t.Errorf("URLMayHoldSecret(%q) = %v, want %v", tc.v, got, tc.secret)
		}
		if got := ShownURL(tc.v); got != tc.want {
			t.Errorf("ShownURL(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
