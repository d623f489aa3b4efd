package history

import "context"

// Deleter is implemented by stores that can delete a session. The stores of
// sessionkit (memstore, sqlite, postgres) all do.
type Deleter interface {
	// Delete removes session id and everything stored of it, in one
	// transaction: its messages (Active and archived), Segments,
	// compaction and uncompaction records, logged events ([EventLog]),
	// search index ([Searcher]) and settings (configuration, title,
	// working directory). Afterwards every read of the session fails with
	// ErrNotFound, listing ([Lister]) leaves it out, and the ID may be
	// created again, as a new, empty session.
	//
	// It fails with ErrNotFound for an unknown session. In a store with
	// leases ([Leaser]) it is a write like any other: through the store
	// itself it fails with a *[LeaseError] (errors.Is [ErrLeased]) naming
	// the holder while another holder's live lease covers the session;
	// through a [Lease.Store] it deletes only while that lease is the
	// session's current one ([ErrFenced] otherwise). A refused Delete
	// deletes nothing. The session's lease record stays, so that the
	// fencing tokens of a session created again under the same ID keep
	// growing.
	Delete(ctx context.Context, id string) error
}
