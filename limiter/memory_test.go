package limiter_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
)

func TestMemoryStoreConformance(t *testing.T) {
	limitertest.Run(t, func(t *testing.T) limiter.Store { return limiter.NewMemoryStore() })
}
