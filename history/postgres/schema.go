package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// migrations bring the schema forward: migrations[i] takes a database from
// schema version i to i+1. Each runs in its own transaction together with
// the version update. Append new migrations; never edit a released one.
//
// Every value that comes from a caller and must survive exactly (IDs, text,
// summaries, configuration) is bytea: PostgreSQL text rejects NUL bytes and
// invalid UTF-8, which Go strings may hold. Only the store's own vocabulary
// (roles, statuses, triggers, the lease holder's name) is text.
var migrations = []string{
	// 1: the watermark schema and the session leases.
	`
CREATE TABLE sessions (
	id            bytea  NOT NULL PRIMARY KEY,
	version       bigint NOT NULL,
	config        bytea,                      -- opaque JSON; NULL means none
	summary       bytea  NOT NULL DEFAULT '',
	active_from   bigint NOT NULL DEFAULT 0,  -- messages at pos >= active_from are Active
	archived      bigint NOT NULL DEFAULT 0,  -- messages before the watermark
	message_count bigint NOT NULL DEFAULT 0,  -- messages ever appended (next seq)
	next_pos      bigint NOT NULL DEFAULT 0   -- next timeline position
);

CREATE TABLE messages (
	session_id   bytea   NOT NULL REFERENCES sessions (id),
	pos          bigint  NOT NULL, -- timeline position
	seq          bigint  NOT NULL, -- index among the session's messages
	id           bytea   NOT NULL,
	role         text    NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
	text         bytea   NOT NULL,
	tool_calls   bytea,            -- JSON array; NULL means none
	tool_call_id bytea   NOT NULL DEFAULT '',
	steer        boolean NOT NULL DEFAULT false,
	created_at   bigint,           -- unix nanoseconds; NULL means zero
	PRIMARY KEY (session_id, pos)
);

CREATE UNIQUE INDEX messages_seq ON messages (session_id, seq);

CREATE TABLE compactions (
	session_id    bytea  NOT NULL REFERENCES sessions (id),
	compact_id    bytea  NOT NULL,
	pos           bigint NOT NULL, -- timeline position
	status        text   NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled', 'nothing_to_compact')),
	trigger_kind  text   NOT NULL CHECK (trigger_kind IN ('manual', 'auto')),
	instructions  bytea  NOT NULL DEFAULT '',
	summary       bytea  NOT NULL DEFAULT '',
	error         bytea  NOT NULL DEFAULT '',
	started_at    bigint,
	finished_at   bigint,
	-- completed only: the segment and the positions of its first and last message
	segment_id    bytea,
	from_pos      bigint,
	to_pos        bigint,
	input_tokens  bigint,
	output_tokens bigint,
	PRIMARY KEY (session_id, compact_id)
);

CREATE UNIQUE INDEX compactions_segment ON compactions (session_id, segment_id) WHERE segment_id IS NOT NULL;
CREATE INDEX compactions_pos ON compactions (session_id, pos);
CREATE INDEX compactions_in_progress ON compactions (session_id, pos) WHERE status = 'in_progress';

-- One row per session ever leased; never deleted, so tokens only grow. No
-- foreign key: a session can be leased before it is created.
CREATE TABLE leases (
	session_id bytea       NOT NULL PRIMARY KEY,
	holder     text        NOT NULL,           -- '' once released
	token      bigint      NOT NULL,           -- the fencing token
	expires_at timestamptz NOT NULL            -- live while expires_at > now()
);
`,
	// 2: session metadata for listing. Existing sessions take their times
	// from their messages.
	`
ALTER TABLE sessions
	ADD COLUMN title      bytea  NOT NULL DEFAULT '',
	ADD COLUMN cwd        bytea  NOT NULL DEFAULT '',
	ADD COLUMN created_at bigint NOT NULL DEFAULT 0,  -- unix nanoseconds
	ADD COLUMN updated_at bigint NOT NULL DEFAULT 0;  -- of the last write

UPDATE sessions SET
	created_at = COALESCE((SELECT min(created_at) FROM messages WHERE session_id = sessions.id), 0),
	updated_at = COALESCE((SELECT max(created_at) FROM messages WHERE session_id = sessions.id), 0);

CREATE INDEX sessions_updated ON sessions (updated_at, id);
CREATE INDEX sessions_cwd_updated ON sessions (cwd, updated_at, id);
`,
	// 3: compaction controls: the overflow trigger, what made a segment's
	// summary, its token figures, and undo (Uncompact). An undone segment
	// keeps its row and its messages; undo_pos is the timeline position of
	// the undo. commit_version is the session version the commit made:
	// Segments lists segments in commit order (older rows, NULL, were
	// committed first, in from_pos order).
	`
ALTER TABLE compactions DROP CONSTRAINT compactions_trigger_kind_check;
ALTER TABLE compactions ADD CONSTRAINT compactions_trigger_kind_check CHECK (trigger_kind IN ('manual', 'auto', 'overflow'));
ALTER TABLE compactions
	ADD COLUMN summary_provider bytea  NOT NULL DEFAULT '',
	ADD COLUMN summary_model    bytea  NOT NULL DEFAULT '',
	ADD COLUMN context_before   bigint NOT NULL DEFAULT 0,
	ADD COLUMN context_after    bigint NOT NULL DEFAULT 0,
	ADD COLUMN undo_id          bytea,  -- NULL while the segment stands
	ADD COLUMN undo_pos         bigint,
	ADD COLUMN undone_at        bigint, -- unix nanoseconds
	ADD COLUMN restored         bigint, -- messages the undo put back
	ADD COLUMN commit_version   bigint;

CREATE UNIQUE INDEX compactions_undo ON compactions (session_id, undo_id) WHERE undo_id IS NOT NULL;
`,
	// 4: the event log (history.EventLog): a session's timeline events, so
	// that sequence numbers and replay survive reopen.
	`
ALTER TABLE sessions ADD COLUMN last_seq bigint NOT NULL DEFAULT 0; -- Through of the last batch

CREATE TABLE events (
	session_id bytea  NOT NULL REFERENCES sessions (id),
	seq        bigint NOT NULL,
	at         bigint NOT NULL, -- unix nanoseconds
	kind       text   NOT NULL,
	data       bytea  NOT NULL,
	PRIMARY KEY (session_id, seq)
);
`,
	// 5: the search index (history.Reader.Search, search.go): a message's
	// words as a tsvector ('english' configuration) under a GIN index, and
	// the tool a tool result answers, written by the Append that stores the
	// message. The existing messages are indexed here as Append indexes
	// them (history/internal/textsearch.DocOf and ToolName).
	migrationSearch,
	// 6: a segment's fidelity (history.Fidelity).
	`
ALTER TABLE compactions
	ADD COLUMN fidelity_facts   bigint NOT NULL DEFAULT 0,
	ADD COLUMN fidelity_kept    bigint NOT NULL DEFAULT 0,
	ADD COLUMN fidelity_missing bytea[]; -- NULL means none
`,
	// 7: a user message's attachments (history.Attachment), a JSON array
	// (history/internal/sqlstore.Attachments); NULL means none.
	`ALTER TABLE messages ADD COLUMN attachments bytea;`,
	// 8: configuration changes in the timeline (history.Writer.RecordConfig).
	migrationConfigs,
	// 9: the timeline position below which every entry has its event in
	// the log (history.EventBatch.Covers). Sessions stored before take 0:
	// the next open logs the events of their whole timeline.
	`ALTER TABLE sessions ADD COLUMN log_covers bigint NOT NULL DEFAULT 0;`,
	// 10: the usage ledger (history.Ledger): one row per provider
	// response, in num order (the order recorded).
	migrationUsage,
	// 11: the window read (history.Reader.Window, window.go) finds a
	// message by its ID.
	`CREATE INDEX messages_id ON messages (session_id, id);`,
	// 12: forks (history.Catalog.Fork, fork.go): a fork names its parent
	// and the parent's timeline position it was made at, and how many
	// messages it inherits; a session deleted while forks still read it is
	// kept, marked deleted. Existing sessions are no forks.
	migrationForks,
	// 13: the file ledger (docs/compaction.md, "Files"): a tool message's
	// files and a segment's files, JSON arrays (history/internal/sqlstore,
	// Files and FileStates); NULL means none.
	`
ALTER TABLE messages ADD COLUMN files bytea;
ALTER TABLE compactions ADD COLUMN files bytea;
`,
	// 14: an assistant message's thoughts (history.Thought), a JSON array
	// (history/internal/sqlstore.Thoughts); NULL means none.
	`ALTER TABLE messages ADD COLUMN thoughts bytea;`,
	// 15: the vectors of an embedder (history.VectorIndex, vectors.go):
	// one per message a session's embedder embedded, keyed by the
	// message's timeline position in the session that wrote it; vec is
	// the vecsearch encoding, empty for a message with nothing to embed.
	`
CREATE TABLE vectors (
	session_id bytea  NOT NULL REFERENCES sessions (id),
	pos        bigint NOT NULL, -- the message's timeline position
	vec        bytea  NOT NULL,
	PRIMARY KEY (session_id, pos)
);
`,
	// 16: forks copy no message (chain.go): the copies of messages that
	// forks made before go (migrationForkChains).
	migrationForkChains,
	// 17: the sums of the usage ledger (history.Ledger.UsageTotals),
	// kept by a trigger as records are inserted, so that an open reads a
	// few rows, not the whole ledger.
	migrationUsageTotals,
	// 18: each session's word postings (search.go): one row per word of a
	// message's tsvector, so that a word's newest messages are read in
	// message-number order without the rest (migrationPostings).
	migrationPostings,
	// 19: a session's newest ledger record of a purpose
	// (history.Ledger.LastUsage) is read through this index, without the
	// rest of the ledger: what an open takes its context figure from.
	`CREATE INDEX usage_records_purpose ON usage_records (session_id, purpose, num);`,
}

