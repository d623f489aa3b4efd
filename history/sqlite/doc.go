// Package sqlite is the embedded default [history.Store]: the canonical
// history of many sessions in one SQLite file, through the pure-Go driver
// modernc.org/sqlite (no cgo).
//
//	store, err := sqlite.Open("sessions.db")
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	snap, err := store.Create(ctx, history.NewSession{ID: "s1"})
//	if err != nil {
//		return err
//	}
//	v, err := store.Append(ctx, "s1", snap.Version, []history.Message{
//		{ID: "m1", Role: history.RoleUser, Text: "hi"},
//	})
//
// The store follows the contract of [history.Store] exactly as
// history/memstore does, and passes the same conformance suite
// (history/historytest). The design is explained in docs/storage.md.
//
// # Schema
//
// Five tables. schema_version holds the version of the schema, brought
// forward by ordered migrations when the file is opened. sessions holds one
// row per session: its version, configuration, retained summary, the
// watermark (active_from: the timeline position from which messages are
// Active), the number of archived and of all messages, and next_pos, the
// session's timeline position counter. messages is append-only and keyed by
// (session_id, pos); a second unique key (session_id, seq) numbers a
// session's messages 0, 1, 2, …, and each message is one body value that
// holds all its fields. compactions holds every compaction attempt
// keyed by (session_id, compact_id), at its timeline position; a completed
// one also holds its segment ID, the position range of the messages it
// archived and the token usage of its summary call. leases holds one row
// per leased session: its holder, fencing token and expiry. sessions also
// holds each session's title, working directory and creation and update
// times, for [Store.ListSessions].
//
// A compaction commit never copies or deletes a message: it completes the
// compaction row, records the archived range, and moves the watermark. Its
// write transaction touches a fixed number of rows whatever it archives, and
// opening a session reads only the messages at or after the watermark.
//
// # Durability
//
// The file is in WAL mode with synchronous=FULL, so every write is durable
// when its call returns, and a process killed at any instant reopens to the
// state before or after each write, never a mix. A compaction that was in
// progress when its process stopped stays in progress in the file until
// [Store.Recover] records it as failed; sessions call Recover when they
// reopen. A new file is created readable and writable by its owner only
// (mode 0600), and SQLite gives its -wal and -shm files the same mode.
//
// # Concurrency
//
// A Store is safe for concurrent use. All writes go through one dedicated
// connection, run by one committer goroutine per open file, and each is
// guarded by a compare-and-swap on the session's version; a write computed
// from another version fails with [history.ErrConflict].
//
// # Group commit
//
// Writes of different sessions that arrive while a transaction is being
// made durable are batched into the next BEGIN IMMEDIATE transaction: one
// COMMIT, one fsync for the batch, and every caller answered only once it
// is durable. A write that fails (a stale version, a fenced lease, a
// constraint) fails alone: the batch runs again without it, each write then
// in a savepoint of its own, so that the others still commit. A write that
// is alone waits for nobody. Reads use a separate pool of
// read-only connections, and every read of several statements (Load,
// Segments, Timeline) runs in one read transaction, so it sees one consistent
// state even while another goroutine or process commits a compaction. Load,
// the read of every reopen, has read-only connections of its own, opened
// through SQLite's C interface without the driver's per-connection mutex
// (each is used by one goroutine at a time); at most [WithReadConns] of
// them are open. Several Stores, in one process or several, may open the
// same file.
//
// # Leases
//
// Store implements [history.Leaser] with the rules of history/postgres, so
// that several processes on one machine can share a file and serve each
// session from one process at a time: a session's lease is taken with
// [Store.Acquire] (session.New does it), every write through the lease's
// store checks the lease's fencing token in its own transaction, and the
// lease renews itself until it is released or lost. Each Store value is its
// own holder ([WithHolder]); another Store asking for a leased session gets a
// *[history.LeaseError] that names the holder.
package sqlite
