package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// migrations bring the schema forward: migrations[i] takes a file from
// schema version i to i+1. Each runs in its own transaction together with the
// version update. Append new migrations; never edit a released one.
var migrations = []string{
	// 1: the watermark schema.
	`
CREATE TABLE sessions (
	id            TEXT    NOT NULL PRIMARY KEY,
	version       INTEGER NOT NULL,
	config        BLOB,              -- opaque JSON; NULL means none
	summary       TEXT    NOT NULL DEFAULT '',
	active_from   INTEGER NOT NULL DEFAULT 0, -- messages at pos >= active_from are Active
	archived      INTEGER NOT NULL DEFAULT 0, -- messages before the watermark
	message_count INTEGER NOT NULL DEFAULT 0, -- messages ever appended (next seq)
	next_pos      INTEGER NOT NULL DEFAULT 0  -- next timeline position
) WITHOUT ROWID;

CREATE TABLE messages (
	session_id   TEXT    NOT NULL REFERENCES sessions (id),
	pos          INTEGER NOT NULL, -- timeline position
	seq          INTEGER NOT NULL, -- index among the session's messages
	id           TEXT    NOT NULL,
	role         TEXT    NOT NULL,
	text         TEXT    NOT NULL,
	tool_calls   TEXT,             -- JSON; NULL means none
	tool_call_id TEXT    NOT NULL DEFAULT '',
	steer        INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER,          -- unix nanoseconds; NULL means zero
	PRIMARY KEY (session_id, pos)
) WITHOUT ROWID;

CREATE UNIQUE INDEX messages_seq ON messages (session_id, seq);

CREATE TABLE compactions (
	session_id    TEXT    NOT NULL REFERENCES sessions (id),
	compact_id    TEXT    NOT NULL,
	pos           INTEGER NOT NULL, -- timeline position
	status        TEXT    NOT NULL,
	trigger_kind  TEXT    NOT NULL, -- manual or auto
	instructions  TEXT    NOT NULL DEFAULT '',
	summary       TEXT    NOT NULL DEFAULT '',
	error         TEXT    NOT NULL DEFAULT '',
	started_at    INTEGER,
	finished_at   INTEGER,
	-- completed only: the segment and the positions of its first and last message
	segment_id    TEXT,
	from_pos      INTEGER,
	to_pos        INTEGER,
	input_tokens  INTEGER,
	output_tokens INTEGER,
	PRIMARY KEY (session_id, compact_id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX compactions_segment ON compactions (session_id, segment_id) WHERE segment_id IS NOT NULL;
CREATE INDEX compactions_pos ON compactions (session_id, pos);
CREATE INDEX compactions_in_progress ON compactions (session_id, pos) WHERE status = 'in_progress';
`,
	// 2: session metadata for listing, and the session leases. Existing
	// sessions take their times from their messages.
	`
ALTER TABLE sessions ADD COLUMN title      TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN cwd        TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds
ALTER TABLE sessions ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0; -- of the last write

UPDATE sessions SET
	created_at = COALESCE((SELECT min(created_at) FROM messages WHERE session_id = sessions.id), 0),
	updated_at = COALESCE((SELECT max(created_at) FROM messages WHERE session_id = sessions.id), 0);

CREATE INDEX sessions_updated ON sessions (updated_at, id);
CREATE INDEX sessions_cwd_updated ON sessions (cwd, updated_at, id);

-- One row per session ever leased; never deleted, so tokens only grow. No
-- foreign key: a session can be leased before it is created.
CREATE TABLE leases (
	session_id TEXT    NOT NULL PRIMARY KEY,
	holder     TEXT    NOT NULL, -- '' once released
	host       TEXT    NOT NULL, -- the holder's machine and process, to tell
	pid        INTEGER NOT NULL, -- a holder that is gone
	token      INTEGER NOT NULL, -- the fencing token
	expires_at INTEGER NOT NULL  -- unix nanoseconds; live while expires_at > now
) WITHOUT ROWID;
`,
	// 3: compaction controls: what made a segment's summary, its token
	// figures, and undo (Uncompact). An undone segment keeps its row and
	// its messages; undo_pos is the timeline position of the undo.
	`
ALTER TABLE compactions ADD COLUMN summary_provider TEXT    NOT NULL DEFAULT '';
ALTER TABLE compactions ADD COLUMN summary_model    TEXT    NOT NULL DEFAULT '';
ALTER TABLE compactions ADD COLUMN context_before   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN context_after    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN undo_id          TEXT;    -- NULL while the segment stands
ALTER TABLE compactions ADD COLUMN undo_pos         INTEGER;
ALTER TABLE compactions ADD COLUMN undone_at        INTEGER; -- unix nanoseconds
ALTER TABLE compactions ADD COLUMN restored         INTEGER; -- messages the undo put back
-- the session version the commit made: Segments lists segments in commit
-- order (older rows, NULL, were committed first, in from_pos order)
ALTER TABLE compactions ADD COLUMN commit_version   INTEGER;

CREATE UNIQUE INDEX compactions_undo ON compactions (session_id, undo_id) WHERE undo_id IS NOT NULL;
`,
	// 4: a message's fields in one body column (encode.go, encodeBody), so
	// that reading a message is one column read. The messages are
	// rewritten in place, at the same positions.
	migrationBody,
	// 5: the event log (history.EventLog): a session's timeline events, so
	// that sequence numbers and replay survive reopen.
	`
ALTER TABLE sessions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0; -- Through of the last batch

CREATE TABLE events (
	session_id TEXT    NOT NULL REFERENCES sessions (id),
	seq        INTEGER NOT NULL,
	at         INTEGER NOT NULL, -- unix nanoseconds
	kind       TEXT    NOT NULL,
	data       BLOB    NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
`,
	// 6: the search index (history.Reader.Search, search.go): one FTS5 row per
	// message, indexed as it is appended, rowid num<<32 | seq, num a
	// session's number (sessions.num). The existing messages are indexed
	// here.
	migrationSearch,
	// 7: a segment's fidelity (history.Fidelity); missing is a JSON array
	// of strings.
	`
ALTER TABLE compactions ADD COLUMN fidelity_facts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN fidelity_kept  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN fidelity_missing TEXT;  -- NULL means none
`,
	// 8: a user message's attachments (history.Attachment) in its body,
	// under the marker 'a' (encode.go). No row changes: the version is
	// what makes a sessionkit that does not know the marker leave the
	// file alone (ErrNewerSchema) instead of reading bodies it would find
	// malformed.
	`SELECT 1;`,
	// 9: configuration changes in the timeline (history.Writer.RecordConfig).
	migrationConfigs,
	// 10: the timeline position below which every entry has its event in
	// the log (history.EventBatch.Covers). Sessions stored before take 0:
	// the next open logs the events of their whole timeline.
	`ALTER TABLE sessions ADD COLUMN log_covers INTEGER NOT NULL DEFAULT 0;`,
	// 11: the usage ledger (history.Ledger): one row per provider
	// response, in rowid order (the order recorded).
	migrationUsage,
	// 12: the window read (history.Reader.Window, window.go) finds a
	// message by its ID: an index of the ID inside each body. No row
	// changes.
	`CREATE INDEX messages_id ON messages (session_id, ` + messageIDExpr + `);`,
	// 13: forks (history.Catalog.Fork, fork.go): a fork names its parent
	// and the parent's timeline position it was made at, and how many
	// messages it inherits; a session deleted while forks still read it is
	// kept, marked deleted. Existing sessions are no forks.
	migrationForks,
	// 14: the file ledger (docs/compaction.md, "Files"): a tool message's
	// files in its body under the marker 'f' (encode.go), which a
	// sessionkit that does not know it must not read (the version makes
	// it leave the file alone, ErrNewerSchema), and a segment's files, a
	// JSON array (sqlstore.FileStates); NULL means none.
	`ALTER TABLE compactions ADD COLUMN files TEXT;`,
	// 15: an assistant message's thoughts (history.Thought) in its body,
	// with its tool calls, under the marker 'r' (encode.go). No row
	// changes: the version makes a sessionkit that does not know the
	// marker leave the file alone (ErrNewerSchema).
	`SELECT 1;`,
	// 16: the search index's watermark (search.go): a session's messages
	// numbered below indexed have their message_fts rows; the ones after
	// it are searched from the messages table until the index catches up.
	// Every existing message is indexed.
	`ALTER TABLE sessions ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET indexed = message_count;`,
	// 17: the vectors of an embedder (history.VectorIndex, vectors.go).
	migrationVectors,
	// 18: the sums of the usage ledger (history.Ledger.UsageTotals),
	// kept by a trigger as records are inserted, so that an open reads a
	// few rows, not the whole ledger.
	migrationUsageTotals,
	// 19: a session's newest ledger record of a purpose
	// (history.Ledger.LastUsage) is read through this index, without the
	// rest of the ledger: what an open takes its context figure from. The
	// rowid, the order records were inserted in, ends every index entry.
	`CREATE INDEX usage_records_purpose ON usage_records (session_id, purpose);`,
	// 20: a message is found by its ID (history.Reader.Window, a fork's
	// point) through message_ids, which the indexer writes (indexer.go)
	// with the search rows, not through the index messages_id, which
	// every Append paid for (one more B-tree leaf per message). The
	// messages indexed for search (seq below the watermark) have their
	// rows here; the unindexed tail is looked up in messages (chain.go,
	// find).
	migrationMessageIDs,
}