// migrationPostings is migration 18: postings holds, for each message row,
// one row per lexeme of its search column, keyed by (session_id, word,
// seq), so that a search reads a word's newest messages with a backward
// range scan of the primary key (the GIN index must read a word's whole
// posting list, and a scan of messages_seq filters every newer message
// without the word). Append writes a message's postings in its INSERT's
// statement; Delete removes and moves them with the messages. word is
// compared as bytes (COLLATE "C"): only equality is asked. The rows of
// the messages stored before are written here from their search column.
const migrationPostings = `
CREATE TABLE postings (
	seq        bigint NOT NULL, -- the message's number in the session that holds its row
	session_id bytea  NOT NULL,
	word       text   COLLATE "C" NOT NULL, -- a lexeme of the message's search column
	PRIMARY KEY (session_id, word, seq)
);

INSERT INTO postings (seq, session_id, word)
SELECT m.seq, m.session_id, w FROM messages m, unnest(tsvector_to_array(m.search)) AS w;
`

// migrationForkChains is migration 16. A fork made before held copies
// of its source's messages up to its fork point. A fork whose parent is
// the session it was made from (created before it; a deleted source's
// messages went with it) reads them from there now: its copies go. Any
// other fork's copies move to a hidden parent of its own, marked deleted,
// as Delete leaves a parent that forks read. The decisions are taken on
// the rows as they were, so the order of a chain's forks does not matter.
const migrationForkChains = `
CREATE TEMP TABLE sk_forks ON COMMIT DROP AS
SELECT f.id, f.fork_pos, f.fork_seq, f.created_at,
	'\x00'::bytea || convert_to('deleted-fork-', 'UTF8') || f.id AS hidden,
	EXISTS (SELECT 1 FROM sessions p WHERE p.id = f.fork_of AND p.created_at <= f.created_at) AS parent_holds
FROM sessions f WHERE f.fork_of IS NOT NULL;

DELETE FROM messages m USING sk_forks f
WHERE f.parent_holds AND m.session_id = f.id AND m.pos <= f.fork_pos;

INSERT INTO sessions (id, version, message_count, next_pos, created_at, updated_at, deleted)
SELECT f.hidden, 1, f.fork_seq, f.fork_pos + 1, f.created_at, f.created_at, true
FROM sk_forks f WHERE NOT f.parent_holds;

UPDATE messages m SET session_id = f.hidden
FROM sk_forks f WHERE NOT f.parent_holds AND m.session_id = f.id AND m.pos <= f.fork_pos;

UPDATE sessions s SET fork_of = f.hidden
FROM sk_forks f WHERE NOT f.parent_holds AND s.id = f.id;
`

