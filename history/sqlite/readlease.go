package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

var _ history.LeaseReader = (*Store)(nil)

// ReadLease implements [history.LeaseReader] with one read on the read
// pool. A lease is live while it has a holder and has not expired, unless
// its holder is a process of this machine that no longer runs (Acquire
// would take it over at once: nobody serves the session).
func (s *Store) ReadLease(ctx context.Context, id string) (*history.LeaseInfo, error) {
	const op = "read lease"
	var info *history.LeaseInfo
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		var (
			holder, host string
			pid          int
			expires      int64
		)
		err := tx.QueryRowContext(ctx, `SELECT holder, host, pid, expires_at FROM leases WHERE session_id = ?`, id).Scan(&holder, &host, &pid, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return s.fail(ctx, op, err)
		}
		gone := host == s.host && pid > 0 && pid != s.pid && !processRuns(pid)
		if holder == "" || expires <= time.Now().UnixNano() || gone {
			return nil
		}
		info = &history.LeaseInfo{Session: id, Holder: holder, Expires: time.Unix(0, expires).UTC()}
		return nil
	})
	return info, err
}
