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
// # The contract
//
// [Store] is everything a session needs of its store, and every store
// implements all of it. It embeds four role interfaces, grouped by who
// calls them: [Writer], the versioned writes of a session's one writer
// (its loop); [Reader], the reads of opening, replay and the recall tool;
// [EventLog], the session's numbered events, written beside the versioned
// writes; and [Catalog], what a program over the whole store does (list
// and delete sessions). Nothing a session promises (one durable event
// cursor, recall, settings that survive reopen, undo, delete) depends on
// which store serves it. The one optional interface is [Leaser]: a store
// that several processes share lets one process at a time serve a session
// through a [Lease]; a store owned by one process needs none.
//
// # Stores
//
// Three stores ship with sessionkit: history/memstore (tests and throwaway
// sessions), history/sqlite (the embedded default: one SQLite file, which
// several processes on one machine may share) and history/postgres (one
// PostgreSQL database shared by several agent processes). The SQLite and
// PostgreSQL stores are also [Leaser]s. All pass the conformance suite in
// history/historytest. A store of your own builds on history/storekit, the
// package for people writing a Store (the checks of each write, the
// assembly of Timeline and Segments from rows, the list cursor), and runs
// the same suite.
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
	// Attachments are what a user message carries besides its text: links
	// to resources, embedded resources and images, in the order the user
	// gave them, each at its place in Text (user only; nil for none).
	Attachments []Attachment
	// Files are the files the tool call this message answers read or
	// changed, in the order it did (tool only; nil for none): what a
	// session's file ledger is folded from (see [FileAccess]).
	Files []FileAccess
	// Thoughts are the reasoning the model returned with an assistant
	// message (Anthropic's extended thinking, an OpenAI-compatible
	// server's reasoning_content), in the order it came, before the text
	// and tool calls (assistant only; nil for none). They are shown to the
	// user (ACP agent_thought_chunk), sent back to a provider that requires
	// them, never summarized and never searched.
	Thoughts []Thought
}

// Thought is one block of reasoning of an assistant message (see
// [Message].Thoughts).
type Thought struct {
	// Text is the reasoning as the model wrote it ("" for a redacted one).
	Text string
	// Signature is what the provider signed Text with (Anthropic: the
	// thinking block's signature, which the API checks when the block is
	// sent back); "" when none.
	Signature string
	// Redacted is the encrypted data of reasoning the provider withheld
	// (Anthropic's redacted_thinking block); "" for readable reasoning.
	Redacted string
}

// AttachmentKind is what an [Attachment] is.
type AttachmentKind string

// The kinds of attachments.
const (
	// AttachLink is a reference to a resource the model does not see the
	// contents of (ACP's resource_link): Name and URI are required; Text
	// is its description and MIMEType its type, both optional.
	AttachLink AttachmentKind = "link"
	// AttachResource is a resource embedded with its text (ACP's
	// "resource" with text contents): URI is required, Text is the
	// contents, MIMEType optional.
	AttachResource AttachmentKind = "resource"
	// AttachImage is an image: Data holds its bytes (not base64) and
	// MIMEType its type (required); Name and URI are optional.
	AttachImage AttachmentKind = "image"
)

// MaxAttachmentData is the most bytes of image data one message carries
// (the sum of its attachments' Data), so that a message stays storable and
// within what the providers take (Anthropic's limit for one image is 5 MB).
const MaxAttachmentData = 5 << 20