// migrationUsageTotals is migration 17: usage_totals holds, for each
// session, one row per purpose and currency of its ledger and one per
// currency over every purpose (purpose ”). The trigger adds each inserted
// record to both as it is inserted (a record left out as a repeat fires
// nothing; a statement inserts its rows in the order of the batch), so
// the costs are added one at a time in the order recorded, as
// history.UsageTotal says. The ledgers recorded before are summed here
// once, by PostgreSQL's sum.
const migrationUsageTotals = `
CREATE TABLE usage_totals (
	session_id         bytea  NOT NULL REFERENCES sessions (id),
	purpose            bytea  NOT NULL, -- '' for every purpose
	currency           bytea  NOT NULL,
	requests           bigint NOT NULL,
	input_tokens       bigint NOT NULL,
	output_tokens      bigint NOT NULL,
	cache_read_tokens  bigint NOT NULL,
	cache_write_tokens bigint NOT NULL,
	cost               float8 NOT NULL,
	PRIMARY KEY (session_id, purpose, currency)
);

INSERT INTO usage_totals
SELECT session_id, p, currency, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(cost)
FROM (SELECT *, purpose AS p FROM usage_records UNION ALL SELECT *, ''::bytea AS p FROM usage_records) AS u
GROUP BY session_id, p, currency;

CREATE FUNCTION sessionkit_usage_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO usage_totals AS t VALUES (NEW.session_id, NEW.purpose, NEW.currency, 1,
		NEW.input_tokens, NEW.output_tokens, NEW.cache_read_tokens, NEW.cache_write_tokens, NEW.cost),
		(NEW.session_id, ''::bytea, NEW.currency, 1,
		NEW.input_tokens, NEW.output_tokens, NEW.cache_read_tokens, NEW.cache_write_tokens, NEW.cost)
	ON CONFLICT (session_id, purpose, currency) DO UPDATE SET requests = t.requests + 1,
		input_tokens = t.input_tokens + excluded.input_tokens, output_tokens = t.output_tokens + excluded.output_tokens,
		cache_read_tokens = t.cache_read_tokens + excluded.cache_read_tokens,
		cache_write_tokens = t.cache_write_tokens + excluded.cache_write_tokens, cost = t.cost + excluded.cost;
	RETURN NULL;
END
$$;

CREATE TRIGGER usage_totals_add AFTER INSERT ON usage_records FOR EACH ROW EXECUTE FUNCTION sessionkit_usage_totals_add();
`

