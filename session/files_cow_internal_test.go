package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// TestFileLedger_CopyOnWrite: the worker of a tool batch reads the loop's
// file ledger without a copy (FileLedger.share). A batch whose calls
// record nothing copies nothing: its calls see the loop's own set, which
// is the loop's alone again afterwards. A batch that records copies once,
// the worker's view at its first record, which lets go of the loop's set,
// so the loop folds the results into its set in place.
func TestFileLedger_CopyOnWrite(t *testing.T) {
	ctx := t.Context()
	var seen []*fileSet // the set of the ledger each call ran with, after it ran
	note := func(ctx context.Context) { seen = append(seen, FileLedgerOf(ctx).set) }
	tools := []Tool{
		{Name: "look", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			_, known := FileLedgerOf(ctx).Seen("a.go")
			note(ctx)
			if !known {
				return "unknown", nil
			}
			return "known", nil
		}},
		{Name: "touch", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			err := FileLedgerOf(ctx).Record(history.FileAccess{Path: "a.go", Op: history.FileRead, Hash: "xxh64:0123456789abcdef", Size: 1})
			note(ctx)
			return "ok", err
		}},
	}
	fake := providertest.New()
	s, err := New(ctx, Config{Provider: fake, Tools: tools})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	loopSet := func() *fileSet {
		var set *fileSet
		require.NoError(t, s.read(ctx, func(l *loop) { set = l.files.set }))
		return set
	}
	turn := func(calls ...string) TurnResult {
		t.Helper()
		var tcs []history.ToolCall
		for i, name := range calls {
			tcs = append(tcs, history.ToolCall{ID: name + string(rune('0'+i)), Name: name, Arguments: json.RawMessage(`{}`)})
		}
		fake.QueueTurn(providertest.Reply{ToolCalls: tcs}, providertest.Reply{Text: "done"})
		h, err := s.Prompt(ctx, PromptRequest{Text: "go"})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
		return res
	}

	before := loopSet()
	turn("touch")
	require.Len(t, seen, 1)
	assert.NotSame(t, before, seen[0], "the worker copied at its record")
	assert.Same(t, before, loopSet(), "the loop folded the result into its own set")
	_, ok := before.files["a.go"]
	assert.True(t, ok)

	seen = nil
	res := turn("look", "look")
	require.Len(t, seen, 2)
	assert.Same(t, before, seen[0], "no copy in a batch that records nothing")
	assert.Same(t, before, seen[1])
	assert.Same(t, before, loopSet())
	assert.EqualValues(t, 1, before.refs.Load(), "the worker let go of the set")
	assert.Equal(t, "known", res.Messages[len(res.Messages)-2].Text)
}

// TestFileLedger_ReplacedLetsGo: when the loop makes its ledger again (a
// compaction's files, a resync) while a tool batch's worker holds a view
// of the one before, the loop lets go of that one's set, so the worker's
// record changes the set in place instead of copying it for nobody.
func TestFileLedger_ReplacedLetsGo(t *testing.T) {
	l := &loop{segLedger: NewFileLedger(0)}
	l.segFilesChanged()
	old := l.files.set
	w := l.files.share()
	l.segFilesChanged()
	assert.NotSame(t, old, l.files.set)
	require.NoError(t, w.Record(history.FileAccess{Path: "a.go", Op: history.FileRead, Hash: "xxh64:0123456789abcdef", Size: 1}))
	assert.Same(t, old, w.set, "the worker, alone on the set, changed it in place")
	w.release()
	assert.Zero(t, old.refs.Load())
}
