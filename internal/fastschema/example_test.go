package fastschema_test

import (
	"fmt"
	"strings"

	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func Example() {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{
		"type": "object",
		"properties": {
			"customer_id": {"type": "string", "pattern": "^CUST-[A-Z0-9]{5}$"},
			"amount": {"type": "number", "exclusiveMinimum": 0},
			"reason": {"type": "string", "minLength": 10}
		},
		"required": ["customer_id", "amount", "reason"],
		"additionalProperties": false
	}`))
	if err != nil {
		panic(err)
	}
	s, ok := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: 65536})
	if !ok {
		fmt.Println("unsupported schema: validate with v6")
		return
	}
	for _, args := range []string{
		`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`,
		`{"customer_id":"CUST-00001","amount":0,"reason":"damaged on arrival"}`,
		`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","admin":true}`,
		`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival","\u0061mount":1}`,
		`{"customer_id":"CUST-00001","amount":12.5}`,
	} {
		if e := s.Validate([]byte(args)); e != nil {
			fmt.Printf("%q: %s\n", e.Pointer, e.Message)
		} else {
			fmt.Println("valid")
		}
	}
	// Output:
	// valid
	// "/amount": argument "amount" must be > 0
	// "/admin": unknown argument "admin"
	// "/amount": argument "amount" appears twice
	// "/reason": missing required argument "reason"
}
