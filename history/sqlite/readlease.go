package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// ReadLease implements [history.Leaser] with one statement on the
// read pool. A lease is live while it has a holder and has not expired,
// unless its holder is a process of this machine, boot and PID namespace
// that no longer runs (Acquire would take it over at once: nobody serves
// the session).
func (s *Store) ReadLease(ctx context.Context, id string) (*history.LeaseInfo, error) {
	if err := s.admit(ctx); err != nil {
		return nil, err
	}
	var (
		holder, host string
		pid          int
		expires      int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT holder, host, pid, expires_at FROM leases WHERE session_id = ?`, id).Scan(&holder, &host, &pid, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(ctx, "read lease", err)
	}
	if holder == "" || expires <= time.Now().UnixNano() || s.gone(host, pid) {
		return nil, nil
	}
	return &history.LeaseInfo{Session: id, Holder: holder, Expires: time.Unix(0, expires).UTC()}, nil
}
