// Package history defines the canonical conversation history of a session
// and the Store interface that persists it.
//
// A session's history is an append-only log of [Message] values, each at a
// timeline position. The messages after the session's watermark are Active:
// they are sent to the model verbatim. A compaction archives the oldest
// Active messages as a [Segment] by moving the watermark and recording the
// summary that now stands for them; archived messages are never deleted or
// copied. Compaction attempts of every outcome are recorded at their timeline
// position as [CompactionRecord] values, so a client can replay the whole
// timeline later (docs/design.md §5, §7.6).
//
// # Stores
//
// Three stores ship with sessionkit: history/memstore (tests and throwaway
// sessions), history/sqlite (the embedded default: one SQLite file, which
// several processes on one machine may share) and history/postgres (one
// PostgreSQL database shared by several agent processes). All implement
// [Lister], [Uncompacter] and [Deleter]; the SQLite and PostgreSQL stores also
// implement [Leaser], and [LeaseReader] for programs that only read
// (cmd/sessionkit). All pass the conformance suites in history/historytest.
// A store of your own builds on history/storekit, the package for people
// writing a Store (the checks of each write, the assembly of Timeline and
// Segments from rows, the list cursor), and runs the same suites.
//
//	store, err := sqlite.Open("sessions.db")
//	if err != nil { ... }
//	defer store.Close()
//	snap, err := store.Create(ctx, history.NewSession{ID: "s1"})
//	v, err := store.Append(ctx, "s1", snap.Version, []history.Message{{ID: "m1", Role: history.RoleUser, Text: "hi"}})
//
// # Concurrency
//
// Stores are safe for concurrent use across sessions. A session has one writer
// at a time: every write names the session version it was computed from, and a
// write against any other version fails with [ErrConflict] instead of being
// merged (optimistic concurrency).
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role is the author of a [Message].
type Role string

// The roles of canonical history.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the three known roles.
func (r Role) Valid() bool {
	return r == RoleUser || r == RoleAssistant || r == RoleTool
}

// ToolCall is one tool invocation requested by an assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Message is one item of canonical history.
type Message struct {
	ID         string
	Role       Role
	Text       string
	ToolCalls  []ToolCall // assistant only
	ToolCallID string     // tool only: the call this message answers
	Steer      bool       // user message that arrived as a steer
	CreatedAt  time.Time
}

// Counted reports whether m counts towards the compaction algorithm's n: user
// and assistant messages count, tool messages do not (docs/design.md §4.1).
func (m *Message) Counted() bool {
	return m.Role == RoleUser || m.Role == RoleAssistant
}

// Validate reports the first structural problem of m, or nil. Stores call it
// before writing; it returns an error wrapping [ErrInvalid].
func (m *Message) Validate() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: message has no ID", ErrInvalid)
	case !m.Role.Valid():
		return fmt.Errorf("%w: message %s has unknown role %q", ErrInvalid, m.ID, m.Role)
	case m.Role != RoleAssistant && len(m.ToolCalls) > 0:
		return fmt.Errorf("%w: message %s: only assistant messages carry tool calls", ErrInvalid, m.ID)
	case m.Role == RoleTool && m.ToolCallID == "":
		return fmt.Errorf("%w: tool message %s answers no tool call", ErrInvalid, m.ID)
	case m.Role != RoleTool && m.ToolCallID != "":
		return fmt.Errorf("%w: message %s: only tool messages answer a tool call", ErrInvalid, m.ID)
	case m.Steer && m.Role != RoleUser:
		return fmt.Errorf("%w: message %s: only user messages can be steers", ErrInvalid, m.ID)
	}
	for _, c := range m.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return fmt.Errorf("%w: message %s has a tool call without ID or name", ErrInvalid, m.ID)
		}
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			return fmt.Errorf("%w: message %s: tool call %s arguments are not JSON", ErrInvalid, m.ID, c.ID)
		}
	}
	return nil
}