// migrationMessageIDs is migration 20: one row per indexed message, its
// ID (as messageIDExpr reads it, a BLOB) and its timeline position, in the
// session whose rows hold it (a fork's inherited messages are its
// parent's rows, as in messages).
const migrationMessageIDs = `
CREATE TABLE message_ids (
	session_id TEXT    NOT NULL,
	id         BLOB    NOT NULL, -- the ID inside the message's body
	pos        INTEGER NOT NULL, -- the message's timeline position
	PRIMARY KEY (session_id, id, pos)
) WITHOUT ROWID;

INSERT INTO message_ids (session_id, id, pos)
SELECT m.session_id, ` + messageIDExpr + `, m.pos FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
WHERE m.seq < s.indexed;

DROP INDEX messages_id;
`

// migrationVectors is migration 17: one vector per message a session's
// embedder embedded, keyed by the message's timeline position in the
// session that wrote it (a fork's vectors of messages it inherits are
// its own rows, its parent's are read along the chain: chain.go). vec is
// the vecsearch encoding; an empty vec marks a message with nothing to
// embed.
const migrationVectors = `
CREATE TABLE vectors (
	session_id TEXT    NOT NULL REFERENCES sessions (id),
	pos        INTEGER NOT NULL, -- the message's timeline position
	vec        BLOB    NOT NULL,
	PRIMARY KEY (session_id, pos)
); -- a rowid table: a vector of 1536 dimensions is a row of 1.5 KiB, which a
   -- WITHOUT ROWID table would spread over overflow pages
`

