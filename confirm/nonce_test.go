package confirm_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/noncetest"
)

func TestMemoryNonceStoreConformance(t *testing.T) {
	noncetest.Run(t, func(*testing.T) confirm.NonceStore { return confirm.NewMemoryNonceStore() })
}
