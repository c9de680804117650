package audit

// UsesDatabaseSQL reports whether s has fallen back from the native SQLite
// batch writer to database/sql (its connections are not modernc.org/sqlite's).
func UsesDatabaseSQL(s *SQLSink) bool { return s.noNative.Load() }
