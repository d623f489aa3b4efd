package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// TestMain stops the PostgreSQL server of TestPostgres and checks that no
// goroutine is left behind (goleak).
func TestMain(m *testing.M) { pgtest.Main(m) }

type result struct {
	status         int
	stdout, stderr string
}

// sk runs the command line args in process.
func sk(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	status := cli(t.Context(), args, console{}, &out, &errOut)
	return result{status, out.String(), errOut.String()}
}

// converse holds a conversation on a session of store with automatic and
// manual compactions, and returns the session's ID. The session is closed
// unless keep is set (then the caller closes it).
func converse(t *testing.T, store history.Store, title string, keep bool) (string, *session.Session) {
	t.Helper()
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{
		Provider:          offline.New(),
		Store:             store,
		SystemPrompt:      "You are a careful coding agent.",
		AutoCompactTokens: 120,
		Title:             title,
		Cwd:               "/src/falcon",
		Tools: []session.Tool{{
			Name:        "read_file",
			Description: "Reads a file.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
			Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				// As tools/workspace records a read in the file ledger.
				err := session.FileLedgerOf(ctx).Record(history.FileAccess{Path: "main.go", Op: history.FileRead, Hash: "xxh64:00000000000000aa", Size: 29})
				return "package main\n\nfunc main() {}\n", err
			},
		}},
	})
	require.NoError(t, err)
	for _, p := range []string{
		"We are building a CLI called falcon in Go.",
		"Read file main.go",
		"We decided to use the standard flag package, no cobra.",
		"The binary must print its version with -version.",
		"Errors go to stderr <with> \"quotes\" & tabs\there.",
		"What did we decide about cobra?",
	} {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: p})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
	}
	// A prompt with attachments, which show and export keep.
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "Compare  with the notes", Attachments: []history.Attachment{
		{Kind: history.AttachLink, At: 8, Name: "flags.go", URI: "file:///src/falcon/flags.go", Note: "read it with read_file"},
		{Kind: history.AttachResource, At: 23, URI: "file:///src/falcon/NOTES.md", MIMEType: "text/markdown", Text: "no cobra"},
	}})
	require.NoError(t, err)
	if res, err := h.Wait(ctx); assert.NoError(t, err) {
		require.NoError(t, res.Err)
	}
	h2, err := s.Compact(ctx, session.CompactRequest{Instructions: "keep the flag decisions"})
	require.NoError(t, err)
	<-h2.Finished()
	require.True(t, h2.Result().Compacted, h2.Result().Error)
	id := s.ID()
	if !keep {
		require.NoError(t, s.Close())
		return id, nil
	}
	return id, s
}

// writeSessions writes two sessions to a new SQLite file and returns its
// path and their IDs, the newest last.
func writeSessions(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	a, _ := converse(t, st, "first session", false)
	b, _ := converse(t, st, "", false)
	return path, []string{a, b}
}

func TestSessions(t *testing.T) {
	path, ids := writeSessions(t)
	listPage = 1 // every session on a page of its own
	t.Cleanup(func() { listPage = history.MaxListLimit })

	res := sk(t, "--store", path, "sessions")
	require.Equal(t, 0, res.status, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], "TITLE")
	assert.Contains(t, lines[1], ids[1], "newest first")
	assert.Contains(t, lines[1], "We are building a CLI called falcon in Go.", "a default title")
	assert.Contains(t, lines[2], ids[0])
	assert.Contains(t, lines[2], "first session")
	assert.Contains(t, lines[2], "/src/falcon")

	res = sk(t, "sessions", "--store", path, "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var list []sessionJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list))
	require.Len(t, list, 2)
	assert.Equal(t, ids[1], list[0].ID)
	assert.Equal(t, ids[0], list[1].ID)
	for _, s := range list {
		assert.Equal(t, s.Messages, s.Active+int(s.Archived))
		assert.Positive(t, s.Archived)
		assert.Nil(t, s.ServedBy)
	}

	res = sk(t, "--store", path, "sessions", "--limit", "1", "--json")
	require.Equal(t, 0, res.status, res.stderr)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list))
	require.Len(t, list, 1)

	res = sk(t, "--store", path, "sessions", "--cwd", "/elsewhere")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Equal(t, "no sessions\n", res.stdout)
}

