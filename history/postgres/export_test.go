package postgres

import (
	"errors"
	"sync/atomic"
)

// withMigrations makes Open migrate with m instead of the package's
// migrations.
func withMigrations(m []string) Option {
	return func(o *options) { o.migrations = m }
}

// withBeforeCommit makes every write transaction of the store call f with
// its op before it commits.
func withBeforeCommit(f func(op string)) Option {
	return func(o *options) { o.hooks.beforeCommit = f }
}

// errRenewalBlocked is the error of a renewal that withRenewalsBlocked
// blocks.
var errRenewalBlocked = errors.New("renewal blocked")

// withRenewalsBlocked makes every renewal attempt of the store's leases
// fail, as if the database were unreachable, while blocked is true.
func withRenewalsBlocked(blocked *atomic.Bool) Option {
	return func(o *options) {
		o.hooks.renewal = func(string) error {
			if blocked.Load() {
				return errRenewalBlocked
			}
			return nil
		}
	}
}

// stopRenewals makes the holder stop renewing, as a stalled process would.
func (l *lease) stopRenewals() { l.StopRenewals() }