// Segment is one archived span of history: the messages a compaction removed
// from Active, kept verbatim, and the summary produced from them.
type Segment struct {
	ID           string
	CompactID    string
	Trigger      Trigger   // TriggerManual, TriggerAuto or TriggerOverflow
	Summary      string    // the retained summary this compaction produced
	Messages     []Message // the archived prefix, oldest first
	Instructions string
	CreatedAt    time.Time // when the commit happened
	StartedAt    time.Time // when the compaction started
	InputTokens  int       // provider-reported usage of the summary call
	OutputTokens int
	Position     int64 // timeline position of the compaction
	// SummaryProvider and SummaryModel name what made the summary: the
	// provider (its provider.Info name) and the model it reported, "" when
	// unknown. A summary supplied by the application's BeforeCompact hook
	// has SummaryProvider "hook" and no model.
	SummaryProvider, SummaryModel string
	// ContextBefore is the context the conversation held before the
	// compaction, in tokens, as the provider last reported it (0 when no
	// fresh figure existed); ContextAfter is an estimate of the context
	// after it (retained summary and the Active messages left).
	ContextBefore, ContextAfter int
	// Fidelity is how many of the archived prefix's facts the summary kept
	// (zero for a Segment committed before fidelity was recorded).
	Fidelity Fidelity
	// UndoneAt is when an Uncompact undid this Segment, zero while it
	// stands; UndoID is that Uncompact's ID. An undone Segment stays in the
	// archive with its messages, which are Active again.
	UndoneAt time.Time
	UndoID   string
}

// Undone reports whether an Uncompact undid the Segment.
func (g *Segment) Undone() bool { return g.UndoID != "" }

// CompactionStatus is the state of a recorded compaction attempt.
type CompactionStatus string

// Compaction statuses. Only [StatusInProgress] is not terminal; a session
// records interrupted ones as failed when it reopens (see [Store.Recover]).
const (
	StatusInProgress       CompactionStatus = "in_progress"
	StatusCompleted        CompactionStatus = "completed"
	StatusFailed           CompactionStatus = "failed"
	StatusCancelled        CompactionStatus = "cancelled"
	StatusNothingToCompact CompactionStatus = "nothing_to_compact"
)

// Terminal reports whether s ends a compaction.
func (s CompactionStatus) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusNothingToCompact:
		return true
	}
	return false
}

// InterruptedError is the error text recorded for a compaction that was in
// progress when its process stopped (docs/design.md §5.5).
const InterruptedError = "interrupted: the process stopped before the compaction finished"

// CompactionRecord is one compaction attempt at its timeline position,
// whatever its outcome. A completed record has a Segment with the same
// CompactID.
type CompactionRecord struct {
	CompactID    string
	Trigger      Trigger
	Instructions string
	Status       CompactionStatus
	Summary      string // completed only
	Error        string // failed and cancelled
	StartedAt    time.Time
	FinishedAt   time.Time // zero while in progress
	Position     int64
}

// Entry is one item of the replayable timeline: exactly one of Message,
// Compaction, Uncompaction and Config is set.
type Entry struct {
	Position     int64
	Archived     bool // the message belongs to a Segment
	Message      *Message
	Compaction   *CompactionRecord
	Uncompaction *UncompactionRecord
	Config       *ConfigRecord
}

// ConfigRecorder is implemented by stores that record a session's
// configuration changes in its timeline, so that a replay shows each change
// where it happened. The stores of sessionkit (memstore, sqlite, postgres)
// all do.
type ConfigRecorder interface {
	// RecordConfig replaces the session's configuration with c.Config, as
	// SetConfig does, and in the same transaction records a [ConfigRecord]
	// of c at the next timeline position. It returns the record. c.Data
	// must be JSON (ErrInvalid otherwise).
	RecordConfig(ctx context.Context, id string, version uint64, c ConfigChange) (uint64, *ConfigRecord, error)
}

// ConfigChange is one change of a session's configuration (see
// [ConfigRecorder]).
type ConfigChange struct {
	Config json.RawMessage // the configuration from now on, as SetConfig takes it; nil means none
	Data   json.RawMessage // what the timeline records of the change: JSON, opaque to the store
	At     time.Time
}

// ConfigRecord is one configuration change at its timeline position (see
// [ConfigRecorder]).
type ConfigRecord struct {
	Data     json.RawMessage // ConfigChange.Data
	At       time.Time
	Position int64
}

// UncompactionRecord is one undone compaction at its timeline position
// (see [Uncompacter]).
type UncompactionRecord struct {
	ID        string // the Uncompact command's ID
	SegmentID string // the Segment it undid
	CompactID string // the compaction that made that Segment
	Restored  int    // messages put back at the front of Active
	At        time.Time
	Position  int64
}

// NewSession describes a session to create.
type NewSession struct {
	ID     string
	Config json.RawMessage // opaque to the store; nil means none
	// Title and Cwd are metadata for listing ([Lister]); "" means none.
	Title, Cwd string
}