func TestShow(t *testing.T) {
	path, ids := writeSessions(t)
	st := openForTest(t, path)
	snap, err := st.Load(t.Context(), ids[0])
	require.NoError(t, err)

	res := sk(t, "--store", path, "show", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	for _, want := range []string{"session   " + ids[0], "title     first session", "served    no", "auto_compact_tokens", "120", "retained summary", "active history"} {
		assert.Contains(t, res.stdout, want)
	}
	assert.Contains(t, res.stdout, strings.SplitN(snap.Summary, "\n", 2)[0])

	res = sk(t, "--store", path, "show", ids[0], "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var got showJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	assert.Equal(t, snap.Summary, string(got.Summary))
	assert.JSONEq(t, string(snap.Config), string(got.Settings))
	require.Len(t, got.Active, len(snap.Active))
	for i := range got.Active {
		assert.Equal(t, norm(snap.Active[i]), norm(fromMessage(&got.Active[i])))
	}
}

func TestSegments(t *testing.T) {
	path, ids := writeSessions(t)
	segs, err := openForTest(t, path).Segments(t.Context(), ids[0])
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(segs), 2)

	res := sk(t, "--store", path, "segments", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "trigger=auto")
	assert.Contains(t, res.stdout, "trigger=manual")
	assert.Contains(t, res.stdout, "instructions  keep the flag decisions")
	assert.Contains(t, res.stdout, "tokens    summary call:")
	assert.Contains(t, res.stdout, "\n  files     read main.go\n", "the files its messages read")
	assert.NotContains(t, res.stdout, "── user", "messages only with --messages")

	res = sk(t, "--store", path, "segments", "--messages", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	for _, seg := range segs {
		for _, m := range seg.Messages {
			assert.Contains(t, res.stdout, "── "+string(m.Role)+" "+m.ID)
			for _, line := range strings.Split(m.Text, "\n") {
				assert.Contains(t, res.stdout, line)
			}
		}
	}

	res = sk(t, "--store", path, "segments", ids[0], "--json", "--messages")
	require.Equal(t, 0, res.status, res.stderr)
	var got []segmentJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Len(t, got, len(segs))
	for i := range got {
		assert.Equal(t, normSegment(segs[i]), normSegment(fromSegment(&got[i])))
	}
}

func TestTimeline(t *testing.T) {
	path, ids := writeSessions(t)
	entries, err := openForTest(t, path).Timeline(t.Context(), ids[0])
	require.NoError(t, err)

	res := sk(t, "--store", path, "timeline", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, len(entries))
	for i, e := range entries {
		if e.Compaction != nil {
			assert.Contains(t, lines[i], "compaction "+string(e.Compaction.Status))
			assert.Contains(t, lines[i], e.Compaction.CompactID)
		} else {
			assert.Contains(t, lines[i], string(e.Message.Role))
		}
	}
	assert.Contains(t, res.stdout, "compaction completed auto")
	assert.Contains(t, res.stdout, "compaction completed manual")

	res = sk(t, "--store", path, "timeline", "--json", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	var got []entryJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Len(t, got, len(entries))
	for i := range got {
		assert.Equal(t, entries[i].Position, got[i].Position)
		assert.Equal(t, entries[i].Archived, got[i].Archived)
	}
}

// TestExport: the export is one JSON document whose Segments, Active
// history and timeline are the store's, verbatim.
func TestExport(t *testing.T) {
	path, ids := writeSessions(t)
	exportRoundTrips(t, path, openForTest(t, path), ids[0])
}

// exportRoundTrips checks the export of session id of store st (named spec
// on the command line) against the store's own reads.
func exportRoundTrips(t *testing.T, spec string, st history.Store, id string) {
	t.Helper()
	ctx := t.Context()
	snap, err := st.Load(ctx, id)
	require.NoError(t, err)
	segs, err := st.Segments(ctx, id)
	require.NoError(t, err)
	entries, err := st.Timeline(ctx, id)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(segs), 2, "the session was compacted")
	calls := 0
	for _, seg := range segs {
		for _, m := range seg.Messages {
			calls += len(m.ToolCalls)
		}
	}
	require.Positive(t, calls, "the Segments hold tool calls")

	res := sk(t, "--store", spec, "export", id)
	assert.Equal(t, res, sk(t, "--store", spec, "export", "--json", id), "--json changes nothing")
	require.Equal(t, 0, res.status, res.stderr)
	require.True(t, json.Valid([]byte(res.stdout)))
	var doc exportJSON
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc))
	assert.False(t, dec.More(), "one document")
	assert.Equal(t, exportFormat, doc.Format)
	assert.Equal(t, id, doc.ID)
	assert.Equal(t, snap.Summary, string(doc.Summary))
	assert.JSONEq(t, string(snap.Config), string(doc.Settings))

	require.Len(t, doc.Segments, len(segs))
	for i := range segs {
		assert.Equal(t, normSegment(segs[i]), normSegment(fromSegment(&doc.Segments[i])), "segment %d", i)
	}
	require.Len(t, doc.Active, len(snap.Active))
	for i := range snap.Active {
		assert.Equal(t, norm(snap.Active[i]), norm(fromMessage(&doc.Active[i])))
	}
	require.Len(t, doc.Timeline, len(entries))
	for i, e := range entries {
		got := doc.Timeline[i]
		assert.Equal(t, e.Position, got.Position)
		if e.Message != nil {
			require.NotNil(t, got.Message)
			assert.Equal(t, norm(*e.Message), norm(fromMessage(got.Message)))
		} else {
			require.NotNil(t, got.Compaction)
			assert.Equal(t, e.Compaction.CompactID, got.Compaction.CompactID)
			assert.Equal(t, e.Compaction.Status, got.Compaction.Status)
			assert.Equal(t, e.Compaction.Summary, string(got.Compaction.Summary))
		}
	}
}

