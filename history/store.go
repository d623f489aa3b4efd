package history

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Store persists the canonical history of many sessions. It is everything
// a session needs of its store, and every store implements all of it: a
// session writes through it ([Writer]), reads and searches it ([Reader]),
// numbers and logs its events in it ([EventLog]), keeps what every
// provider response cost in it ([Ledger]), keeps the vectors of its
// embedder in it ([VectorIndex]), and a program lists and deletes its
// sessions ([Catalog]). Nothing in it is optional; only
// leasing ([Leaser]) is, because a store used by one process needs none.
//
// Every versioned write takes the session version the caller last saw and
// returns the next one; a mismatch returns [ErrConflict] and writes
// nothing. Every write is one transaction: it happens completely or not at
// all, and is durable when the call returns. Errors wrap [ErrNotFound],
// [ErrExists], [ErrConflict], [ErrInvalid] or [ErrClosed] where they apply.
type Store interface {
	Writer
	Reader
	EventLog
	Ledger
	VectorIndex
	Catalog
}

// Writer is the versioned writes of one session: what the session's one
// writer (its loop) calls, each with the version it last saw.
type Writer interface {
	// Create stores a new, empty session. It fails with ErrExists if the ID is
	// taken.
	Create(ctx context.Context, s NewSession) (*Snapshot, error)
	// Append adds messages at the end of Active, in order, and records
	// usage in the session's [Ledger] in the same transaction (the
	// response that produced them; none for messages no response made).
	// A usage record whose ID the ledger holds already is left out.
	Append(ctx context.Context, id string, version uint64, msgs []Message, usage ...UsageRecord) (uint64, error)
	// SetConfig replaces the session's opaque configuration.
	SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error)
	// RecordConfig replaces the session's configuration with c.Config, as
	// SetConfig does, and in the same transaction records a [ConfigRecord]
	// of c at the next timeline position, so that a replay shows each
	// change where it happened. It returns the record. c.Data must be JSON
	// (ErrInvalid otherwise).
	RecordConfig(ctx context.Context, id string, version uint64, c ConfigChange) (uint64, *ConfigRecord, error)
	// BeginCompaction records a compaction attempt at the current end of the
	// timeline. rec.Status is StatusInProgress, or StatusNothingToCompact for
	// an attempt that ends at once. A compaction ID already recorded for the
	// session fails with ErrExists.
	BeginCompaction(ctx context.Context, id string, version uint64, rec CompactionRecord) (uint64, error)
	// FinishCompaction ends an in-progress attempt without committing it:
	// status is StatusFailed or StatusCancelled.
	FinishCompaction(ctx context.Context, id string, version uint64, compactID string, status CompactionStatus, errText string, at time.Time) (uint64, error)
	// CommitCompaction is the canonical compaction commit: in one transaction
	// it archives the oldest c.Archive Active messages as a Segment, sets the
	// retained summary, and completes the attempt. Its cost does not depend on
	// how many messages it archives: the returned Segment has no Messages
	// (the caller holds them; Segments reads them back).
	CommitCompaction(ctx context.Context, id string, version uint64, c Commit) (uint64, *Segment, error)
	// Uncompact undoes the newest Segment that is not undone yet, in one
	// transaction: its messages become the front of Active again (the
	// watermark moves back to its first message), the retained summary
	// becomes the one of the Segment before it that still stands ("" when
	// none), the Segment is marked undone with u (it stays in the archive)
	// and an [UncompactionRecord] takes the next timeline position. It
	// returns the record. With no Segment to undo it fails with
	// ErrNothingToUndo and writes nothing.
	Uncompact(ctx context.Context, id string, version uint64, u Uncompaction) (uint64, *UncompactionRecord, error)
	// Recover records every in-progress compaction of the session as failed
	// with InterruptedError (docs/design.md §5.5) and returns their IDs.
	Recover(ctx context.Context, id string, version uint64, at time.Time) (uint64, []string, error)
}

// Reader is the reads of one session: what opening it, replaying it and
// the recall tool (Search, then Window) read. Reads write nothing and
// take no version.
type Reader interface {
	// Load reads a session's Active messages, retained summary and
	// configuration in one consistent read.
	Load(ctx context.Context, id string) (*Snapshot, error)
	// Segments returns the session's archive, oldest first, with messages.
	Segments(ctx context.Context, id string) ([]Segment, error)
	// Timeline returns every message and record (compactions,
	// uncompactions and configuration changes) in timeline order.
	Timeline(ctx context.Context, id string) ([]Entry, error)
	// Entries returns the entries of Timeline at positions from q.From up
	// to, not including, q.To (to the end of the timeline when q.To is 0),
	// in timeline order and each as Timeline returns it; q.Records leaves
	// the messages out. Its cost grows with the entries it returns, not
	// with the session: a reader takes what it needs by position (a
	// replay, the entries its events name) or a long timeline in bounded
	// batches. It fails with ErrNotFound for an unknown session and with
	// an error wrapping ErrInvalid for a negative From or To, or a To
	// below From.
	Entries(ctx context.Context, id string, q EntryQuery) ([]Entry, error)
	// SegmentHeaders returns the session's Segments as Segments does, in
	// the same order, each without its messages (Messages nil): what a
	// reader needs of each compaction when it reads the messages otherwise
	// or not at all. Its cost does not grow with the archive.
	SegmentHeaders(ctx context.Context, id string) ([]Segment, error)
	// Search returns one page of the session's messages, Active and
	// archived, that hold words of q.Text, best first. A stored message is
	// searchable as soon as the write that stored it returns: the index is
	// kept in the same transaction. It fails with ErrNotFound for an
	// unknown session and with an error wrapping ErrInvalid for a negative
	// Limit or a malformed Cursor; never for the text of the query.
	Search(ctx context.Context, id string, q SearchQuery) (SearchPage, error)
	// Window returns the message q.Around and up to q.Before messages
	// before and q.After after it, Active and archived alike, in timeline
	// order, each with the Segment and the compaction that archived it.
	// Its cost grows with the window, never with the session's history:
	// it reads neither the Timeline nor the Segments. It fails with
	// ErrNotFound for an unknown session, with an error wrapping ErrInvalid
	// for an empty Around or a Before or After outside 0..[MaxWindow], and
	// with one wrapping ErrInvalid and [ErrUnknownMessage] for a message ID
	// the session does not hold (another session's message included).
	Window(ctx context.Context, id string, q WindowQuery) ([]WindowMessage, error)
}