// Snapshot is what opening a session reads: its Active messages, retained
// summary and configuration. Its cost grows with Active, never with the
// archived total (docs/design.md §5.4).
type Snapshot struct {
	ID      string
	Version uint64 // pass to the next write
	Config  json.RawMessage
	Summary string
	// Title is the session's title as [Lister] lists it (its own, or a
	// default from its first message); Cwd its working directory.
	Title, Cwd string
	Active     []Message
	// Archived is the number of messages archived in Segments.
	Archived int64
	// NextPosition is the timeline position the next message or record
	// will take: positions start at 0 and every appended message, every
	// BeginCompaction, every Uncompact and every RecordConfig takes the
	// next one, so the entries of [Store.Timeline] are exactly the
	// positions below it.
	NextPosition int64
	// Interrupted lists compactions that were in progress in the store; they
	// stay so until [Store.Recover] records them as failed.
	Interrupted []string
	// LastSeq is the Through of the last [EventBatch] logged for the
	// session: 0 when none, or when the store is no [EventLog].
	LastSeq uint64
}

// Commit is one canonical compaction commit (docs/design.md §4.6).
type Commit struct {
	CompactID string // a compaction begun with [Store.BeginCompaction]
	SegmentID string
	// Archive is how many of the oldest Active messages the Segment takes.
	Archive      int
	Summary      string // the new retained summary; must not be blank
	InputTokens  int
	OutputTokens int
	At           time.Time
	// SummaryProvider, SummaryModel, ContextBefore, ContextAfter and
	// Fidelity are recorded with the Segment (see [Segment]); all optional.
	SummaryProvider, SummaryModel string
	ContextBefore, ContextAfter   int
	Fidelity                      Fidelity
}

// Uncompacter is implemented by stores that can undo a compaction. The
// stores of sessionkit (memstore, sqlite, postgres) all do.
type Uncompacter interface {
	// Uncompact undoes the newest Segment that is not undone yet, in one
	// transaction: its messages become the front of Active again (the
	// watermark moves back to its first message), the retained summary
	// becomes the one of the Segment before it that still stands ("" when
	// none), the Segment is marked undone with u (it stays in the archive)
	// and an [UncompactionRecord] takes the next timeline position. It
	// returns the record. With no Segment to undo it fails with
	// ErrNothingToUndo and writes nothing.
	Uncompact(ctx context.Context, id string, version uint64, u Uncompaction) (uint64, *UncompactionRecord, error)
}

// Uncompaction names one undo (see [Uncompacter]).
type Uncompaction struct {
	ID string // unique per session
	At time.Time
}

// ErrNothingToUndo is returned by Uncompact when the session has no Segment
// that is not undone.
var ErrNothingToUndo = errors.New("history: no compaction to undo")

// Store persists the canonical history of many sessions.
//
// Every write takes the session version the caller last saw and returns the
// next one; a mismatch returns [ErrConflict] and writes nothing. Every write is
// one transaction: it happens completely or not at all, and is durable when
// the call returns. Errors wrap [ErrNotFound], [ErrExists], [ErrConflict],
// [ErrInvalid] or [ErrClosed] where they apply.
type Store interface {
	// Create stores a new, empty session. It fails with ErrExists if the ID is
	// taken.
	Create(ctx context.Context, s NewSession) (*Snapshot, error)
	// Load reads a session's Active messages, retained summary and
	// configuration in one consistent read.
	Load(ctx context.Context, id string) (*Snapshot, error)
	// Append adds messages at the end of Active, in order.
	Append(ctx context.Context, id string, version uint64, msgs []Message) (uint64, error)
	// SetConfig replaces the session's opaque configuration.
	SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error)
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
	// Recover records every in-progress compaction of the session as failed
	// with InterruptedError (docs/design.md §5.5) and returns their IDs.
	Recover(ctx context.Context, id string, version uint64, at time.Time) (uint64, []string, error)
	// Segments returns the session's archive, oldest first, with messages.
	Segments(ctx context.Context, id string) ([]Segment, error)
	// Timeline returns every message and record (compactions, and the
	// uncompactions and configuration changes of stores that record them)
	// in timeline order.
	Timeline(ctx context.Context, id string) ([]Entry, error)
}

// Sentinel errors of stores. Test with errors.Is.
var (
	ErrNotFound = errors.New("history: session not found")
	ErrExists   = errors.New("history: session already exists")
	ErrConflict = errors.New("history: session was changed by another writer")
	ErrInvalid  = errors.New("history: invalid write")
	ErrClosed   = errors.New("history: store is closed")
)

// Trigger is what started a compaction, as records and Segments hold it.
type Trigger string

// Triggers of compactions.
const (
	TriggerManual   Trigger = "manual"
	TriggerAuto     Trigger = "auto"
	TriggerOverflow Trigger = "overflow" // a reaction to a request the provider found too long
)

// ValidTrigger reports whether t is one of the known triggers.
func ValidTrigger(t Trigger) bool {
	return t == TriggerManual || t == TriggerAuto || t == TriggerOverflow
}
