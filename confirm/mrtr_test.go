package confirm

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAskWire(t *testing.T) {
	res := Ask("Run refund with amount=12.5", "STATE")
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"content": nil,
		"inputRequests": map[string]any{
			InputKey: map[string]any{
				"method": "elicitation/create",
				"params": map[string]any{
					"mode":            "form",
					"message":         "Run refund with amount=12.5",
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
				},
			},
		},
		"requestState": "STATE",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ask wire form (-want +got):\n%s", diff)
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name       string
		params     *mcp.CallToolParamsRaw
		wantAction string
		wantOK     bool
	}{
		{"nil_params", nil, "", false},
		{"no_responses", &mcp.CallToolParamsRaw{}, "", false},
		{"accept", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ElicitResult{Action: "accept"}}}, "accept", true},
		{"decline", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ElicitResult{Action: "decline"}}}, "decline", true},
		{"cancel", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ElicitResult{Action: "cancel"}}}, "cancel", true},
		{"unknown_action", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ElicitResult{Action: "ACCEPT"}}}, "", false},
		{"other_key", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}}, "", false},
		{"nil_result", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: (*mcp.ElicitResult)(nil)}}, "", false},
		//lint:ignore SA1019 every InputResponse but ElicitResult is deprecated: the wrong type is one of them
		{"wrong_type", &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ListRootsResult{}}}, "", false},
		{"model_argument_is_not_approval", &mcp.CallToolParamsRaw{Arguments: json.RawMessage(`{"confirm":true,"confirmed":"accept"}`)}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, ok := Answer(tt.params)
			if action != tt.wantAction || ok != tt.wantOK {
				t.Errorf("Answer(%s) = %q, %v; want %q, %v", tt.name, action, ok, tt.wantAction, tt.wantOK)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	many := map[string]int{}
	for _, c := range "abcdefghijklmnopqrstuvwxy" {
		many[string(c)] = 1
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name string
		tool string
		args string
		want string
	}{
		{"sorted_plain", "refund", `{"customer_id":"CUST-00001","amount":12.5}`,
			"Run refund with amount=12.5, customer_id=CUST-00001"},
		{"quoted_strings", "note", `{"text":"next day, please","empty":"","eq":"a=b","q":"say \"hi\""}`,
			`Run note with empty="", eq="a=b", q="say \u0022hi\u0022", text="next day, please"`},
		{"literals", "t", `{"b":true,"n":null,"x":1e3,"neg":-0.50}`,
			"Run t with b=true, n=null, neg=-0.50, x=1e3"},
		{"nested_sorted", "t", `{"items":[{"sku":"S1","qty":2}],"opts":{"z":1,"a":"<b>"}}`,
			`Run t with items=[{"qty":2,"sku":"S1"}], opts={"a":"\u003cb\u003e","z":1}`},
		{"no_args", "ping", ``, "Run ping with no arguments"},
		{"null_args", "ping", `null`, "Run ping with no arguments"},
		{"empty_object", "ping", `{}`, "Run ping with no arguments"},
		{"array_args", "t", `[1,"a"]`, `Run t with arguments [1,"a"]`},
		{"invalid", "t", `{"a":`, "Run t with unreadable arguments"},
		{"control_chars", "re\x1b[31mfund", `{"no\nte":"a\u0007b\u202ec\u2028d"}`, `Run re[31mfund with "no\nte"="a\ab\u202ec\u2028d"`},
		{"long_value", "t", `{"v":"` + strings.Repeat("x", 100) + `"}`, "Run t with v=" + strings.Repeat("x", 80) + "…"},
		{"long_quoted", "t", `{"v":"` + strings.Repeat("x y", 40) + `"}`, `Run t with v="` + strings.Repeat("x y", 40)[:80] + `…"`},
		{"many_keys", "t", string(manyJSON),
			"Run t with a=1, b=1, c=1, d=1, e=1, f=1, g=1, h=1, i=1, j=1, k=1, l=1, m=1, n=1, o=1, p=1, q=1, r=1, s=1, t=1, … (5 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.tool, json.RawMessage(tt.args)); got != tt.want {
				t.Errorf("Describe(%q, %s)\n got %q\nwant %q", tt.tool, tt.args, got, tt.want)
			}
		})
	}
}

// FuzzDescribe checks that Describe never panics and never lets a control
// or formatting character reach the human.
func FuzzDescribe(f *testing.F) {
	f.Add("refund", `{"a":"b\u202e","n":1}`)
	f.Add("t\x00", `[1,{"x":"\u0000"}]`)
	f.Add("", `"\ud800"`)
	f.Fuzz(func(t *testing.T, tool, args string) {
		got := Describe(tool, json.RawMessage(args))
		for _, r := range got {
			if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("Describe(%q, %q) = %q contains %U", tool, args, got, r)
			}
		}
	})
}
