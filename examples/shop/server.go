package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/internal/redisaddr"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// Environment variables read at start.
const (
	// adminWritesEnv registers the admin writes when "true".
	adminWritesEnv = "MCP_ENABLE_ADMIN_WRITES"
	// confirmKeyEnv holds the confirmation signing key (hex or base64, at
	// least 32 bytes), only with --redis (errConfirmKeyAlone). Unset means
	// a random key of this process's.
	confirmKeyEnv = "SHOP_MCP_CONFIRM_KEY"
	// auditKeyEnv holds the key of the audit records' argument hash (hex,
	// at least 32 hex digits). Unset means a random key of this process's.
	auditKeyEnv = "SHOP_MCP_AUDIT_KEY"
	// redisPasswordEnv holds the password of the --redis server (of the
	// user its URL names, or of the default user), only with --redis: the
	// command line, which every user of the host can read, may not hold
	// it. Unset means no password.
	redisPasswordEnv = "SHOP_MCP_REDIS_PASSWORD"
)

// errConfirmKeyAlone refuses a confirmation key without Redis: processes
// sharing the key verify each other's confirmations, but each keeps its own
// nonces, so each (a replica, or the shop restarted within the two
// minutes) would accept a confirmation once.
var errConfirmKeyAlone = fmt.Errorf("%s needs --redis: a key shared without shared nonces lets every process (replica or restart) accept a confirmation once more; unset it for a random key of the process", confirmKeyEnv)

// config is what a shop server is built from.
type config struct {
	gateway     string        // the RoboShop gateway's base URL
	origin      string        // Origin sent with state changes; "" means the gateway's own
	adminWrites bool          // register the admin writes
	redisAddr   string        // Redis of the caps and nonces (host:port or redis[s]:// URL); "" means memory
	redisPass   string        // password of redisAddr; "" means none
	confirmKey  []byte        // nil means random; set only with redisAddr
	auditKey    []byte        // args_sha256 HMAC key; nil means random
	auditPath   string        // JSONL audit file; "" means the log
	rate        int           // calls per minute per user (60), and twice that requests per session, over the replicas on redisAddr
	inFlight    int           // calls in flight in the process (32), or over the replicas on redisAddr
	timeout     time.Duration // per call, retries included (10 s)
	stdio       bool          // identity from launch, not from bearer tokens
	launch      string        // the launching session (stdio)
	now         func() time.Time
}

func defaultConfig() config {
	return config{rate: 60, inFlight: 32, timeout: 10 * time.Second}
}

// shop is one assembled server: the go-sdk server with its fifteen (or
// twelve) tools, guarded by one mcpguard pipeline.
type shop struct {
	server *mcp.Server
	gw     *gatewayClient
	log    *slog.Logger
	specs  []*toolSpec
	guard  *mcpguard.Guard
	closes []func() error
}

// Close releases what the shop opened (the Redis client, the audit file),
// once the calls under way have recorded their outcome (at most 15 s:
// past the 10 s call deadline).
func (s *shop) Close() error {
	if s.guard != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := s.guard.Wait(ctx); err != nil {
			s.log.Warn("shop: closing with calls still under way; their audit records may be lost")
		}
		cancel()
	}
	var errs []error
	for i := len(s.closes) - 1; i >= 0; i-- {
		errs = append(errs, s.closes[i]())
	}
	return errors.Join(errs...)
}