// migrationForks is migration 12: the fork columns of sessions.
const migrationForks = `
ALTER TABLE sessions
	ADD COLUMN fork_of  bytea,                      -- the parent; NULL for none
	ADD COLUMN fork_pos bigint  NOT NULL DEFAULT -1, -- the parent's position forked at
	ADD COLUMN fork_seq bigint  NOT NULL DEFAULT 0,  -- messages inherited: the seq of the first own one
	ADD COLUMN fork_at  bytea   NOT NULL DEFAULT '', -- the message forked at; '' for the newest entry
	ADD COLUMN deleted  boolean NOT NULL DEFAULT false; -- deleted, kept while forks read it
CREATE INDEX sessions_fork_of ON sessions (fork_of) WHERE fork_of IS NOT NULL;
`

// migrationUsage creates the usage ledger (history.Ledger, usage.go). A
// record's ID is unique per session: a retried write records it once.
const migrationUsage = `
CREATE TABLE usage_records (
	num                bigserial NOT NULL,
	session_id         bytea     NOT NULL REFERENCES sessions (id),
	id                 bytea     NOT NULL,
	purpose            bytea     NOT NULL,
	provider           bytea     NOT NULL,
	model              bytea     NOT NULL,
	turn_id            bytea     NOT NULL,
	compact_id         bytea     NOT NULL,
	input_tokens       bigint    NOT NULL,
	output_tokens      bigint    NOT NULL,
	cache_read_tokens  bigint    NOT NULL,
	cache_write_tokens bigint    NOT NULL,
	cost               float8    NOT NULL,
	currency           bytea     NOT NULL,
	at                 bigint, -- unix nanoseconds; NULL means zero
	PRIMARY KEY (session_id, id)
);
`

// migrationConfigs records configuration changes at their timeline
// positions (history.Writer.RecordConfig): data is the change's opaque JSON.
const migrationConfigs = `
CREATE TABLE configs (
	session_id bytea  NOT NULL REFERENCES sessions (id),
	pos        bigint NOT NULL, -- timeline position
	at         bigint,          -- unix nanoseconds; NULL means zero
	data       bytea  NOT NULL,
	PRIMARY KEY (session_id, pos)
);
`

