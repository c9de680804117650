package policy

import (
	"strings"
	"testing"
)

// TestNewAcceptsJoinersWithinWords: the zero-width non-joiner and joiner
// (U+200C, U+200D) are part of how words are written in Persian, the
// Indic scripts and emoji sequences: a role from an IdP such as the
// Persian "مدیر‌ارشد" carries one, and New refused it as an invisible
// character, so no rule could name that role. A joiner between two
// non-ASCII characters is accepted; one at an end, next to ASCII or next to
// a blank is still refused, and so is every other invisible character.
func TestNewAcceptsJoinersWithinWords(t *testing.T) {
	accepted := []string{
		"مدیر\u200cارشد",  // Persian: ZWNJ between two letters
		"क्\u200dष",       // Devanagari: ZWJ after a virama
		"👩\u200d💻 devs",   // an emoji ZWJ sequence
		"👨\u200d👩\u200d👧", // several joiners
	}
	for _, role := range accepted {
		cfg := Config{
			Tools:     []ToolRule{{Name: "report", Class: Read, Roles: []string{role}}},
			RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{role}}},
		}
		if _, err := New(cfg); err != nil {
			t.Errorf("New(role %+q) = %v, want nil", role, err)
		}
	}

	refused := []string{
		"\u200cمدیر",        // at the start
		"مدیر\u200c",        // at the end
		"admin\u200d_ops",   // between ASCII characters
		"مدیر\u200c ارشد",   // next to a blank
		"مدیر\u200c\u200bا", // next to another invisible character
		"مدیر\u200bارشد",    // a zero-width space is no joiner
	}
	for _, role := range refused {
		_, err := New(Config{Tools: []ToolRule{{Name: "report", Class: Read, Roles: []string{role}}}})
		if err == nil || !strings.Contains(err.Error(), "invisible") && !strings.Contains(err.Error(), "white space") {
			t.Errorf("New(role %+q) = %v, want an error about an invisible character or white space", role, err)
		}
	}
	// A pattern whose prefix ends with a joiner matches only names with it.
	if _, err := New(Config{RoleRules: []RoleRule{{Pattern: "مدیر\u200c*", Roles: []string{"admin"}}}}); err == nil {
		t.Errorf("New(pattern with a joiner before its *) = nil, want an error")
	}
}
