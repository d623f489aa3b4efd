package postgres

import (
	"context"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// Fork implements [history.Catalog] as the SQLite store does
// (docs/storage.md, "Forks"): in one transaction, after the lease check
// of the fork's ID (as Create), it finds the fork point along the
// source's chain (chain.go), its sessions row locked FOR KEY SHARE so
// that a delete of the source waits for the fork or the fork finds no
// source, and writes the fork's sessions row and its compaction and
// configuration records up to the fork point (a Segment undone after the
// fork point stands in the fork): no message, whatever the source's size. The source's writer does not wait for the fork (its UPDATE of
// the row takes no lock that FOR KEY SHARE blocks): what it commits
// meanwhile lies past the fork point, which the fork's reads leave out.
// A wait for the source's row that the lock timeout ends is a
// *history.BusyError of the source, naming its lease holder.
func (s *Store) Fork(ctx context.Context, spec history.ForkSpec) (*history.Snapshot, error) {
	const op = "fork"
	from, key := bin(spec.From), bin(spec.ID)
	var src chain
	return sqlstore.Fork(spec, func(fn func(pgx.Tx) error) error {
		return s.inTx(ctx, op, spec.ID, func(tx pgx.Tx) error {
			if s.l != nil {
				if err := s.l.check(ctx, op, tx.QueryRow(ctx, checkToken, key)); err != nil {
					return err
				}
			}
			return fn(tx)
		})
	}, sqlstore.ForkSteps[pgx.Tx]{
		Source: func(tx pgx.Tx) (sqlstore.ForkSource, error) {
			var (
				r                  sqlstore.ForkSource
				config, title, cwd []byte
				forked             bool
			)
			err := tx.QueryRow(ctx, `SELECT next_pos, message_count, config, `+titleColumn+`, cwd, fork_of IS NOT NULL FROM sessions
				WHERE id = $1 AND NOT deleted FOR KEY SHARE`, from).
				Scan(&r.NextPos, &r.Count, &config, &title, &cwd, &forked)
			if isLockTimeout(err) { // the wait was for the source's row
				return r, s.busy(ctx, op, spec.From, err)
			}
			if err := s.found(ctx, op, spec.From, err); err != nil {
				return r, err
			}
			r.Config, r.Title, r.Cwd = config, defaultTitle(title), string(cwd)
			src = chain{{key: from, lo: -1, hi: math.MaxInt64, seqHi: math.MaxInt64}}
			if forked {
				src, err = s.chainOf(ctx, tx, op, spec.From)
			}
			return r, err
		},
		Taken: func(tx pgx.Tx) (bool, error) {
			var one int
			switch err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1`, key).Scan(&one); {
			case errors.Is(err, pgx.ErrNoRows):
				return false, nil
			case err != nil:
				return false, s.fail(ctx, op, err)
			}
			return true, nil
		},
		Find: func(tx pgx.Tx, msgID string) (int64, int64, bool, error) {
			return s.chainFind(ctx, tx, op, src, msgID)
		},
		Inside: func(tx pgx.Tx, at int64) (string, bool, error) {
			var inside []byte
			err := tx.QueryRow(ctx, `SELECT compact_id FROM compactions WHERE session_id = $1 AND pos <= $2
				AND (status = 'in_progress' OR (segment_id IS NOT NULL AND to_pos > $2)) ORDER BY pos LIMIT 1`, from, at).Scan(&inside)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return "", false, nil
			case err != nil:
				return "", false, s.fail(ctx, op, err)
			}
			return string(inside), true, nil
		},
		Standing: func(tx pgx.Tx, at int64) (int64, int64, string, error) {
			return s.standingAt(ctx, tx, op, src, from, at)
		},
		MessageID: func(tx pgx.Tx, seq int64) (string, error) {
			var id []byte
			if err := tx.QueryRow(ctx, `SELECT id FROM messages WHERE session_id = $1 AND seq = $2`, src.bySeq(seq), seq).Scan(&id); err != nil {
				return "", s.fail(ctx, op, err)
			}
			return string(id), nil
		},
		Write: func(tx pgx.Tx, r *sqlstore.ForkRow) error {
			_, err := tx.Exec(ctx, `INSERT INTO sessions (id, version, config, summary, active_from, archived, message_count, next_pos,
					title, cwd, created_at, updated_at, fork_of, fork_pos, fork_seq, fork_at)
				VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $9, `+nowNanos+`, `+nowNanos+`, $10, $11, $12, $13)`,
				key, nullable(r.Config), bin(r.Summary), r.ActiveFrom, r.Archived, r.N, r.At+1, bin(r.Title), bin(r.Cwd), from, r.At, r.N, bin(r.ForkAt))
			// A unique violation: created since the check of Taken.
			if err := s.st.Conflict(ctx, op, err, isUniqueViolation(err), "%q", spec.ID); err != nil {
				return err
			}
			if s.l == nil {
				if err := s.checkUnleased(ctx, op, spec.ID, tx.QueryRow(ctx, checkLive, key)); err != nil {
					return err
				}
			}
			for _, table := range []string{"compactions", "configs"} {
				if _, err := tx.Exec(ctx, sqlstore.CopyRows(table, forkCopies[table], "$1", "$2", "$3"), key, from, r.At); err != nil {
					return s.fail(ctx, op, err)
				}
			}
			// A Segment undone after the fork point stands in the fork.
			if _, err := tx.Exec(ctx, `UPDATE compactions SET undo_id = NULL, undo_pos = NULL, undone_at = NULL, restored = NULL
					WHERE session_id = $1 AND undo_pos > $2`, key, r.At); err != nil {
				return s.fail(ctx, op, err)
			}
			return nil
		},
	})
}

// standingAt is the state of the session of chain src (keyed from) at
// position at, as a fork there starts: the newest Segment standing then
// gives its Active's first position, its archived messages and its
// summary (0, 0 and "" for none).
func (s *Store) standingAt(ctx context.Context, tx pgx.Tx, op string, src chain, from []byte, at int64) (activeFrom, archived int64, summary string, err error) {
	var (
		toPos int64
		sum   []byte
	)
	err = tx.QueryRow(ctx, `SELECT to_pos, summary FROM compactions WHERE session_id = $1 AND segment_id IS NOT NULL
		AND pos <= $2 AND (undo_pos IS NULL OR undo_pos > $2) ORDER BY from_pos DESC LIMIT 1`, from, at).Scan(&toPos, &sum)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, 0, "", nil
	case err != nil:
		return 0, 0, "", s.fail(ctx, op, err)
	}
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT seq FROM messages WHERE session_id = $1 AND pos = $2`, src.byPos(toPos), toPos).Scan(&seq); err != nil {
		return 0, 0, "", s.fail(ctx, op, err)
	}
	return toPos + 1, seq + 1, string(sum), nil
}

// forkCopies are the columns of the tables whose rows up to the fork
// point a fork writes again as its own (TestForkCopiesEveryColumn checks
// them against the schema).
var forkCopies = map[string][]string{
	"compactions": {"session_id", "compact_id", "pos", "status", "trigger_kind", "instructions", "summary", "error",
		"started_at", "finished_at", "segment_id", "from_pos", "to_pos", "input_tokens", "output_tokens",
		"summary_provider", "summary_model", "context_before", "context_after", "undo_id", "undo_pos", "undone_at",
		"restored", "commit_version", "fidelity_facts", "fidelity_kept", "fidelity_missing", "files"},
	"configs": {"session_id", "pos", "at", "data"},
}
