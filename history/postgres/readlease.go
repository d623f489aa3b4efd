package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
)

// ReadLease implements [history.Leaser] with one read-only
// transaction. Expiry is judged by the database's clock, as Acquire judges
// it.
func (s *Store) ReadLease(ctx context.Context, id string) (*history.LeaseInfo, error) {
	const op = "read lease"
	var info *history.LeaseInfo
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		var (
			holder  string
			expires time.Time
		)
		err := tx.QueryRow(ctx, `SELECT holder, expires_at FROM leases WHERE session_id = $1 AND holder <> '' AND expires_at > now()`, bin(id)).Scan(&holder, &expires)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return s.fail(ctx, op, err)
		}
		info = &history.LeaseInfo{Session: id, Holder: holder, Expires: expires.UTC()}
		return nil
	})
	return info, err
}
