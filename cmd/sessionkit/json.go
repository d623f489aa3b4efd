package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// The JSON forms of the commands' output. Field names are snake_case; every
// text is kept verbatim (see text), so that an export holds the session's
// messages and Segments exactly as the store does.

// text is a stored text. Valid UTF-8 is a JSON string; anything else (a
// store keeps bytes exactly) is {"base64": "..."} so that nothing is
// replaced by U+FFFD.
type text string

// MarshalJSON implements json.Marshaler.
func (t text) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(t)) {
		return json.Marshal(string(t))
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString([]byte(t))})
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = text(s)
		return nil
	}
	var enc struct {
		Base64 string `json:"base64"`
	}
	if err := json.Unmarshal(b, &enc); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(enc.Base64)
	*t = text(raw)
	return err
}

type toolCallJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the stored JSON arguments as a string, byte for byte
	// (a raw JSON value would be re-formatted by the encoder).
	Arguments text `json:"arguments"`
}

type messageJSON struct {
	ID         string         `json:"id"`
	Role       history.Role   `json:"role"`
	Text       text           `json:"text"`
	ToolCalls  []toolCallJSON `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Steer      bool           `json:"steer,omitempty"`
	CreatedAt  time.Time      `json:"created_at,omitzero"`
	// Attachments are a user message's (history.Attachment); an image's
	// data is base64.
	Attachments []attachmentJSON `json:"attachments,omitempty"`
	// Files are the files a tool result read or changed
	// (history.FileAccess).
	Files []fileJSON `json:"files,omitempty"`
}

// fileJSON is a history.FileAccess, and with read and changed a
// history.FileState (a Segment's files).
type fileJSON struct {
	Path       text           `json:"path"`
	Op         history.FileOp `json:"op"`
	Hash       string         `json:"hash,omitempty"`
	Size       int64          `json:"size"`
	Line       int            `json:"line,omitempty"`
	Length     int64          `json:"length,omitempty"`
	At         time.Time      `json:"at,omitzero"`
	ToolCallID text           `json:"tool_call_id,omitempty"`
	Read       bool           `json:"read,omitempty"`
	Changed    bool           `json:"changed,omitempty"`
}

func toFile(a *history.FileAccess) fileJSON {
	return fileJSON{Path: text(a.Path), Op: a.Op, Hash: a.Hash, Size: a.Size, Line: a.Line, Length: a.Length, At: a.At, ToolCallID: text(a.ToolCallID)}
}

type attachmentJSON struct {
	Kind     history.AttachmentKind `json:"kind"`
	At       int                    `json:"at"`
	Name     text                   `json:"name,omitempty"`
	URI      text                   `json:"uri,omitempty"`
	MIMEType text                   `json:"mime_type,omitempty"`
	Text     text                   `json:"text,omitempty"`
	Data     []byte                 `json:"data,omitempty"`
	Note     text                   `json:"note,omitempty"`
}

type segmentJSON struct {
	ID           string          `json:"id"`
	CompactID    string          `json:"compact_id"`
	Trigger      history.Trigger `json:"trigger"`
	Position     int64           `json:"position"`
	StartedAt    time.Time       `json:"started_at,omitzero"`
	CreatedAt    time.Time       `json:"created_at,omitzero"`
	InputTokens  int             `json:"input_tokens"`
	OutputTokens int             `json:"output_tokens"`
	// What made the summary and the context around the compaction.
	SummaryProvider string `json:"summary_provider,omitempty"`
	SummaryModel    string `json:"summary_model,omitempty"`
	ContextBefore   int    `json:"context_before,omitempty"`
	ContextAfter    int    `json:"context_after,omitempty"`
	// Set once the compaction was undone (Uncompact).
	UndoID       string    `json:"undo_id,omitempty"`
	UndoneAt     time.Time `json:"undone_at,omitzero"`
	Instructions text      `json:"instructions,omitempty"`
	Summary      text      `json:"summary"`
	// How many of the archived messages' facts the summary kept (zero for
	// a Segment committed before fidelity was recorded).
	Fidelity fidelityJSON `json:"fidelity"`
	// Files are the files the archived messages read or changed, newest
	// first (history.Segment.Files).
	Files    []fileJSON    `json:"files,omitempty"`
	Messages []messageJSON `json:"messages"`
}

type uncompactionJSON struct {
	ID        string    `json:"id"`
	SegmentID string    `json:"segment_id"`
	CompactID string    `json:"compact_id"`
	Restored  int       `json:"restored"`
	At        time.Time `json:"at,omitzero"`
}

type compactionJSON struct {
	CompactID    string                   `json:"compact_id"`
	Trigger      history.Trigger          `json:"trigger"`
	Status       history.CompactionStatus `json:"status"`
	Instructions text                     `json:"instructions,omitempty"`
	Summary      text                     `json:"summary,omitempty"`
	Error        text                     `json:"error,omitempty"`
	StartedAt    time.Time                `json:"started_at,omitzero"`
	FinishedAt   time.Time                `json:"finished_at,omitzero"`
}

type entryJSON struct {
	Position     int64             `json:"position"`
	Archived     bool              `json:"archived,omitempty"`
	Message      *messageJSON      `json:"message,omitempty"`
	Compaction   *compactionJSON   `json:"compaction,omitempty"`
	Uncompaction *uncompactionJSON `json:"uncompaction,omitempty"`
	Config       *configJSON       `json:"config,omitempty"`
}

// configJSON is a recorded settings change: what the session recorded of
// it (for a session of this module, a session.SettingsEvent's values).
type configJSON struct {
	Data json.RawMessage `json:"data"`
	At   time.Time       `json:"at"`
}

type leaseJSON struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

type sessionJSON struct {
	ID        string     `json:"id"`
	Title     text       `json:"title"`
	Cwd       text       `json:"cwd"`
	CreatedAt time.Time  `json:"created_at,omitzero"`
	UpdatedAt time.Time  `json:"updated_at,omitzero"`
	Messages  int        `json:"messages"`
	Active    int        `json:"active"`
	Archived  int64      `json:"archived"`
	ServedBy  *leaseJSON `json:"served_by,omitempty"`
	// ForkOf and ForkAt name the session this one is a fork of and the
	// message it was forked at (omitted for no fork).
	ForkOf string `json:"fork_of,omitempty"`
	ForkAt string `json:"fork_at,omitempty"`
}

// showJSON is the output of show --json, and the head of an export.
type showJSON struct {
	ID       string          `json:"id"`
	Title    text            `json:"title"`
	Cwd      text            `json:"cwd"`
	ServedBy *leaseJSON      `json:"served_by,omitempty"`
	Settings json.RawMessage `json:"settings"` // as stored; null when none
	Summary  text            `json:"summary"`
	Archived int64           `json:"archived"`
	Active   []messageJSON   `json:"active"`
	Usage    *usageJSON      `json:"usage,omitempty"` // show only: the usage ledger added up
	// ForkOf, ForkAt and ForkPosition say what the session is a fork of
	// (omitted for no fork): the source, the message and the source's
	// timeline position it was forked at.
	ForkOf       string `json:"fork_of,omitempty"`
	ForkAt       string `json:"fork_at,omitempty"`
	ForkPosition int64  `json:"fork_position,omitempty"`
}

// exportJSON is the document of export.
type exportJSON struct {
	Format string `json:"format"`
	showJSON
	Segments []segmentJSON `json:"segments"`
	Timeline []entryJSON   `json:"timeline"`
}

// exportFormat names the export document's shape.
const exportFormat = "sessionkit.export.v1"

func toMessage(m *history.Message) messageJSON {
	out := messageJSON{ID: m.ID, Role: m.Role, Text: text(m.Text), ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, toolCallJSON{ID: c.ID, Name: c.Name, Arguments: text(c.Arguments)})
	}
	for _, a := range m.Attachments {
		out.Attachments = append(out.Attachments, attachmentJSON{Kind: a.Kind, At: a.At, Name: text(a.Name), URI: text(a.URI),
			MIMEType: text(a.MIMEType), Text: text(a.Text), Data: a.Data, Note: text(a.Note)})
	}
	for i := range m.Files {
		out.Files = append(out.Files, toFile(&m.Files[i]))
	}
	return out
}

func toMessages(msgs []history.Message) []messageJSON {
	out := make([]messageJSON, len(msgs))
	for i := range msgs {
		out[i] = toMessage(&msgs[i])
	}
	return out
}

func toSegment(s *history.Segment) segmentJSON {
	return segmentJSON{
		ID: s.ID, CompactID: s.CompactID, Trigger: s.Trigger, Position: s.Position,
		StartedAt: s.StartedAt, CreatedAt: s.CreatedAt,
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		SummaryProvider: s.SummaryProvider, SummaryModel: s.SummaryModel,
		ContextBefore: s.ContextBefore, ContextAfter: s.ContextAfter,
		UndoID: s.UndoID, UndoneAt: s.UndoneAt,
		Instructions: text(s.Instructions), Summary: text(s.Summary),
		Fidelity: toFidelity(s.Fidelity),
		Files:    toFiles(s.Files),
		Messages: toMessages(s.Messages),
	}
}

func toFiles(files []history.FileState) []fileJSON {
	var out []fileJSON
	for i := range files {
		f := toFile(&files[i].FileAccess)
		f.Read, f.Changed = files[i].Read, files[i].Changed
		out = append(out, f)
	}
	return out
}

func toEntry(e *history.Entry) entryJSON {
	out := entryJSON{Position: e.Position, Archived: e.Archived}
	if e.Message != nil {
		m := toMessage(e.Message)
		out.Message = &m
	}
	if c := e.Compaction; c != nil {
		out.Compaction = &compactionJSON{
			CompactID: c.CompactID, Trigger: c.Trigger, Status: c.Status,
			Instructions: text(c.Instructions), Summary: text(c.Summary), Error: text(c.Error),
			StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		}
	}
	if u := e.Uncompaction; u != nil {
		out.Uncompaction = &uncompactionJSON{ID: u.ID, SegmentID: u.SegmentID, CompactID: u.CompactID, Restored: u.Restored, At: u.At}
	}
	if c := e.Config; c != nil {
		out.Config = &configJSON{Data: c.Data, At: c.At}
	}
	return out
}

func toLease(l *history.LeaseInfo) *leaseJSON {
	if l == nil {
		return nil
	}
	return &leaseJSON{Holder: l.Holder, Expires: l.Expires}
}

func toShow(snap *history.Snapshot, lease *history.LeaseInfo) showJSON {
	settings := snap.Config
	if len(settings) == 0 {
		settings = json.RawMessage("null")
	}
	return showJSON{
		ID: snap.ID, Title: text(snap.Title), Cwd: text(snap.Cwd), ServedBy: toLease(lease),
		Settings: settings, Summary: text(snap.Summary), Archived: snap.Archived,
		Active: toMessages(snap.Active),
		ForkOf: snap.ForkOf, ForkAt: snap.ForkAt, ForkPosition: snap.ForkPosition,
	}
}

// writeJSON writes v as indented JSON, HTML characters unescaped.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