// migrationSearch is migration 5. The words are split as
// history/internal/textsearch.Words splits them (at ASCII punctuation, white space
// and control characters; Words also at non-ASCII punctuation) before
// to_tsvector sees them. Text that is not UTF-8 (or holds NUL
// bytes, which PostgreSQL text refuses) is indexed without its non-ASCII
// bytes; Append indexes it with invalid bytes and NULs made spaces.
const migrationSearch = `
ALTER TABLE messages
	ADD COLUMN tool_name bytea    NOT NULL DEFAULT '',
	ADD COLUMN search    tsvector NOT NULL DEFAULT ''::tsvector;

CREATE FUNCTION pg_temp.sk_text(b bytea) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN convert_from(b, 'UTF8');
EXCEPTION WHEN others THEN
	RETURN regexp_replace(encode(b, 'escape'), '\\([0-7]{3}|\\)', ' ', 'g');
END $$;

CREATE FUNCTION pg_temp.sk_calls(calls bytea) RETURNS TABLE (ord bigint, call_id bytea, name bytea, args text) LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN QUERY SELECT x.o,
		COALESCE(convert_to(x.e->>'id', 'UTF8'), decode(x.e->>'id_base64', 'base64')),
		COALESCE(convert_to(x.e->>'name', 'UTF8'), decode(x.e->>'name_base64', 'base64')),
		COALESCE(x.e->>'arguments', '')
	FROM json_array_elements(convert_from(calls, 'UTF8')::json) WITH ORDINALITY AS x (e, o);
EXCEPTION WHEN others THEN
	RETURN;
END $$;

CREATE TEMP TABLE sk_call_names ON COMMIT DROP AS
SELECT m.session_id, m.pos, c.call_id, c.name
FROM messages m, pg_temp.sk_calls(m.tool_calls) c
WHERE m.role = 'assistant' AND m.tool_calls IS NOT NULL;
CREATE INDEX ON sk_call_names (session_id, call_id, pos);

UPDATE messages m SET tool_name = COALESCE((
	SELECT c.name FROM sk_call_names c
	WHERE c.session_id = m.session_id AND c.call_id = m.tool_call_id AND c.pos < m.pos
	ORDER BY c.pos DESC LIMIT 1), '')
WHERE m.role = 'tool';

UPDATE messages m SET search = to_tsvector('english', lower(regexp_replace(pg_temp.sk_text(m.text)
	|| COALESCE((SELECT string_agg(chr(10) || pg_temp.sk_text(c.name) || ' ' || c.args, '' ORDER BY c.ord) FROM pg_temp.sk_calls(m.tool_calls) c), '')
	|| chr(10) || pg_temp.sk_text(m.tool_name), '[[:space:][:punct:][:cntrl:]]+', ' ', 'g')));

CREATE INDEX messages_search ON messages USING gin (search);
DROP FUNCTION pg_temp.sk_calls(bytea);
DROP FUNCTION pg_temp.sk_text(bytea);
`

// migrationLock is the key of the transaction-scoped advisory lock that
// serializes migrations of one database across processes.
const migrationLock int64 = 0x5e55_1014_6b17_0001

// migrationLockTimeout is the lock_timeout of a migration's transaction: how
// long it waits for the migration lock, and for the strong lock of a
// statement such as ALTER TABLE, before it gives up and tries again
// (migrate). PostgreSQL queues every later statement on a table behind an
// ALTER TABLE waiting for it, so this is also the longest the other
// processes' calls wait behind one attempt.
const migrationLockTimeout = 100 * time.Millisecond

// migrationRetry is the first and the longest pause between two attempts
// of a migration that gave up waiting for a lock; the pause doubles.
var migrationRetry = [2]time.Duration{50 * time.Millisecond, 2 * time.Second}

