package redisnonce_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
)

// ExampleNew shares one nonce store between all replicas of a server, so a
// confirmation is accepted once whichever replica the retry reaches. (Not
// run: it needs a Redis; the package tests start a real redis-server.)
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	nonces := redisnonce.New(rdb, "shop:confirm:")
	// A Redis that may evict keys would forget used nonces: refuse to start.
	if err := nonces.CheckServer(context.Background()); err != nil {
		log.Fatal(err)
	}
	signer, err := confirm.NewSigner(
		[]confirm.Key{{ID: "2026-07", Secret: []byte("use 32+ random bytes from a vault")}},
		&confirm.Options{Nonces: nonces},
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = signer // used by the confirmation guard
}
