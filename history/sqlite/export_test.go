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

// withIndexBound makes every Append whose session's unindexed tail grows
// past n messages index the tail (0: every Append indexes its messages,
// as before background indexing).
func withIndexBound(n int) Option {
	return func(o *options) { o.hooks.indexBound = &n }
}

// withoutHurry keeps a search that reads a long tail from asking the
// committer to index it.
func withoutHurry() Option {
	return func(o *options) { o.hooks.noHurry = true }
}

// withoutIdleIndex keeps the committer from indexing in its idle time.
func withoutIdleIndex() Option {
	return func(o *options) { o.hooks.noIdleIndex = true }
}

// withOnIndexed makes the committer call f with the messages each
// idle-time index transaction indexed.
func withOnIndexed(f func(n int)) Option {
	return func(o *options) { o.hooks.onIndexed = f }
}
