package token_test

import (
	"fmt"
	"net/http"

	"github.com/mcpguard/mcpguard/token"
)

func Example() {
	tab, err := token.Parse([]byte(`{"tok-ann": {"sub": "ann", "roles": ["support", "admin"]}, "tok-bob": "viewer"}`))
	if err != nil {
		panic(err)
	}
	h := http.Header{"Authorization": {"bearer tok-ann"}}
	if tok, ok := token.Bearer(h); ok {
		pr := tab.Lookup(tok)
		fmt.Println(pr.Subject, pr.Roles)
	}
	fmt.Println(tab.Lookup("tok-eve") == nil)
	// Output:
	// ann [support admin]
	// true
}