// migrate brings the schema of the database up to len(m), one transaction
// per migration of m (the package's migrations but in tests), each with
// the store's bounds (txBounds) but for a shorter lock_timeout.
//
// A database whose schema is current is only read: no lock is taken, so a
// process stopped inside a migration, or one that holds the migration lock
// (a tool's session), keeps no Open waiting. Otherwise each transaction
// first takes the advisory lock and re-reads the version, so two processes
// opening a new database at once do not both migrate. A migration waits
// at most migrationLockTimeout for a lock (the advisory lock, or a table
// that a reader stopped in its transaction holds): then it rolls back,
// letting the calls queued behind it through, and tries again after a
// pause, until ctx ends (an error wrapping history.ErrBusy).
func migrate(ctx context.Context, pool *pgxpool.Pool, m []string, bounds string) error {
	switch current, err := schemaVersion(ctx, pool); {
	case err != nil && !isUndefinedTable(err):
		return err
	case err == nil && current == len(m):
		return nil
	}
	s := sqlstore.Schema{
		Migrations: m,
		SetVersion: `INSERT INTO schema_version (version) VALUES ($1)`,
		Newer: func(version, known int) error {
			return fmt.Errorf("%w: database schema version %d, known up to %d", ErrNewerSchema, version, known)
		},
		Begin: func(ctx context.Context) (sqlstore.MigrationTx, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return nil, fmt.Errorf("schema: %w", err)
			}
			t := migrationTx{tx}
			// The store's bounds (a migrator that stops holds its locks
			// no longer than its leases live), with a shorter lock wait.
			err = t.Exec(ctx, fmt.Sprintf(`%s; SET LOCAL lock_timeout = %d`, bounds, migrationLockTimeout.Milliseconds()))
			if err == nil {
				err = t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock)
			}
			if err == nil {
				err = t.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`)
			}
			if err != nil {
				t.Rollback(ctx)
				return nil, fmt.Errorf("schema: %w", err)
			}
			return t, nil
		},
	}
	pause := migrationRetry[0]
	var busy error // the last lock wait that the lock timeout ended
	for {
		err := s.Migrate(ctx)
		switch {
		case isLockTimeout(err):
			busy = err
		case err != nil && busy != nil && ctx.Err() != nil:
			return migrationBusy(ctx, busy)
		default:
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return migrationBusy(ctx, busy)
		case <-t.C:
		}
		pause = min(2*pause, migrationRetry[1])
	}
}

// migrationBusy is the error of a migration whose context ended while it
// tried again and again to have a lock; last is the last lock timeout.
func migrationBusy(ctx context.Context, last error) error {
	be := &history.BusyError{Op: "migrate", Waited: migrationLockTimeout}
	return fmt.Errorf("%w: another transaction kept a lock the migration needs until the open's context ended (%w): %w", be, ctx.Err(), last)
}

// isUndefinedTable reports whether err is PostgreSQL's undefined_table (a
// database without a schema_version table yet).
func isUndefinedTable(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "42P01"
}

// migrationTx is a transaction of sqlstore.Schema.Migrate.
type migrationTx struct{ tx pgx.Tx }

// Exec implements sqlstore.MigrationTx.
func (t migrationTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.Exec(ctx, query, args...)
	return err
}

// Version implements sqlstore.MigrationTx.
func (t migrationTx) Version(ctx context.Context) (int, error) { return schemaVersion(ctx, t.tx) }

// Commit commits even a transaction that found the schema current: it keeps
// a schema_version table it created.
func (t migrationTx) Commit(ctx context.Context, _ bool) error { return t.tx.Commit(ctx) }

// Rollback implements sqlstore.MigrationTx.
func (t migrationTx) Rollback(ctx context.Context) { _ = t.tx.Rollback(ctx) }

// schemaVersion reads the schema version; a database without one is at 0.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("schema: %w", err)
	}
	return v, nil
}

// checkReadable is the schema check of OpenReadOnly, in a read-only
// transaction: the database must hold a store at the schema version of this
// package. A newer one is refused with ErrNewerSchema, an older one (which
// this package would have to migrate) and a database without a store with
// errors naming the versions.
func checkReadable(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	version := 0
	if exists {
		if version, err = schemaVersion(ctx, tx); err != nil {
			return err
		}
	}
	switch known := len(migrations); {
	case version == 0:
		return fmt.Errorf("%w: the database holds no sessionkit store (no schema version)", ErrNotAStore)
	case version > known:
		return fmt.Errorf("%w: database schema version %d, this version reads versions up to %d", ErrNewerSchema, version, known)
	case version < known:
		return fmt.Errorf("%w: database schema version %d, this version reads version %d (an agent of this version migrates the database when it opens it)", ErrOlderSchema, version, known)
	}
	return nil
}