// EventLog keeps each session's timeline events, so that sequence numbers
// keep increasing over the session's whole life and a subscriber can
// replay events in a later process (docs/design.md §6.1). Its writes are
// not versioned: they neither take nor change the session's version, so
// they run beside the session's other writes (a lease still fences them,
// as every write).
type EventLog interface {
	// LogEvents appends b.Events to the session's log and records
	// b.Through, in one transaction. The events' Seqs must increase and
	// lie above the Through recorded before, and Through must be at least
	// the last of them, at least the Through recorded before and at most
	// [MaxSeq]; Covers must not be negative; otherwise LogEvents fails with
	// ErrInvalid and writes nothing.
	LogEvents(ctx context.Context, id string, b EventBatch) error
	// Events returns the session's logged events with Seq > after, oldest
	// first; limit > 0 returns at most that many.
	Events(ctx context.Context, id string, after uint64, limit int) ([]LoggedEvent, error)
	// ReserveSeqs raises session id's recorded Through by gap, in one
	// transaction, and returns the Through before and after
	// ([SeqReservation]), so that a process opening a session records
	// where its numbering starts without writing a batch (docs/session.md,
	// "Sequence numbers over a session's whole life"). The raise needs
	// room above it: when the recorded Through is above MaxSeq - 2*gap (no
	// room for the gap and another gap of numbers above it) nothing is
	// written and the reservation's Start is 0. gap must lie in
	// 1..MaxSeq/2 (ErrInvalid otherwise); a session that does not exist is
	// ErrNotFound.
	ReserveSeqs(ctx context.Context, id string, gap uint64) (SeqReservation, error)
}

// Catalog is the store's sessions as a whole: what a program that lists
// and deletes sessions (an ACP client's session list, cmd/sessionkit)
// calls.
type Catalog interface {
	// ListSessions returns one page of sessions (see [ListOptions] for
	// the order of pages). It fails with an error wrapping [ErrInvalid]
	// for a negative Limit or a malformed Cursor.
	ListSessions(ctx context.Context, opts ListOptions) (SessionPage, error)
	// Delete removes session id and everything stored of it, in one
	// transaction: its messages (Active and archived), Segments,
	// compaction and uncompaction records, logged events, usage ledger,
	// search index and settings (configuration, title, working
	// directory). Afterwards
	// every read of the session fails with ErrNotFound, listing leaves it
	// out, and the ID may be created again, as a new, empty session.
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
	// Fork creates session spec.ID as a fork of session spec.From at
	// the message spec.At ("" = From's newest entry): the fork's history
	// is From's as it stood just after that entry was committed (its
	// messages up to there, Active and archived, and the compactions,
	// uncompactions and configuration records before it; a compaction
	// committed later in From is no compaction of the fork), its
	// configuration spec.Config (From's as it stands when nil), and its
	// event log, usage ledger, sequence numbers and lease its own, empty.
	// Later writes to either session never show in the other. It reads
	// From's committed history and takes no lease of it; it writes only
	// the fork, in one transaction, and returns its snapshot without its
	// Active messages (Active nil, so that a fork costs what it writes,
	// not what it inherits; Load reads them).
	//
	// It fails, writing nothing, with ErrNotFound for an unknown From,
	// ErrExists for an ID that exists, an error wrapping ErrInvalid and
	// [ErrUnknownMessage] for an At that is no message of From, and one
	// wrapping ErrInvalid and [ErrForkInCompaction] for a fork point
	// inside a compaction: after the record of a compaction still in
	// progress, or before a message that a compaction begun before the
	// fork point archived. docs/storage.md, "Forks", says how each store
	// keeps a fork.
	Fork(ctx context.Context, spec ForkSpec) (*Snapshot, error)
}

// ForkSpec describes a fork to create ([Catalog.Fork]).
type ForkSpec struct {
	// ID is the fork's session ID; it must not exist.
	ID string
	// From is the session forked.
	From string
	// At is the ID of a message of From (the newest with that ID): the
	// fork takes From's history up to and including it. "" forks at
	// From's newest entry, message or record.
	At string
	// Config is the fork's configuration; nil takes From's as it stands.
	Config json.RawMessage
	// Title and Cwd are the fork's listing metadata; "" takes From's.
	Title, Cwd string
}

// ErrForkInCompaction is wrapped, together with [ErrInvalid], by the error
// of [Catalog.Fork] for a fork point inside a compaction (see there).
var ErrForkInCompaction = errors.New("history: fork point inside a compaction")
