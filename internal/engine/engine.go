// Package engine is trendfetch's application layer, every use case a method (docs/design.md §2,
// "The engine"): cmd/trendfetch parses flags, calls it, prints and maps errors to exit codes.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Options are the engine's inputs: Config (validated) is required, the rest may be zero.
type Options struct {
	Config *config.Config
	Log    zerolog.Logger // the engine's and the runs' log lines
	// LookupEnv reads API keys from the environment (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	Secrets   *secret.Set // masks stored text such as run reasons; ListenServe adds its token (nil: none)
	Notes     io.Writer   // one-line notes for people, "note: ..." (nil: discarded)
	Version   string      // the build's version, on the metrics' build info
}

// Engine is the application layer of one process, built by New. It holds no open resource.
type Engine struct {
	o   Options
	cfg *config.Config
	log zerolog.Logger
}

// New returns the engine of o.
func New(o Options) *Engine {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	o.Notes, o.Secrets = cmp.Or(o.Notes, io.Discard), cmp.Or(o.Secrets, &secret.Set{})
	return &Engine{o: o, cfg: o.Config, log: o.Log}
}

// UsageError is a mistake in how trendfetch was invoked or configured
// (exit 2): Err, and Hint, a command to try ("" = none).
type UsageError struct {
	Err  error
	Hint string
}

// ExitCode is exitcode.Usage.
func (e *UsageError) ExitCode() int { return exitcode.Usage }

// Error is Err's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError of hint and the formatted message.
func Usagef(hint, format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...), Hint: hint}
}

// SettingError is a setting whose value cannot be used, found when the engine opens something
// (exit 2): it names the setting and the problem, never a secret.
type SettingError struct {
	Setting string
	Err     error
}

// ExitCode is exitcode.Usage.
func (e *SettingError) ExitCode() int { return exitcode.Usage }

// Error is "SETTING: PROBLEM".
func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *SettingError) Unwrap() error { return e.Err }

// OpenStore opens the configured database (the one place the store is chosen), creating and
// migrating it, or readOnly: write methods failing, a missing database a *store.NoDatabaseError;
// PostgreSQL within store.OpenTimeout.
// A PostgreSQL URL that cannot be used is a *SettingError naming store.url_file or database.
func (e *Engine) OpenStore(ctx context.Context, readOnly bool) (*store.Store, error) {
	open := store.Open
	if readOnly {
		open = store.OpenReadOnly
	}
	st, err := open(ctx, e.cfg.Database)
	var ue *store.URLError
	if !errors.As(err, &ue) {
		return st, err
	}
	setting := "store.url_file " + e.cfg.Store.URLFile
	if e.cfg.Store.URLFile == "" {
		s := config.Lookup("database")
		setting = fmt.Sprintf("%s (--%s, %s)", s.Key, s.Flag, s.Env)
	}
	return st, &SettingError{Setting: setting, Err: ue}
}

// CopyFrom copies the SQLite dataset at path into the configured PostgreSQL database and
// returns the rows written per table (store.Store.CopyFrom); opening PostgreSQL is bounded
// (store.OpenTimeout). Errors: a *SettingError when the
// database is not a PostgreSQL URL or path holds no trendfetch SQLite database; the stores'.
func (e *Engine) CopyFrom(ctx context.Context, path string) ([]store.Copied, error) {
	if db := config.Lookup("database"); store.EngineOf(e.cfg.Database) != store.PostgreSQL {
		return nil, &SettingError{Setting: "database", Err: fmt.Errorf("copy writes into PostgreSQL: set --database, %s or store.url_file to a postgres:// URL", db.Env)}
	}
	if store.EngineOf(path) == store.PostgreSQL { // not echoed: it may hold a password
		return nil, &SettingError{Setting: "--from", Err: errors.New("copy reads a SQLite file, not a PostgreSQL URL")}
	}
	src, err := store.OpenReadOnly(ctx, path)
	if errors.As(err, new(*store.NoDatabaseError)) {
		return nil, &SettingError{Setting: "--from " + path, Err: errors.New("no trendfetch SQLite database there: give the path of its file (trendfetch.db)")}
	} else if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := e.OpenStore(ctx, false)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return dst.CopyFrom(ctx, src)
}

// OpenLimiter builds the configured quota limiter (quota.sqlite.path or quota.redis); readOnly
// opens the embedded backend without creating or migrating anything (read-only media).
func (e *Engine) OpenLimiter(readOnly bool) (*quota.Limiter, error) {
	buckets, costs, err := e.cfg.Limits()
	if err != nil {
		return nil, err
	}
	var backend quota.Backend
	if e.cfg.Quota.Backend == "redis" {
		backend, err = e.openRedisBackend()
	} else {
		backend, err = quota.NewSQLite(e.cfg.Quota.SQLite.Path, readOnly)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %s quota backend: %w", e.cfg.Quota.Backend, err)
	}
	lim, err := quota.New(backend, buckets, costs)
	if err != nil {
		backend.Close()
	}
	return lim, err
}

// quotaDBMissing reports (and notes) that the embedded quota backend's database does not
// exist yet: the commands that only read then report nothing spent or held, creating nothing.
func (e *Engine) quotaDBMissing() bool {
	if e.cfg.Quota.Backend != "sqlite" {
		return false
	}
	if _, err := os.Stat(e.cfg.Quota.SQLite.Path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fmt.Fprintf(e.o.Notes, "note: no quota database at %s yet: nothing spent or held through it\n", e.cfg.Quota.SQLite.Path)
	return true
}

// openRedisBackend is the Redis quota backend, with quota.redis.wait_replicas; lazy: an
// unreachable Redis surfaces on the first decision, where each call site's policy applies.
func (e *Engine) openRedisBackend() (quota.Backend, error) {
	client, err := e.openRedisClient()
	if err != nil {
		return nil, err
	}
	rc := e.cfg.Quota.Redis
	return quota.NewRedis(client, rc.WaitReplicas, rc.WaitTimeout.Std()), nil
}

// openRedisClient connects to the configured Redis (URL, Sentinel or Cluster); a URL redisconn
// refuses is a *SettingError. go-redis logs at debug: the limiter reports backend failures.
func (e *Engine) openRedisClient() (redis.UniversalClient, error) {
	redis.SetLogger(redisLogger{e.log})
	rc := e.cfg.Quota.Redis
	s := rc.Sentinel
	client, err := redisconn.New(rc.URL, rc.Cluster, redisconn.Sentinel{Master: s.Master, Addrs: s.Addrs, Username: s.Username, Password: s.Password})
	if err != nil { // redisconn's message names the problem, never the URL
		u := config.Lookup("quota.redis.url")
		return nil, &SettingError{Setting: u.Key + " (" + u.Env + " or " + u.Secret + ")", Err: errors.New(strings.TrimPrefix(err.Error(), "redisconn: "))}
	}
	return client, nil
}

// redisLogger adapts zerolog to go-redis's internal logging interface.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug().Str("component", "go-redis").Msgf(format, v...)
}
