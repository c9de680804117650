package audit

// UsesDatabaseSQL reports whether s has fallen back from the native SQLite
// batch writer to database/sql (its connections are not modernc.org/sqlite's).
func UsesDatabaseSQL(s *SQLSink) bool { return s.noNative.Load() }

// SQLiteCheckpoints returns how many checkpoints s ran in the background.
func SQLiteCheckpoints(s *SQLSink) uint64 { return s.ckpt.runs.Load() }

// SQLiteCkptSyncEvery exports sqliteCkptSyncEvery.
const SQLiteCkptSyncEvery = sqliteCkptSyncEvery

// QuerySQLText returns the SELECT that QuerySQL runs for f, and its arguments.
func QuerySQLText(d Dialect, f Filter) (string, []any) { return querySQL(d, f) }
