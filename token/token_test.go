package token

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
)

func TestParse(t *testing.T) {
	tab, err := Parse([]byte(`{
		"tok-1": "admin",
		"tok-2": ["support", "billing"],
		"tok-3": {"sub": "svc-etl", "role": "admin"},
		"tok-4": {"sub": "ann", "roles": ["a", "b"]},
		"tok-5": {"sub": "bob"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 5 {
		t.Errorf("Len = %d, want 5", tab.Len())
	}
	tests := []struct {
		tok       string
		wantSub   string
		wantRoles []string
	}{
		{"tok-2", "", []string{"support", "billing"}},
		{"tok-3", "svc-etl", []string{"admin"}},
		{"tok-4", "ann", []string{"a", "b"}},
		{"tok-5", "bob", nil},
	}
	for _, tt := range tests {
		pr := tab.Lookup(tt.tok)
		if pr == nil {
			t.Fatalf("Lookup(%q) = nil", tt.tok)
		}
		if tt.wantSub != "" && pr.Subject != tt.wantSub {
			t.Errorf("Lookup(%q).Subject = %q, want %q", tt.tok, pr.Subject, tt.wantSub)
		}
		if diff := cmp.Diff(tt.wantRoles, pr.Roles); diff != "" {
			t.Errorf("Lookup(%q).Roles (-want +got):\n%s", tt.tok, diff)
		}
	}
	if sub := tab.Lookup("tok-1").Subject; !strings.HasPrefix(sub, "token-") || strings.Contains(sub, "tok-1") {
		t.Errorf("derived subject %q must not contain the token", sub)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		`not json`, `[]`, `{}`, `{"":"admin"}`, `{"t k":"admin"}`, `{"tok":[]}`, `{"tok":{}}`,
		`{"tok":{"sub":"a","extra":1}}`, `{"tok":"ad min"}`, `{"tok":"a,b"}`, `{"tok":{"sub":"caf\u00e9","role":"x"}}`,
		`{"secret-token-123":5}`,
	} {
		_, err := Parse([]byte(bad))
		if err == nil {
			t.Errorf("Parse(%s) succeeded, want an error", bad)
			continue
		}
		if strings.Contains(err.Error(), "secret-token-123") {
			t.Errorf("Parse error quotes the token: %v", err)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New(map[string]*policy.Principal{"tok": {}}); err == nil {
		t.Error("principal without subject accepted")
	}
	if _, err := New(map[string]*policy.Principal{"": {Subject: "x"}}); err == nil {
		t.Error("empty token accepted")
	}
	orig := &policy.Principal{Subject: "x", Roles: []string{"a"}}
	tab, err := New(map[string]*policy.Principal{"tok": orig})
	if err != nil {
		t.Fatal(err)
	}
	orig.Roles[0] = "admin"
	if got := tab.Lookup("tok").Roles[0]; got != "a" {
		t.Errorf("table shares the caller's roles: %q", got)
	}
	for _, miss := range []string{"", "to", "tok ", "TOK", "tokk"} {
		if tab.Lookup(miss) != nil {
			t.Errorf("Lookup(%q) found a principal", miss)
		}
	}
	var nilTable *Table
	if nilTable.Lookup("tok") != nil || nilTable.Len() != 0 {
		t.Error("nil table is not empty")
	}
}

func TestBearer(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
		ok     bool
	}{
		{"plain", []string{"Bearer abc.DEF-123"}, "abc.DEF-123", true},
		{"scheme_case_insensitive", []string{"bEaReR tok=="}, "tok==", true},
		{"missing", nil, "", false},
		{"basic", []string{"Basic dXNlcg=="}, "", false},
		{"empty_token", []string{"Bearer "}, "", false},
		{"two_tokens", []string{"Bearer a b"}, "", false},
		{"bad_char", []string{"Bearer a,b"}, "", false},
		{"padding_inside", []string{"Bearer a=b"}, "", false},
		{"two_headers", []string{"Bearer a", "Bearer b"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("Authorization", v)
			}
			got, ok := Bearer(h)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	m := map[string]*policy.Principal{}
	for i := range 16 {
		m["token-"+strings.Repeat("x", i)] = &policy.Principal{Subject: "s", Roles: []string{"r"}}
	}
	tab, err := New(m)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tab.Lookup("token-xxxx")
	}
}