// migrationForks is migration 13: the fork columns of sessions.
const migrationForks = `
ALTER TABLE sessions ADD COLUMN fork_of  TEXT;                       -- the parent; NULL for none
ALTER TABLE sessions ADD COLUMN fork_pos INTEGER NOT NULL DEFAULT -1; -- the parent's position forked at
ALTER TABLE sessions ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0;  -- messages inherited: the seq of the first own one
ALTER TABLE sessions ADD COLUMN fork_at  TEXT    NOT NULL DEFAULT ''; -- the message forked at; '' for the newest entry
ALTER TABLE sessions ADD COLUMN deleted  INTEGER NOT NULL DEFAULT 0;  -- deleted, kept while forks read it
CREATE INDEX sessions_fork_of ON sessions (fork_of) WHERE fork_of IS NOT NULL;
`

// migrationUsage creates the usage ledger (history.Ledger, usage.go). A
// record's ID is unique per session: a retried write records it once.
const migrationUsage = `
CREATE TABLE usage_records (
	session_id         TEXT    NOT NULL REFERENCES sessions (id),
	id                 TEXT    NOT NULL,
	purpose            TEXT    NOT NULL,
	provider           TEXT    NOT NULL,
	model              TEXT    NOT NULL,
	turn_id            TEXT    NOT NULL,
	compact_id         TEXT    NOT NULL,
	input_tokens       INTEGER NOT NULL,
	output_tokens      INTEGER NOT NULL,
	cache_read_tokens  INTEGER NOT NULL,
	cache_write_tokens INTEGER NOT NULL,
	cost               REAL    NOT NULL,
	currency           TEXT    NOT NULL,
	at                 INTEGER, -- unix nanoseconds; NULL means zero
	UNIQUE (session_id, id)
);
`