// TestTextVerbatim: text that is not UTF-8 survives the JSON form.
func TestTextVerbatim(t *testing.T) {
	for _, s := range []string{"", "plain", "<&> \"q\"\n\ttab", "bad \xff\xfe bytes"} {
		b, err := json.Marshal(text(s))
		require.NoError(t, err)
		var back text
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, s, string(back))
	}
}

// TestServedSession: while an agent serves a session, every command reads
// it (no lease is taken: the agent goes on writing) and says that it is
// served.
func TestServedSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path, sqlite.WithHolder("agent-7"))
	require.NoError(t, err)
	defer st.Close()
	id, s := converse(t, st, "served", true)
	defer s.Close()

	for _, args := range [][]string{{"show", id}, {"segments", id}, {"timeline", id}, {"export", id}} {
		res := sk(t, append([]string{"--store", path}, args...)...)
		require.Equal(t, 0, res.status, res.stderr)
		assert.Contains(t, res.stderr, "is being served by agent-7", args)
	}
	res := sk(t, "--store", path, "show", id)
	assert.Contains(t, res.stdout, "served    by agent-7")
	res = sk(t, "--store", path, "sessions", "--json")
	var list []sessionJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list))
	require.Len(t, list, 1)
	require.NotNil(t, list[0].ServedBy)
	assert.Equal(t, "agent-7", list[0].ServedBy.Holder)

	// The agent still holds its session.
	h, err := s.Prompt(t.Context(), session.PromptRequest{Text: "still mine?"})
	require.NoError(t, err)
	r, err := h.Wait(t.Context())
	require.NoError(t, err)
	require.NoError(t, r.Err)
}

// TestPostgres: the commands on a PostgreSQL store.
func TestPostgres(t *testing.T) {
	url := pgtest.Database(t)
	st, err := postgres.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	id, _ := converse(t, st, "on postgres", false)

	res := sk(t, "--store", url, "sessions")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, id)
	assert.Contains(t, res.stdout, "on postgres")
	res = sk(t, "--store", url, "show", id)
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "retained summary")
	res = sk(t, "--store", url, "segments", id, "--messages")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "trigger=manual")
	exportRoundTrips(t, url, st, id)
}

