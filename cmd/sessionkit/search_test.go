package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
)

// writeArchive writes a session with archived and Active messages, a tool
// call and its result, and one compaction whose fidelity is recorded.
func writeArchive(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	snap, err := st.Create(ctx, history.NewSession{ID: "s1"})
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v, err := st.Append(ctx, "s1", snap.Version, []history.Message{
		{ID: "u0", Role: history.RoleUser, Text: "Rename parseAmount in ledger.go, and always round half to even.", CreatedAt: at},
		{ID: "a1", Role: history.RoleAssistant, Text: "Reading it.", ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"/project/ledger.go"}`)}}, CreatedAt: at},
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c1", Text: "func parseAmount(s string) (Money, error)", CreatedAt: at},
		{ID: "a2", Role: history.RoleAssistant, Text: "I renamed parseAmount to parseMoney in ledger.go.", CreatedAt: at},
		{ID: "u3", Role: history.RoleUser, Text: "Now the tests of the ledger, please.", CreatedAt: at},
	})
	require.NoError(t, err)
	v, err = st.BeginCompaction(ctx, "s1", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: at})
	require.NoError(t, err)
	_, _, err = st.CommitCompaction(ctx, "s1", v, history.Commit{CompactID: "c1", SegmentID: "seg-1", Archive: 4, Summary: "We renamed a function.", At: at,
		Fidelity: history.Fidelity{Facts: 4, Kept: 2, Missing: []string{"ledger.go", "parseMoney"}}})
	require.NoError(t, err)
	return path
}

// TestSearch: search prints the hits best first with where each message
// sits (archived in its Segment, or active), the tool a result answers and
// the marked snippet; --json has the same hits; --limit bounds them.
func TestSearch(t *testing.T) {
	path := writeArchive(t)
	res := sk(t, "--store", path, "search", "s1", "why", "did", "we", "rename", "parseAmount?")
	require.Equal(t, 0, res.status, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 6, res.stdout)
	assert.Contains(t, lines[0], "a2", "the message with both words first")
	assert.Contains(t, lines[0], "archived in seg-1")
	assert.Contains(t, lines[1], "I «renamed» «parseAmount» to parseMoney")
	assert.Contains(t, res.stdout, "tool (read_file)")

	res = sk(t, "search", "s1", "ledger tests", "--store", path, "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var hits []searchHitJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &hits))
	require.NotEmpty(t, hits)
	assert.Equal(t, "u3", hits[0].MessageID, "the active message holds both words")
	assert.Empty(t, hits[0].SegmentID)
	assert.Contains(t, string(hits[0].Snippet), "«tests»")
	for _, h := range hits[1:] {
		assert.Equal(t, "seg-1", h.SegmentID, h.MessageID)
	}

	res = sk(t, "--store", path, "search", "s1", "ledger", "--limit", "1", "--json")
	require.Equal(t, 0, res.status, res.stderr)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &hits))
	assert.Len(t, hits, 1)

	res = sk(t, "--store", path, "search", "s1", `"AND (NOT`)
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "no message of session s1 holds a word")

	res = sk(t, "--store", path, "search", "s1")
	assert.Equal(t, exitUsage, res.status)
	assert.Contains(t, res.stderr, "needs a session ID and a query")
	res = sk(t, "--store", path, "search", "nope", "ledger")
	assert.Equal(t, exitFailure, res.status)
	assert.Contains(t, res.stderr, `no session "nope"`)
}

// TestFidelityShown: segments and export show how many facts each
// Segment's summary kept and which it lost.
func TestFidelityShown(t *testing.T) {
	path := writeArchive(t)
	res := sk(t, "--store", path, "segments", "s1")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "fidelity  the summary kept 2 of 4 facts; missing: ledger.go, parseMoney")

	res = sk(t, "--store", path, "segments", "s1", "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var segs []segmentJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &segs))
	require.Len(t, segs, 1)
	assert.Equal(t, fidelityJSON{Facts: 4, Kept: 2, Missing: []text{"ledger.go", "parseMoney"}}, segs[0].Fidelity)

	res = sk(t, "--store", path, "export", "s1")
	require.Equal(t, 0, res.status, res.stderr)
	var doc exportJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc))
	require.Len(t, doc.Segments, 1)
	assert.Equal(t, 4, doc.Segments[0].Fidelity.Facts)
	assert.Equal(t, 2, doc.Segments[0].Fidelity.Kept)
	assert.Contains(t, res.stdout, `"missing": [`)
}