// migrationUsageTotals is migration 18: usage_totals holds, for each
// session, one row per purpose and currency of its ledger and one per
// currency over every purpose (purpose ”). The trigger adds each inserted
// record to both as it is inserted (a record left out as a repeat fires
// nothing), so the costs are added one at a time in the order recorded,
// as history.UsageTotal says. The ledgers recorded before are summed here
// once, by SQLite's sum.
const migrationUsageTotals = `
CREATE TABLE usage_totals (
	session_id         TEXT    NOT NULL REFERENCES sessions (id),
	purpose            TEXT    NOT NULL, -- '' for every purpose
	currency           TEXT    NOT NULL,
	requests           INTEGER NOT NULL,
	input_tokens       INTEGER NOT NULL,
	output_tokens      INTEGER NOT NULL,
	cache_read_tokens  INTEGER NOT NULL,
	cache_write_tokens INTEGER NOT NULL,
	cost               REAL    NOT NULL,
	PRIMARY KEY (session_id, purpose, currency)
) WITHOUT ROWID;

INSERT INTO usage_totals
SELECT session_id, p, currency, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), total(cost)
FROM (SELECT *, purpose AS p FROM usage_records UNION ALL SELECT *, '' AS p FROM usage_records)
GROUP BY session_id, p, currency;

CREATE TRIGGER usage_totals_add AFTER INSERT ON usage_records BEGIN
	INSERT INTO usage_totals VALUES (NEW.session_id, NEW.purpose, NEW.currency, 1,
		NEW.input_tokens, NEW.output_tokens, NEW.cache_read_tokens, NEW.cache_write_tokens, NEW.cost)
	ON CONFLICT (session_id, purpose, currency) DO UPDATE SET ` + addTotals + `;
	INSERT INTO usage_totals VALUES (NEW.session_id, '', NEW.currency, 1,
		NEW.input_tokens, NEW.output_tokens, NEW.cache_read_tokens, NEW.cache_write_tokens, NEW.cost)
	ON CONFLICT (session_id, purpose, currency) DO UPDATE SET ` + addTotals + `;
END;
`

// addTotals adds the row an upsert of usage_totals meant to insert to the
// row it found.
const addTotals = `requests = requests + 1,
		input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
		cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
		cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, cost = cost + excluded.cost`

// messageIDExpr is a message's ID as the body column holds it (encode.go,
// encodeBody): the bytes after the header, as many as its first length
// says. It is a BLOB (migration 4 left TEXT bodies, and substr counts bytes
// only in a BLOB). The index messages_id (migrations 12 to 19) and its
// lookup spelled it alike, so that SQLite found the one through the other;
// message_ids (migration 20) and the tail's lookup (chain.go, find) hold
// and compare the same bytes.
const messageIDExpr = `substr(CAST(body AS BLOB), 60, CAST(CAST(substr(CAST(body AS BLOB), 20, 10) AS TEXT) AS INTEGER))`