// newShop builds the server: the tools from their specs, the policy from
// their roles and classes, and the guard (session authenticator, strict
// validation, confirmation of admin writes, 60 calls a minute per user,
// 120 requests a minute per session, 120 refused session checks a minute
// in all and 32 in flight, 10 s per call, one
// retry of a read, an audit record of every call and a write-ahead one of
// every write). With cfg.redisAddr the caps and the confirmation nonces
// are on that Redis, which must answer at start; a cfg.confirmKey needs
// it.
func newShop(cfg config, stderr io.Writer, log *slog.Logger) (*shop, error) {
	log = logger(log)
	gw, err := newGatewayClient(cfg.gateway, cfg.origin)
	if err != nil {
		return nil, err
	}
	s := &shop{gw: gw, log: log, specs: toolSpecs(cfg.adminWrites)}
	if err := s.build(cfg, stderr); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// build assembles the policy, the guard and the server of s.
func (s *shop) build(cfg config, stderr io.Writer) error {
	var rules []policy.ToolRule
	var writes []string
	for _, sp := range s.specs {
		rules = append(rules, sp.rule())
		if sp.write {
			writes = append(writes, sp.name)
		}
	}
	pol, err := policy.New(policy.Config{
		Tools:          rules,
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin", "super_admin"}}},
		WriteAllowlist: writes,
	})
	if err != nil {
		return err
	}
	if cfg.redisAddr != "" && cfg.confirmKey == nil {
		return fmt.Errorf("--redis needs %s, so that every replica verifies the same confirmations", confirmKeyEnv)
	}
	if cfg.redisAddr == "" && cfg.confirmKey != nil {
		return errConfirmKeyAlone
	}
	rdb, err := s.openRedis(cfg.redisAddr, cfg.redisPass)
	if err != nil {
		return err
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: float64(cfg.rate), Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: float64(cfg.inFlight)},
	}, &limiter.Options{Store: limiterStore(rdb)})
	if err != nil {
		return err
	}
	// Each session's requests of any kind (calls, listings, calls refused
	// before the guard's limit step) are capped before their session check
	// leaves for the gateway, at twice the per-user call rate.
	checks, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Tool: sessionCheck, Max: 2 * float64(cfg.rate), Window: time.Minute},
	}, &limiter.Options{Store: limiterStore(rdb)})
	if err != nil {
		return err
	}
	// Checks of sessions the gateway refused, over the whole server (and
	// every replica on Redis): made-up sessions each pass the per-session
	// cap above.
	strangers, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Global, Tool: strangerCheck, Max: 2 * float64(cfg.rate), Window: time.Minute},
	}, &limiter.Options{Store: limiterStore(rdb)})
	if err != nil {
		return err
	}
	signer, err := newSigner(cfg, rdb)
	if err != nil {
		return err
	}
	sink, err := s.auditSink(cfg, stderr)
	if err != nil {
		return err
	}
	tools := map[string]mcpguard.ToolOptions{}
	for _, sp := range s.specs {
		if sp.write {
			// The confirmation prompt of an admin write, and the dry-run
			// preview of every write, say what the call would do.
			tools[sp.name] = mcpguard.ToolOptions{Describe: describe}
		}
	}
	argsKey := cfg.auditKey
	if argsKey == nil {
		argsKey = make([]byte, 32)
		if _, err := rand.Read(argsKey); err != nil {
			return err
		}
	}
	g, err := mcpguard.New(pol, &sessionAuth{gw: s.gw, stdio: cfg.stdio, launch: cfg.launch, lim: lim, checks: checks,
		strangers: strangers, known: newKnownSessions(rdb, knownTTL, knownMax), now: cfg.now, log: s.log}, &mcpguard.Options{
		Audit:      sink,
		ArgsKey:    argsKey,
		Limiter:    lim,
		Confirmer:  signer,
		Tools:      tools,
		Validation: &mcpguard.ValidationOptions{MaxStringBytes: 1024},
		Timeout:    cfg.timeout,
		RetryReads: true,
		Now:        cfg.now,
		Logger:     s.log,
	})
	if err != nil {
		return err
	}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "roboshop", Title: "RoboShop", Version: "v1.0.0"}, &mcp.ServerOptions{
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	for _, sp := range s.specs {
		s.server.AddTool(sp.mcpTool(), s.handler(sp))
	}
	s.guard = g
	return g.Install(s.server)
}

// knownTTL and knownMax bound the memory of sessions seen valid, which do
// not wait on the budget of refused session checks: a session the gateway
// accepted within the last 30 minutes, at most 10,000 of them in memory
// (on Redis, one key each that expires).
const (
	knownTTL = 30 * time.Minute
	knownMax = 10000
)

// Redis keys of the shop: the limiter's (the hash tag keeps all the keys
// of a decision in one slot on Redis Cluster) and the confirmation nonces.
const (
	redisLimiterPrefix = "{roboshop}:limiter:"
	redisNoncePrefix   = "roboshop:confirm:"
)

// redisLease is how long a replica that crashed keeps the in-flight slots
// of its calls on Redis: above the longest a call holds one (its 10 s, or
// the session check's 3 s, after the write-ahead audit record).
const redisLease = time.Minute

// openRedis connects to the Redis at addr (host:port or a redis:// or
// rediss:// URL) with password (redisaddr.Flag.Dial: it must answer within
// 3 s) and closes the client with s; "" means no Redis (nil). A
// Redis that may evict keys (a maxmemory-policy other than noeviction) is
// refused: it would forget used confirmation nonces, spent budgets and
// slots in flight under memory pressure, and accept their worth again.
func (s *shop) openRedis(addr, password string) (*redis.Client, error) {
	if addr == "" {
		return nil, nil
	}
	rdb, err := redisFlag(addr, password).Dial(3 * time.Second)
	if err != nil {
		return nil, err
	}
	s.closes = append(s.closes, rdb.Close)
	// The nonces and the caps share this client: one check covers both.
	if err := redisnonce.New(rdb, redisNoncePrefix).CheckServer(context.Background()); err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return rdb, nil
}

// redisFlag is the --redis value v with its password, from
// redisPasswordEnv.
func redisFlag(v, password string) redisaddr.Flag {
	return redisaddr.Flag{Value: v, Password: password, PasswordEnv: redisPasswordEnv}
}

// limiterStore returns the limiter's store: nil (the limiter's own memory
// store) without Redis; with it, the Redis store, so that the per-user
// rate and the in-flight cap are shared by every replica on that Redis. A
// decision Redis cannot make in time (250 ms) fails, and the limiter then
// refuses the call (it fails closed).
func limiterStore(rdb *redis.Client) limiter.Store {
	if rdb == nil {
		return nil
	}
	return redislimit.New(rdb, &redislimit.Options{Prefix: redisLimiterPrefix, Lease: redisLease})
}

