// Package pgtest holds the tests of the audit SQL sink against a real
// PostgreSQL server (started by internal/testsvc) through the pgx
// database/sql driver. They live apart from package audit so that the
// driver is a test-only dependency of this directory alone.
package pgtest
