package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// fileTools are "touch", which records an access of a file in the
// session's ledger ({"path","op","hash"}), and "seen", which answers what
// the ledger knows of a path.
func fileTools() []session.Tool {
	return []session.Tool{
		{Name: "touch", Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in struct{ Path, Op, Hash string }
			if err := json.Unmarshal(raw, &in); err != nil {
				return "", err
			}
			return "ok", session.FileLedgerOf(ctx).Record(history.FileAccess{Path: in.Path, Op: history.FileOp(in.Op), Hash: in.Hash, Size: 1})
		}},
		{Name: "seen", Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in struct{ Path string }
			if err := json.Unmarshal(raw, &in); err != nil {
				return "", err
			}
			st, ok := session.FileLedgerOf(ctx).Seen(in.Path)
			if !ok {
				return "unknown", nil
			}
			return fmt.Sprintf("%s read=%v changed=%v call=%s", st.Hash, st.Read, st.Changed, st.ToolCallID), nil
		}},
	}
}

func touch(id, path, op, hash string) history.ToolCall {
	return call(id, "touch", fmt.Sprintf(`{"path":%q,"op":%q,"hash":%q}`, path, op, hash))
}

// lastTool is the text of the last tool result of a turn.
func lastTool(res session.TurnResult) string {
	for i := len(res.Messages) - 1; i >= 0; i-- {
		if res.Messages[i].Role == history.RoleTool {
			return res.Messages[i].Text
		}
	}
	return ""
}

// TestFiles_LedgerSurvives: what the tools record goes into the tool
// results' Files; a compaction records the files of its prefix in its
// Segment (and in the CompactResult), the retained summary view lists them
// newest first, and the ledger is the same after the compaction, after
// reopening (another process) and after an undo, in every store.
func TestFiles_LedgerSurvives(t *testing.T) {
	for name, newStore := range allStores(t) {
		t.Run(name, func(t *testing.T) {
			store, reopen := newStore(t)
			fake := providertest.New()
			cfg := session.Config{ID: "f", Store: store, Tools: fileTools(), Logger: zaptest.NewLogger(t)}
			s := newSession(t, fake, cfg)
			fake.QueueTurn(
				providertest.Reply{ToolCalls: []history.ToolCall{touch("c1", "a.go", "read", "h1"), touch("c2", "b.go", "read", "h2")}},
				providertest.Reply{ToolCalls: []history.ToolCall{touch("c3", "a.go", "changed", "h3")}},
				providertest.Reply{Text: "done"},
			)
			res := wait(t, mustPrompt(t, s, "work"))
			require.NoError(t, res.Err)
			snap, err := store.Load(ctxT(t), "f")
			require.NoError(t, err)
			var files []history.FileAccess
			for _, m := range snap.Active {
				files = append(files, m.Files...)
			}
			require.Len(t, files, 3)
			assert.Equal(t, "c3", files[2].ToolCallID)
			assert.Equal(t, history.FileChanged, files[2].Op)
			converse(t, s, fake, 2) // the compaction keeps the newest exchanges

			fake.QueueSummary(providertest.Reply{Text: "worked on a.go"})
			cres := wait(t, mustCompact(t, s, ""))
			require.True(t, cres.Compacted, cres.Error)
			require.Len(t, cres.Segment.Files, 2)
			assert.Equal(t, "a.go", cres.Segment.Files[0].Path, "newest first")
			assert.True(t, cres.Segment.Files[0].Read && cres.Segment.Files[0].Changed)
			assert.Equal(t, "h3", cres.Segment.Files[0].Hash)
			heads, err := store.SegmentHeaders(ctxT(t), "f")
			require.NoError(t, err)
			require.Len(t, heads, 1)
			assert.Equal(t, cres.Segment.Files, heads[0].Files, "times as the store keeps them: UTC")

			fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c4", "seen", `{"path":"a.go"}`)}}, providertest.Reply{Text: "ok"})
			res = wait(t, mustPrompt(t, s, "what of a.go"))
			require.NoError(t, res.Err)
			assert.Equal(t, "h3 read=true changed=true call=c3", lastTool(res), "the ledger after the compaction")
			reqs := fake.Requests()
			sum := reqs[len(reqs)-1].Summary
			assert.True(t, strings.HasPrefix(sum, "worked on a.go\n\nFiles read or changed before this summary, newest first"), sum)
			assert.Contains(t, sum, "\n- a.go (read, changed)\n- b.go (read)")
			require.NoError(t, s.Close())

			// Another process opens it.
			cfg.Store = reopen()
			s2 := newSession(t, fake, cfg)
			fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c5", "seen", `{"path":"b.go"}`)}}, providertest.Reply{Text: "ok"})
			res = wait(t, mustPrompt(t, s2, "what of b.go"))
			require.NoError(t, res.Err)
			assert.Equal(t, "h2 read=true changed=false call=c2", lastTool(res), "the ledger after reopening")
			reqs = fake.Requests()
			assert.Equal(t, sum, reqs[len(reqs)-1].Summary, "the same summary view after reopening")

			// Undone, the compaction's messages are Active again: the
			// ledger is the same, and no summary lists files.
			ures, err := s2.Uncompact(ctxT(t), session.UncompactRequest{})
			require.NoError(t, err)
			_ = wait(t, ures)
			fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c6", "seen", `{"path":"a.go"}`)}}, providertest.Reply{Text: "ok"})
			res = wait(t, mustPrompt(t, s2, "and now"))
			require.NoError(t, res.Err)
			assert.Equal(t, "h3 read=true changed=true call=c3", lastTool(res), "the ledger after the undo")
			reqs = fake.Requests()
			assert.Empty(t, reqs[len(reqs)-1].Summary)
		})
	}
}

