package history

import "context"

// The one-method interfaces below were the optional parts of a store
// before [Store] became the whole contract. Every store implements them
// now (they are methods of Store, or of [Leaser]); they stay for this
// release so that code naming them keeps compiling, and will be removed.

// ConfigRecorder is [Writer.RecordConfig] alone.
//
// Deprecated: every Store records configuration changes; use [Store].
type ConfigRecorder interface {
	RecordConfig(ctx context.Context, id string, version uint64, c ConfigChange) (uint64, *ConfigRecord, error)
}

// Uncompacter is [Writer.Uncompact] alone.
//
// Deprecated: every Store undoes compactions; use [Store].
type Uncompacter interface {
	Uncompact(ctx context.Context, id string, version uint64, u Uncompaction) (uint64, *UncompactionRecord, error)
}

// Searcher is [Reader.Search] alone.
//
// Deprecated: every Store searches; use [Store].
type Searcher interface {
	Search(ctx context.Context, id string, q SearchQuery) (SearchPage, error)
}

// Lister is [Catalog.ListSessions] alone.
//
// Deprecated: every Store lists its sessions; use [Store] or [Catalog].
type Lister interface {
	ListSessions(ctx context.Context, opts ListOptions) (SessionPage, error)
}

// Deleter is [Catalog.Delete] alone.
//
// Deprecated: every Store deletes sessions; use [Store] or [Catalog].
type Deleter interface {
	Delete(ctx context.Context, id string) error
}

// SeqReserver is [EventLog.ReserveSeqs] alone.
//
// Deprecated: every Store's event log reserves sequence numbers; use
// [Store] or [EventLog].
type SeqReserver interface {
	ReserveSeqs(ctx context.Context, id string, gap uint64) (SeqReservation, error)
}

// ReservingLeaser is [Leaser], which now reserves sequence numbers with the
// lease ([Leaser.AcquireReserving]).
//
// Deprecated: use [Leaser].
type ReservingLeaser = Leaser

// LeaseReader is [Leaser.ReadLease] alone.
//
// Deprecated: every Leaser reads leases; use [Leaser].
type LeaseReader interface {
	ReadLease(ctx context.Context, id string) (*LeaseInfo, error)
}
