package policy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
)

func TestWriteAllowlist(t *testing.T) {
	for _, tt := range []struct {
		allow []string
		want  []string
	}{
		{nil, []string{}},
		{[]string{"b_write", "a_write"}, []string{"a_write", "b_write"}},
		{[]string{"*"}, []string{"*"}},
	} {
		p, err := policy.New(policy.Config{
			Tools:          []policy.ToolRule{{Name: "a_write", Class: policy.Write}, {Name: "b_write", Class: policy.Write}},
			WriteAllowlist: tt.allow,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := p.WriteAllowlist()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("WriteAllowlist() of %v (-want +got):\n%s", tt.allow, diff)
		}
		if len(got) > 0 {
			got[0] = "changed"
			if p.WriteAllowlist()[0] == "changed" {
				t.Errorf("WriteAllowlist() of %v returned the policy's own slice", tt.allow)
			}
		}
	}
}