// migrationConfigs records configuration changes at their timeline
// positions (history.Writer.RecordConfig): data is the change's opaque JSON.
const migrationConfigs = `
CREATE TABLE configs (
	session_id TEXT    NOT NULL REFERENCES sessions (id),
	pos        INTEGER NOT NULL, -- timeline position
	at         INTEGER,          -- unix nanoseconds; NULL means zero
	data       BLOB    NOT NULL,
	PRIMARY KEY (session_id, pos)
) WITHOUT ROWID;
`

// migrationSearch is migration 6. It numbers the sessions, creates the
// FTS5 table and indexes every stored message as Append does
// (history/internal/textsearch.DocOf and ToolName): the text, the assistant's tool
// calls as "name arguments" lines, and a tool result's tool name, found
// among the calls of the assistant messages before it. The message fields
// come out of the body column as decodeBody reads them.
const migrationSearch = `
ALTER TABLE sessions ADD COLUMN num INTEGER; -- the session's number: its messages' rowids in message_fts
UPDATE sessions SET num = n.k FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM sessions) AS n WHERE n.id = sessions.id;
CREATE UNIQUE INDEX sessions_num ON sessions (num);

-- text: a message's searchable text; tool: the tool a tool result answers;
-- id, role and pos: what a search hit says of the message, so that a search
-- reads its candidates from this table alone
CREATE VIRTUAL TABLE message_fts USING fts5(text, tool, id UNINDEXED, role UNINDEXED, pos UNINDEXED,
	tokenize = 'porter unicode61 remove_diacritics 0');

CREATE TEMP TABLE search_src AS
WITH b AS (
	SELECT session_id, pos, seq, CAST(body AS BLOB) AS body, -- migration 4 left TEXT bodies: substr counts bytes in a BLOB
		CAST(CAST(substr(CAST(body AS BLOB), 20, 10) AS TEXT) AS INTEGER) AS n0,
		CAST(CAST(substr(CAST(body AS BLOB), 30, 10) AS TEXT) AS INTEGER) AS n1,
		CAST(CAST(substr(CAST(body AS BLOB), 40, 10) AS TEXT) AS INTEGER) AS n2,
		CAST(CAST(substr(CAST(body AS BLOB), 50, 10) AS TEXT) AS INTEGER) AS n3
	FROM messages
)
SELECT session_id, pos, seq,
	CAST(substr(body, 60, n0) AS TEXT) AS id,
	CAST(substr(body, 60 + n0, n1) AS TEXT) AS role,
	CAST(substr(body, 60 + n0 + n1, n2) AS TEXT) AS call_id,
	CASE WHEN n3 > 0 THEN CAST(substr(body, 60 + n0 + n1 + n2, n3) AS TEXT) ELSE '[]' END AS calls,
	CAST(substr(body, 60 + n0 + n1 + n2 + n3) AS TEXT) AS text
FROM b;

CREATE TEMP TABLE search_calls AS
SELECT s.session_id, s.pos, json_extract(j.value, '$.id') AS call_id, json_extract(j.value, '$.name') AS name
FROM search_src s, json_each(s.calls) j WHERE s.role = 'assistant';
CREATE INDEX temp.search_calls_id ON search_calls (session_id, call_id, pos);

INSERT INTO message_fts (rowid, text, tool, id, role, pos)
SELECT ss.num * 4294967296 + s.seq,
	s.text || COALESCE((SELECT group_concat(char(10) || json_extract(j.value, '$.name') || ' ' || COALESCE(json_extract(j.value, '$.arguments'), ''), '')
		FROM json_each(s.calls) j), ''),
	CASE WHEN s.role = 'tool' THEN COALESCE((SELECT c.name FROM search_calls c
		WHERE c.session_id = s.session_id AND c.call_id = s.call_id AND c.pos < s.pos ORDER BY c.pos DESC LIMIT 1), '') ELSE '' END,
	s.id, s.role, s.pos
FROM search_src s JOIN sessions ss ON ss.id = s.session_id
ORDER BY ss.num, s.seq;

DROP TABLE search_calls;
DROP TABLE search_src;
`