// TestErrors: bad command lines exit 2 with one line naming what is wrong;
// a missing store or session exits 1; no store file is created.
func TestErrors(t *testing.T) {
	path, _ := writeSessions(t)
	missing := filepath.Join(t.TempDir(), "none.db")
	tests := []struct {
		args   []string
		status int
		want   string
	}{
		{nil, exitUsage, "no command"},
		{[]string{"--store", path, "list"}, exitUsage, `unknown command "list"`},
		{[]string{"--store", path, "show"}, exitUsage, "needs a session ID"},
		{[]string{"--store", path, "show", "a", "b"}, exitUsage, `unexpected "b"`},
		{[]string{"--store", path, "sessions", "extra"}, exitUsage, `unexpected "extra"`},
		{[]string{"--store", path, "sessions", "--limit", "-1"}, exitUsage, "-limit"},
		{[]string{"--store", path, "sessions", "--limit", "x"}, exitUsage, "-limit"},
		{[]string{"--store", path, "export", "--messages", "x"}, exitUsage, "-messages"},
		{[]string{"--store", path, "show", "--messages", "x"}, exitUsage, "-messages"},
		{[]string{"--store", filepath.Dir(path), "sessions"}, exitUsage, "is a directory"},
		{[]string{"--store", missing, "sessions"}, exitFailure, "no such file"},
		{[]string{"--store", path, "show", "nope"}, exitFailure, `no session "nope"`},
		{[]string{"--store", "postgres://u:secret@[::1/db", "sessions"}, exitUsage, "-store"},
	}
	for _, tt := range tests {
		res := sk(t, tt.args...)
		assert.Equal(t, tt.status, res.status, "%v: %s", tt.args, res.stderr)
		assert.Empty(t, res.stdout, tt.args)
		line := strings.TrimSuffix(res.stderr, "\n")
		assert.NotContains(t, line, "\n", tt.args)
		assert.Contains(t, line, tt.want, tt.args)
		assert.NotContains(t, line, "secret")
	}
	assert.NoFileExists(t, missing)

	res := sk(t, "-h")
	assert.Equal(t, 0, res.status)
	assert.Contains(t, res.stdout, "usage: sessionkit")
}

// openForTest opens the SQLite file at path for the test's own reads.
func openForTest(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// norm makes a message comparable: times in UTC, empty slices nil.
func norm(m history.Message) history.Message {
	m.CreatedAt = m.CreatedAt.UTC()
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	for i := range m.ToolCalls {
		if len(m.ToolCalls[i].Arguments) == 0 {
			m.ToolCalls[i].Arguments = nil
		}
	}
	return m
}

func normSegment(s history.Segment) history.Segment {
	s.CreatedAt, s.StartedAt = s.CreatedAt.UTC(), s.StartedAt.UTC()
	msgs := make([]history.Message, len(s.Messages))
	for i := range s.Messages {
		msgs[i] = norm(s.Messages[i])
	}
	s.Messages = msgs
	return s
}

// fromMessage is toMessage's inverse (an export read back).
func fromMessage(m *messageJSON) history.Message {
	out := history.Message{ID: m.ID, Role: m.Role, Text: string(m.Text), ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt}
	for _, c := range m.ToolCalls {
		tc := history.ToolCall{ID: c.ID, Name: c.Name}
		if c.Arguments != "" {
			tc.Arguments = json.RawMessage(c.Arguments)
		}
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	for _, a := range m.Attachments {
		out.Attachments = append(out.Attachments, history.Attachment{Kind: a.Kind, At: a.At, Name: string(a.Name), URI: string(a.URI),
			MIMEType: string(a.MIMEType), Text: string(a.Text), Data: a.Data, Note: string(a.Note)})
	}
	for i := range m.Files {
		out.Files = append(out.Files, fromFile(&m.Files[i]).FileAccess)
	}
	return out
}

// fromFile is toFile's inverse, with read and changed.
func fromFile(f *fileJSON) history.FileState {
	return history.FileState{
		FileAccess: history.FileAccess{Path: string(f.Path), Op: f.Op, Hash: f.Hash, Size: f.Size, Line: f.Line, Length: f.Length, At: f.At, ToolCallID: string(f.ToolCallID)},
		Read:       f.Read, Changed: f.Changed,
	}
}

// fromSegment is toSegment's inverse.
func fromSegment(s *segmentJSON) history.Segment {
	out := history.Segment{
		ID: s.ID, CompactID: s.CompactID, Trigger: s.Trigger, Position: s.Position,
		StartedAt: s.StartedAt, CreatedAt: s.CreatedAt,
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		SummaryProvider: s.SummaryProvider, SummaryModel: s.SummaryModel,
		ContextBefore: s.ContextBefore, ContextAfter: s.ContextAfter,
		UndoID: s.UndoID, UndoneAt: s.UndoneAt,
		Instructions: string(s.Instructions), Summary: string(s.Summary),
		Fidelity: history.Fidelity{Facts: s.Fidelity.Facts, Kept: s.Fidelity.Kept},
	}
	for _, m := range s.Fidelity.Missing {
		out.Fidelity.Missing = append(out.Fidelity.Missing, string(m))
	}
	for i := range s.Messages {
		out.Messages = append(out.Messages, fromMessage(&s.Messages[i]))
	}
	for i := range s.Files {
		out.Files = append(out.Files, fromFile(&s.Files[i]))
	}
	return out
}
