// Package postgres is a [history.Store] on PostgreSQL, for sessions that
// several processes share: the canonical history of many sessions in one
// database, through github.com/jackc/pgx/v5, with leases that let exactly
// one process at a time serve a session ([history.Leaser]).
//
//	store, err := postgres.Open(ctx, "postgres://user:password@host/sessions")
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	lease, err := store.Acquire(ctx, "s1") // fails with history.ErrLeased while another process serves s1
//	if err != nil {
//		return err
//	}
//	defer lease.Release(ctx)
//	s := lease.Store() // writes checked against the lease's fencing token
//	snap, err := s.Create(ctx, history.NewSession{ID: "s1"})
//
// A program that logs or prints the URL it opened names it with [Redact],
// which hides every password in it (user info, password= and sslpassword=
// in the query or a key=value string).
//
// The store follows the contract of [history.Store] exactly as
// history/sqlite does, with the same watermark design (docs/storage.md
// explains it for SQLite; the tables, counters and commit transaction here
// are the same), and passes the same conformance suite
// (history/historytest).
//
// # Schema
//
// Five tables. schema_version holds the version of the schema, brought
// forward by ordered migrations when a Store opens the database (migrations
// of concurrent openers serialize on a transaction-scoped advisory lock).
// sessions holds one row per session: its version, configuration, retained
// summary, the watermark (active_from: the timeline position from which
// messages are Active), the number of archived and of all messages, and
// next_pos, the session's timeline position counter. messages is
// append-only, keyed by (session_id, pos), with a second unique key
// (session_id, seq) numbering a session's messages 0, 1, 2, …. compactions
// holds every compaction attempt keyed by (session_id, compact_id), at its
// timeline position. leases holds one row per session ever leased: the
// holder's name, the fencing token and the expiry.
//
// Every value a caller gives that must come back exactly (IDs, message text,
// tool calls, configuration, summaries) is bytea, because PostgreSQL text
// rejects NUL bytes and invalid UTF-8; times are bigint unix nanoseconds.
//
// A compaction commit never copies or deletes a message: it completes the
// compaction row, records the archived range, and moves the watermark, in a
// fixed number of statements whatever it archives. Load reads only the
// messages at or after the watermark.
//
// # Transactions
//
// Every write is one READ COMMITTED transaction that starts with a
// compare-and-swap of the session's version (UPDATE … WHERE id = $1 AND
// version = $2); a write computed from another version fails with
// [history.ErrConflict] and changes nothing. Reads of several statements
// (Load, Segments, Timeline) run in one REPEATABLE READ, READ ONLY
// transaction, so each sees one committed state. A write is durable when it
// returns as far as the server's synchronous_commit setting makes it (on,
// by default).
//
// # Leases
//
// [Store.Acquire] takes a session's lease for a TTL ([WithLeaseTTL],
// default 15 s) judged by the database's clock, and renews it in the
// background every third of the TTL. Each new holder of a session gets a
// larger fencing token. Writes through [history.Lease] Store first read the
// session's lease row FOR SHARE in their own transaction and fail with
// [history.ErrFenced] unless it still carries their token and is live, so a
// holder that lost its lease (it stopped renewing, the database was
// unreachable, another process took over after the expiry) cannot write
// after its successor. Acquire refuses a live lease without waiting for its
// row lock. The Store's own writes (without a lease) fail with a
// *[history.LeaseError] on a session that someone holds, and work as usual
// on the others.
//
// # Bounded waits
//
// No call waits without bound for another process. Every transaction of
// the store sets a lock_timeout ([WithLockTimeout], default 1 s): a call that
// waits longer for a row or advisory lock another transaction holds gives
// up with a *[history.BusyError] (errors.Is [history.ErrBusy]) naming the
// session's lease holder, having written nothing. Every transaction also sets
// idle_in_transaction_session_timeout at 2/3 of the TTL, so a process
// stopped inside a transaction (SIGSTOP), a read as well as a write, holds
// its locks no longer than its lease lives. An Open that finds the schema
// current takes no lock; a migration waits at most 100 ms for a lock, then
// rolls back and tries again with back-off, so it never holds the other
// processes' calls queued behind its ALTER TABLE for longer. [Store.Close]
// returns within [CloseTimeout] even when the database does not answer.
package postgres
