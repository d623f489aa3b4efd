package historytest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// fileMessages are a tool call and its result, which read one file whole
// and a range of another whose path is not UTF-8, and changed a third.
func fileMessages() []history.Message {
	call := json.RawMessage(`{"path":"a.go"}`)
	return []history.Message{
		{ID: "u1", Role: history.RoleUser, Text: "fix it", CreatedAt: t0},
		{ID: "a1", Role: history.RoleAssistant, CreatedAt: t0.Add(1), ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: call}}},
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c1", Text: "package a", CreatedAt: t0.Add(2), Files: []history.FileAccess{
			{Path: "a.go", Op: history.FileRead, Hash: "xxh64:0123456789abcdef", Size: 9, At: t0.Add(2), ToolCallID: "c1"},
			{Path: "dir/\xff\xfe.txt", Op: history.FileRead, Hash: "xxh64:fedcba9876543210", Size: 1 << 20, Line: 7, Length: 4096, At: t0.Add(3), ToolCallID: "c1"},
			{Path: "/other/b.go", Op: history.FileChanged, Hash: "xxh64:00000000000000ff", At: time.Time{}},
		}},
		{ID: "a2", Role: history.RoleAssistant, Text: "done", CreatedAt: t0.Add(4)},
	}
}

// testFiles checks that a tool message's files and a Segment's files come
// back exactly from every read (Load, Timeline, Segments, SegmentHeaders,
// after reopening), and that malformed ones are refused whole.
func testFiles(t *testing.T, h Harness) {
	ctx := context.Background()
	msgs := fileMessages()
	s, v := h.seeded(t, "f", msgs)
	snap, err := s.Load(ctx, "f")
	require.NoError(t, err)
	equalFiles(t, msgs, snap.Active)

	segFiles := []history.FileState{
		{FileAccess: msgs[2].Files[1], Read: true},
		{FileAccess: msgs[2].Files[0], Read: true, Changed: true},
	}
	v, err = s.BeginCompaction(ctx, "f", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, seg, err := s.CommitCompaction(ctx, "f", v, history.Commit{CompactID: "c1", SegmentID: "s1", Archive: 3, Summary: "read a.go", At: t0.Add(time.Minute), Files: segFiles})
	require.NoError(t, err)
	assert.Equal(t, segFiles, seg.Files, "CommitCompaction's Segment")
	s = h.reopen(t, s)
	for name, read := range map[string]func(context.Context, string) ([]history.Segment, error){"Segments": s.Segments, "SegmentHeaders": s.SegmentHeaders} {
		segs, err := read(ctx, "f")
		require.NoError(t, err, name)
		require.Len(t, segs, 1, name)
		require.Len(t, segs[0].Files, 2, name)
		for i := range segFiles {
			w, g := segFiles[i], segs[0].Files[i]
			assert.True(t, w.At.Equal(g.At), "%s: file %d At", name, i)
			w.At, g.At = time.Time{}, time.Time{}
			assert.Equal(t, w, g, "%s: file %d", name, i)
		}
		if name == "Segments" {
			equalFiles(t, msgs[:3], segs[0].Messages)
		}
	}
	equalFiles(t, msgs, timelineMessages(t, s, "f"))

	// A fork reads its source's files up to the fork point: the ledger
	// of a forked session is its source's.
	_, err = s.Fork(ctx, history.ForkSpec{ID: "f-fork", From: "f"})
	require.NoError(t, err)
	heads, err := s.SegmentHeaders(ctx, "f-fork")
	require.NoError(t, err)
	require.Len(t, heads, 1)
	assert.Len(t, heads[0].Files, 2, "the fork's Segment")
	equalFiles(t, msgs, timelineMessages(t, s, "f-fork"))

	many := make([]history.FileAccess, history.MaxFiles+1)
	for i := range many {
		many[i] = history.FileAccess{Path: "p", Op: history.FileRead}
	}
	for name, msg := range map[string]history.Message{
		"files on a user message": {ID: "x", Role: history.RoleUser, Text: "a", Files: []history.FileAccess{{Path: "a", Op: history.FileRead}}},
		"no path":                 {ID: "x", Role: history.RoleTool, ToolCallID: "c", Files: []history.FileAccess{{Op: history.FileRead}}},
		"unknown op":              {ID: "x", Role: history.RoleTool, ToolCallID: "c", Files: []history.FileAccess{{Path: "a", Op: "deleted"}}},
		"negative size":           {ID: "x", Role: history.RoleTool, ToolCallID: "c", Files: []history.FileAccess{{Path: "a", Op: history.FileRead, Size: -1}}},
		"length without line":     {ID: "x", Role: history.RoleTool, ToolCallID: "c", Files: []history.FileAccess{{Path: "a", Op: history.FileRead, Length: 3}}},
		"too many":                {ID: "x", Role: history.RoleTool, ToolCallID: "c", Files: many},
	} {
		_, err := s.Append(ctx, "f", v, []history.Message{msg})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	v, err = s.BeginCompaction(ctx, "f", v, history.CompactionRecord{CompactID: "c2", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	for name, files := range map[string][]history.FileState{
		"twice":            {{FileAccess: history.FileAccess{Path: "a", Op: history.FileRead}, Read: true}, {FileAccess: history.FileAccess{Path: "a", Op: history.FileRead}, Read: true}},
		"neither":          {{FileAccess: history.FileAccess{Path: "a", Op: history.FileRead}}},
		"malformed access": {{FileAccess: history.FileAccess{Op: history.FileRead}, Read: true}},
	} {
		_, _, err := s.CommitCompaction(ctx, "f", v, history.Commit{CompactID: "c2", SegmentID: "s2", Archive: 1, Summary: "x", At: t0, Files: files})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	snap, err = s.Load(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "no refused write changed the session")
}

// equalFiles is EqualMessages, the times of the files compared with Equal.
func equalFiles(t *testing.T, want, got []history.Message) {
	t.Helper()
	require.Equal(t, ids(want), ids(got))
	norm := func(msgs []history.Message) []history.Message {
		out := make([]history.Message, len(msgs))
		for i, m := range msgs {
			if m.Files != nil {
				m.Files = append([]history.FileAccess(nil), m.Files...)
				for j := range m.Files {
					m.Files[j].At = m.Files[j].At.UTC()
				}
			}
			out[i] = m
		}
		return out
	}
	EqualMessages(t, norm(want), norm(got))
}

// timelineMessages are the messages of session id's Timeline.
func timelineMessages(t *testing.T, s history.Store, id string) []history.Message {
	t.Helper()
	tl, err := s.Timeline(context.Background(), id)
	require.NoError(t, err)
	var got []history.Message
	for _, e := range tl {
		if e.Message != nil {
			got = append(got, *e.Message)
		}
	}
	return got
}