// newSigner returns the confirmation signer: the configured key or a random
// one, with nonces in memory or, with a Redis client, in Redis, shared by
// every replica and kept across restarts.
func newSigner(cfg config, rdb *redis.Client) (*confirm.Signer, error) {
	key := cfg.confirmKey
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	opts := &confirm.Options{TTL: 2 * time.Minute}
	if rdb != nil {
		opts.Nonces = redisnonce.New(rdb, redisNoncePrefix)
	}
	return confirm.NewSigner([]confirm.Key{{ID: "shop-1", Secret: key}}, opts)
}

// auditSink returns the audit trail: a JSONL file, or JSON lines in the
// log stream (stderr). Records name the tool, the caller, the outcome and
// the latency, and carry a keyed hash of the arguments (HMAC-SHA256 under
// the audit key, Options.ArgsKey): never their values, and not a plain
// hash that a reader could reverse by hashing the few possible values.
func (s *shop) auditSink(cfg config, stderr io.Writer) (audit.Sink, error) {
	if cfg.auditPath == "" {
		stop := hangup.Reopen(s.log, "", nil) // SIGHUP does not end the server
		s.closes = append(s.closes, func() error { stop(); return nil })
		return audit.NewSlogSink(slog.NewJSONHandler(stderr, nil), nil), nil
	}
	js, err := audit.OpenJSONL(cfg.auditPath, nil)
	if err != nil {
		return nil, err
	}
	stop := hangup.Reopen(s.log, cfg.auditPath, js) // for log rotation
	s.closes = append(s.closes, js.Close, func() error { stop(); return nil })
	return js, nil
}

// describe states a write for the human asked to confirm it (the admin
// writes) and for the preview of a dry run (every write). The amounts are
// the values the gateway gets, spelled plainly (99.90 EUR, 1000 units),
// never as the model wrote them (9.99e1, 1e3). The action stands alone on
// the first line; the model's free text (a reason) follows, quoted (see
// quoteText), only on a line of its own that says whose words they are, so
// that no quote or phrase in it reads as the server's: a reason holds no
// line break (its pattern refuses them, and the guard would show one as
// \n).
func describe(tool string, args map[string]any) string {
	switch tool {
	case "update_cart":
		if n, ok := integer(args, "quantity"); ok && n == 0 {
			return fmt.Sprintf("remove %v from your cart", args["sku"])
		}
		return fmt.Sprintf("set the quantity of %v in your cart to %v", args["sku"], intArg(args, "quantity"))
	case "admin_set_price":
		return fmt.Sprintf("set the price of %v to %v EUR", args["sku"], priceArg(args, "price"))
	case "admin_set_stock":
		return fmt.Sprintf("set the stock of %v to %v units", args["sku"], intArg(args, "stock"))
	case "admin_disable_user":
		return fmt.Sprintf("disable the account %v\n%s%s", args["userId"], reasonLabel, quoteText(fmt.Sprint(args["reason"])))
	}
	return "run " + tool
}

// quoteText quotes s, text the model wrote, for a person to read, as the
// guard's own prompts quote it (confirm.Quote): a quote of another script
// (” ʺ ＂), two apostrophes in a row, a character that shows as nothing or
// reads as an ASCII letter or digit are escaped, so that s does not seem to
// end before it does; and Markdown's markup characters are escaped too, so
// that a host rendering the question as Markdown shows no "<br>" of s as a
// new line, no "&quot;" as the quotation's end and no "<!--" hiding the
// rest.
func quoteText(s string) string { return confirm.Quote(s) }

// lineBreaks removes the line breaks that base64 decoding skips.
var lineBreaks = strings.NewReplacer("\r", "", "\n", "")

// reasonLabel opens the prompt's line of the reason the model gave.
const reasonLabel = "reason, in the caller's words: "

// parseAuditKey reads the audit key: hex, at least 32 hex digits. Line
// breaks inside it (xxd -p wraps hex at 60 digits) are skipped, as in the
// confirmation key (parseKey).
func parseAuditKey(v string) ([]byte, error) {
	b, err := hex.DecodeString(lineBreaks.Replace(strings.TrimSpace(v)))
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("%s: want at least 32 hex digits", auditKeyEnv)
	}
	return b, nil
}

// parseKey reads a confirmation key in hex or base64, at least
// confirm.MinSecretLen bytes. A value of hex digits only is hex: read as
// base64, 48 hex digits (24 bytes, too short) would pass as 36 bytes. Line
// breaks inside it (xxd -p wraps hex at 60 digits) are skipped, as base64
// skips them.
func parseKey(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if digits := lineBreaks.Replace(v); digits != "" && strings.Trim(digits, "0123456789abcdefABCDEF") == "" {
		if b, err := hex.DecodeString(digits); err == nil && len(b) >= confirm.MinSecretLen {
			return b, nil
		}
		return nil, fmt.Errorf("%s: want at least %d bytes in hex or base64", confirmKeyEnv, confirm.MinSecretLen)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) >= confirm.MinSecretLen {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s: want at least %d bytes in hex or base64", confirmKeyEnv, confirm.MinSecretLen)
}
