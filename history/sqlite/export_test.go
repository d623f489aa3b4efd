package sqlite

// withMigrations makes Open migrate with m instead of the package's
// migrations.
func withMigrations(m []string) Option {
	return func(o *options) { o.migrations = m }
}

// withOnBatch makes the store's committer call f with the number of jobs
// of each batch before it runs them.
func withOnBatch(f func(n int)) Option {
	return func(o *options) { o.hooks.onBatch = f }
}

// withoutIndex leaves the messages the store appends out of its search
// index.
func withoutIndex() Option {
	return func(o *options) { o.hooks.noIndex = true }
}

// stopRenewals makes the holder stop renewing, as a stalled process would.
func (l *lease) stopRenewals() { l.StopRenewals() }