// migrationBody is migration 4; bodyFromColumns builds the value of
// encodeBody from the message columns of versions 2 and 3.
const migrationBody = `
CREATE TABLE messages_v3 (
	session_id TEXT    NOT NULL REFERENCES sessions (id),
	pos        INTEGER NOT NULL, -- timeline position
	seq        INTEGER NOT NULL, -- index among the session's messages
	body       BLOB    NOT NULL, -- every field (encodeBody)
	PRIMARY KEY (session_id, pos)
) WITHOUT ROWID;

INSERT INTO messages_v3 (session_id, pos, seq, body)
SELECT session_id, pos, seq, ` + bodyFromColumns + `
FROM messages ORDER BY session_id, pos;

DROP TABLE messages;
ALTER TABLE messages_v3 RENAME TO messages;
CREATE UNIQUE INDEX messages_seq ON messages (session_id, seq);
`

// bodyFromColumns is encodeBody in SQL, over the message columns of schema
// versions 2 and 3.
const bodyFromColumns = `CAST(
	printf('%s%s%s%016x%010d%010d%010d%010d',
		CASE WHEN steer THEN '1' ELSE '0' END,
		CASE WHEN tool_calls IS NULL THEN 'n' ELSE 'j' END,
		CASE WHEN created_at IS NULL THEN 'n' ELSE 't' END,
		COALESCE(created_at, 0),
		length(CAST(id AS BLOB)), length(CAST(role AS BLOB)),
		length(CAST(tool_call_id AS BLOB)), length(CAST(COALESCE(tool_calls, '') AS BLOB)))
	AS BLOB) || CAST(id AS BLOB) || CAST(role AS BLOB) || CAST(tool_call_id AS BLOB)
	|| CAST(COALESCE(tool_calls, '') AS BLOB) || CAST(text AS BLOB)`

// migrate brings the schema of the database behind w up to len(m), one
// transaction per migration of m (the package's migrations but in tests). Two processes opening a
// file at once serialize on the write lock and re-read the version.
func migrate(w *sql.DB, m []string) error {
	ctx := context.Background()
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	s := sqlstore.Schema{
		Migrations: m,
		SetVersion: `INSERT INTO schema_version (version) VALUES (?)`,
		Newer: func(version, known int) error {
			return fmt.Errorf("%w: file schema version %d, known up to %d", ErrNewerSchema, version, known)
		},
		Begin: func(ctx context.Context) (sqlstore.MigrationTx, error) {
			tx, err := w.BeginTx(ctx, nil)
			if err != nil {
				return nil, fmt.Errorf("schema: %w", err)
			}
			return migrationTx{tx}, nil
		},
	}
	return s.Migrate(ctx)
}

// migrationTx is a transaction of sqlstore.Schema.Migrate.
type migrationTx struct{ tx *sql.Tx }

// Exec implements sqlstore.MigrationTx.
func (t migrationTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

// Version implements sqlstore.MigrationTx.
func (t migrationTx) Version(ctx context.Context) (int, error) { return schemaVersion(ctx, t.tx) }

// Commit rolls back a transaction that found the schema current: it wrote
// nothing.
func (t migrationTx) Commit(_ context.Context, current bool) error {
	if current {
		return t.tx.Rollback()
	}
	return t.tx.Commit()
}

// Rollback implements sqlstore.MigrationTx.
func (t migrationTx) Rollback(context.Context) { _ = t.tx.Rollback() }

// schemaVersion reads the schema version; a file without one is at 0.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("schema: %w", err)
	}
	return v, nil
}
