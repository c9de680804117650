package mcpguard_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
)

// Every code's JSON-RPC code and HTTP status are DESIGN.md's error
// contract table (TOOL_NOT_FOUND takes the go-sdk's -32602 unless
// Options.NotFoundCode says otherwise), and the codes a later retry can
// get past (a cap, an upstream or the audit trail down) are retryable.
func TestReview42ErrorContract(t *testing.T) {
	type contract struct {
		JSONRPC   int64
		HTTP      int
		Retryable bool
	}
	want := map[mcpguard.Code]contract{
		mcpguard.CodeUnauthenticated:          {-32000, 401, false},
		mcpguard.CodeForbidden:                {-32001, 403, false},
		mcpguard.CodeWriteNotAllowed:          {-32001, 403, false},
		mcpguard.CodeToolNotFound:             {-32602, 404, false},
		mcpguard.CodeInvalidArguments:         {-32602, 400, false},
		mcpguard.CodeConfirmationRequired:     {-32001, 403, false},
		mcpguard.CodeRateLimitExceeded:        {-32029, 429, true},
		mcpguard.CodeSpendLimitExceeded:       {-32029, 429, true},
		mcpguard.CodeConcurrencyLimitExceeded: {-32029, 429, true},
		mcpguard.CodeInvalidResponse:          {-32603, 502, false},
		mcpguard.CodeUpstreamUnavailable:      {-32003, 502, true},
		mcpguard.CodeAuditUnavailable:         {-32603, 503, true},
		mcpguard.CodeInternal:                 {-32603, 500, false},
		mcpguard.Code("NOT_A_CODE"):           {-32603, 500, false},
	}
	got := map[mcpguard.Code]contract{}
	for c := range want {
		got[c] = contract{c.JSONRPC(), c.HTTPStatus(), c.Retryable()}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the error contract (-want +got):\n%s", diff)
	}
}