// Attachment is one item of a user message besides its text (see
// [AttachmentKind] for which fields each kind uses; the others are empty).
// At is where it stands in the message: a byte offset into Text, from 0
// (before the text) to len(Text) (after it), never decreasing along a
// message's Attachments. A provider shows the model the text and the
// attachments in that order.
type Attachment struct {
	Kind     AttachmentKind
	At       int
	Name     string
	URI      string
	MIMEType string
	Text     string
	Data     []byte
	// Note is what the agent, not the user, tells the model about the
	// attachment: for a link to a file it can read, how to read it. It is
	// shown to the model after the attachment, never to the user as part
	// of what they sent.
	Note string
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
	case m.Role != RoleUser && len(m.Attachments) > 0:
		return fmt.Errorf("%w: message %s: only user messages carry attachments", ErrInvalid, m.ID)
	case m.Role != RoleTool && len(m.Files) > 0:
		return fmt.Errorf("%w: message %s: only tool messages record files", ErrInvalid, m.ID)
	case m.Role != RoleAssistant && len(m.Thoughts) > 0:
		return fmt.Errorf("%w: message %s: only assistant messages carry thoughts", ErrInvalid, m.ID)
	}
	if err := validFiles(m.Files); err != nil {
		return fmt.Errorf("%w: message %s: %w", ErrInvalid, m.ID, err)
	}
	if err := ValidAttachments(m.Text, m.Attachments); err != nil {
		return fmt.Errorf("%w: message %s: %w", ErrInvalid, m.ID, err)
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

// Part is one piece of a message in the order the model reads it: a run of
// its Text, or one of its Attachments (see [Message.Parts]).
type Part struct {
	Text       string      // a run of Text, when Attachment is nil
	Attachment *Attachment // points into the message's Attachments
}

// Parts returns m's text and attachments in order: the runs of Text between
// the places of the attachments, each attachment where it stands. Empty
// runs are left out, so a message without attachments is one part (none
// when its text is empty too). m must be valid (see [ValidAttachments]).
func (m *Message) Parts() []Part {
	if len(m.Attachments) == 0 {
		if m.Text == "" {
			return nil
		}
		return []Part{{Text: m.Text}}
	}
	out := make([]Part, 0, 2*len(m.Attachments)+1)
	from := 0
	for i := range m.Attachments {
		a := &m.Attachments[i]
		if a.At > from {
			out = append(out, Part{Text: m.Text[from:a.At]})
			from = a.At
		}
		out = append(out, Part{Attachment: a})
	}
	if from < len(m.Text) {
		out = append(out, Part{Text: m.Text[from:]})
	}
	return out
}

// ValidAttachments reports the first problem of attachments as those of a
// message with text: a kind without its required fields, a place outside
// text or before the one of the attachment before it, or more than
// [MaxAttachmentData] bytes of image data in all. The error does not wrap
// ErrInvalid (Validate wraps it); sessions check a prompt's attachments
// with it before they queue anything.
func ValidAttachments(text string, attachments []Attachment) error {
	at, data := 0, 0
	for i := range attachments {
		a := &attachments[i]
		switch a.Kind {
		case AttachLink:
			if a.Name == "" || a.URI == "" {
				return fmt.Errorf("attachment %d: a link needs a name and a URI", i)
			}
		case AttachResource:
			if a.URI == "" {
				return fmt.Errorf("attachment %d: a resource needs a URI", i)
			}
		case AttachImage:
			if a.MIMEType == "" || len(a.Data) == 0 {
				return fmt.Errorf("attachment %d: an image needs a MIME type and data", i)
			}
		default:
			return fmt.Errorf("attachment %d has unknown kind %q", i, a.Kind)
		}
		if a.Kind != AttachImage && len(a.Data) > 0 {
			return fmt.Errorf("attachment %d: only an image has data", i)
		}
		if a.At < at || a.At > len(text) {
			return fmt.Errorf("attachment %d stands at %d, outside %d..%d", i, a.At, at, len(text))
		}
		at = a.At
		data += len(a.Data)
	}
	if data > MaxAttachmentData {
		return fmt.Errorf("%w: the images hold %d bytes, more than the %d a message may carry", ErrTooLarge, data, MaxAttachmentData)
	}
	return nil
}

// ErrTooLarge is wrapped by the error of attachments whose images hold
// more than [MaxAttachmentData] bytes.
var ErrTooLarge = errors.New("history: attachments too large")

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
	// Files are the files the archived messages read or changed
	// ([Message.Files] folded: each path once, with its last access),
	// newest access first, at most [MaxFiles] (the newest); nil for none.
	Files []FileState
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

// EntryQuery selects the entries [Reader.Entries] returns.
type EntryQuery struct {
	// From is the position of the first entry read, To the position after
	// the last one; To 0 reads to the end of the timeline.
	From, To int64
	// Records leaves the messages out: only the compaction, uncompaction
	// and configuration records at those positions are returned.
	Records bool
}

// ConfigChange is one change of a session's configuration (see
// [Writer.RecordConfig]).
type ConfigChange struct {
	Config json.RawMessage // the configuration from now on, as SetConfig takes it; nil means none
	Data   json.RawMessage // what the timeline records of the change: JSON, opaque to the store
	At     time.Time
}

// ConfigRecord is one configuration change at its timeline position (see
// [Writer.RecordConfig]).
type ConfigRecord struct {
	Data     json.RawMessage // ConfigChange.Data
	At       time.Time
	Position int64
}

// UncompactionRecord is one undone compaction at its timeline position
// (see [Writer.Uncompact]).
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
	// Title and Cwd are metadata for listing ([Catalog]); "" means none.
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
	// Title is the session's title as [Catalog.ListSessions] lists it
	// (its own, or a default from its first message); Cwd its working
	// directory.
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
	// session: 0 when none.
	LastSeq uint64
	// ForkOf and ForkAt are as [SessionInfo] has them; ForkPosition is
	// the position in ForkOf's timeline the fork was made at (the last
	// entry it inherited; 0 when ForkOf is "").
	ForkOf, ForkAt string
	ForkPosition   int64
	// LogCovers is the highest [EventBatch.Covers] logged for the session:
	// every timeline entry below it has its event in the log. 0 when none
	// was.
	LogCovers int64
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
	// Usage is recorded in the session's [Ledger] in the commit's
	// transaction: the summary call's record (none for a summary the
	// application supplied).
	Usage []UsageRecord
	// Files are recorded with the Segment (see [Segment].Files), checked
	// with [ValidFileStates]; optional.
	Files []FileState
}

// Uncompaction names one undo (see [Writer.Uncompact]).
type Uncompaction struct {
	ID string // unique per session
	At time.Time
}

// ErrNothingToUndo is returned by Uncompact when the session has no Segment
// that is not undone.
var ErrNothingToUndo = errors.New("history: no compaction to undo")

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