// TestFiles_RecordInvalid: an access without a path is refused by Record
// and not stored; the call's result says so.
func TestFiles_RecordInvalid(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Tools: fileTools()})
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{touch("c1", "", "read", "h")}}, providertest.Reply{Text: "ok"})
	res := wait(t, mustPrompt(t, s, "x"))
	require.NoError(t, res.Err)
	assert.Contains(t, lastTool(res), "file ledger: no path")
	for _, m := range res.Messages {
		assert.Empty(t, m.Files)
	}
	assert.Nil(t, session.FileLedgerOf(context.Background()), "no ledger outside a tool call")
	var none *session.FileLedger
	assert.NoError(t, none.Record(history.FileAccess{Path: "a", Op: history.FileRead}))
	_, ok := none.Seen("a")
	assert.False(t, ok)
}

// TestFiles_ResyncReadsTheSegmentsAgain: another process compacted the
// session, archiving files this one never folded; this process learns it
// at its next write (a conflict: it adopts the store, whose archive
// changed) and its next tool call reads the standing Segments' files
// again, so the ledger knows them.
func TestFiles_ResyncReadsTheSegmentsAgain(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	cfg := session.Config{ID: "f", Store: store, Tools: fileTools(), Logger: zaptest.NewLogger(t)}
	a := newSession(t, fake, cfg)
	converse(t, a, fake, 1)

	cfg.Provider = fake
	b, err := session.Open(ctxT(t), cfg)
	require.NoError(t, err)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{touch("c1", "b.go", "read", "hb")}}, providertest.Reply{Text: "read"})
	require.NoError(t, wait(t, mustPrompt(t, b, "read b.go")).Err)
	converse(t, b, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "b read b.go"})
	require.True(t, wait(t, mustCompact(t, b, "")).Compacted)
	require.NoError(t, b.Close())

	require.ErrorIs(t, wait(t, mustPrompt(t, a, "stale")).Err, history.ErrConflict, "a's write meets b's")
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c2", "seen", `{"path":"b.go"}`)}}, providertest.Reply{Text: "done"})
	res := wait(t, mustPrompt(t, a, "what of b.go?"))
	require.NoError(t, res.Err)
	assert.Equal(t, "hb read=true changed=false call=c1", lastTool(res), "the archived file, read again after the resync")
}
