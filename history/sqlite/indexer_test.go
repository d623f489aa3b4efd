package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/poll"
)

// indexState is the watermark of session id and how many of its messages
// and index rows the file holds.
func indexState(t *testing.T, s *Store, id string) (indexed, messages, rows int64) {
	t.Helper()
	var num int64
	require.NoError(t, s.r.QueryRow(`SELECT num, indexed, message_count FROM sessions WHERE id = ?`, id).Scan(&num, &indexed, &messages))
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM message_fts WHERE rowid BETWEEN ? AND ?`, rowidOf(num, 0), rowidOf(num+1, 0)-1).Scan(&rows))
	return indexed, messages, rows
}

// indexerMessages are a user question, an assistant tool call, its result
// and an answer: a tool result's name is found by the look-back.
func indexerMessages(prefix string) []history.Message {
	return []history.Message{
		{ID: prefix + "q", Role: history.RoleUser, Text: "where is the rounding of the ledger decided"},
		{ID: prefix + "a", Role: history.RoleAssistant, Text: "reading it",
			ToolCalls: []history.ToolCall{{ID: prefix + "c", Name: "read_file", Arguments: json.RawMessage(`{"path":"ledger.go"}`)}}},
		{ID: prefix + "t", Role: history.RoleTool, ToolCallID: prefix + "c", Text: "func roundHalfEven(x float64) float64"},
		{ID: prefix + "r", Role: history.RoleAssistant, Text: "The ledger rounds half to even in roundHalfEven."},
	}
}

// TestSearchFindsUnindexed: a message is found by the Search right after
// its Append acknowledged it, before any index row is written (the
// committer indexes nothing here), and Window names a tool result's tool;
// once a store's committer indexed the tail in its idle time, the same
// searches and windows give the same answers from the index.
func TestSearchFindsUnindexed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path, withoutIdleIndex())
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v := snap.Version
	queries := []string{"ledger rounding", "read_file", "roundHalfEven", "ledger.go", "rounds"}
	var pages []history.SearchPage
	var windows [][]history.WindowMessage
	read := func(s *Store) ([]history.SearchPage, [][]history.WindowMessage) {
		var ps []history.SearchPage
		for i, q := range queries {
			p, err := s.Search(ctx, "s", history.SearchQuery{Text: q, Limit: 20, Neighbors: 1 - i%2})
			require.NoError(t, err)
			ps = append(ps, p)
		}
		w, err := s.Window(ctx, "s", history.WindowQuery{Around: "1t", Before: 3, After: 3})
		require.NoError(t, err)
		// The fork made at 1t reads its source's messages up to there,
		// indexed or not.
		p, err := s.Search(ctx, "f", history.SearchQuery{Text: "roundHalfEven read_file", Limit: 20})
		require.NoError(t, err)
		var ids []string
		for _, h := range p.Hits {
			ids = append(ids, h.MessageID)
		}
		require.ElementsMatch(t, []string{"0a", "0t", "0r", "1a", "1t"}, ids, "the fork's hits")
		wf, err := s.Window(ctx, "f", history.WindowQuery{Around: "1t", Before: 1, After: 1})
		require.NoError(t, err)
		require.Len(t, wf, 2, "nothing after the fork point")
		require.Equal(t, "read_file", wf[1].ToolName)
		return append(ps, p), [][]history.WindowMessage{w, wf}
	}
	for k := range 3 {
		msgs := indexerMessages(fmt.Sprint(k))
		for i := range msgs {
			v, err = s.Append(ctx, "s", v, msgs[i:i+1])
			require.NoError(t, err)
			// found at once: every word of the message just appended
			p, err := s.Search(ctx, "s", history.SearchQuery{Text: msgs[i].Text, Limit: 20})
			require.NoError(t, err)
			require.NotEmpty(t, p.Hits, msgs[i].ID)
			found := false
			for _, h := range p.Hits {
				found = found || h.MessageID == msgs[i].ID
			}
			assert.True(t, found, "%s not found right after its append", msgs[i].ID)
		}
	}
	_, err = s.Fork(ctx, history.ForkSpec{ID: "f", From: "s", At: "1t"})
	require.NoError(t, err)
	indexed, messages, rows := indexState(t, s, "s")
	require.Equal(t, [3]int64{0, 12, 0}, [3]int64{indexed, messages, rows}, "nothing indexed yet")
	pages, windows = read(s)
	require.Len(t, windows[0], 7)
	assert.Equal(t, "read_file", windows[0][3].ToolName, "the tool result's tool, by the look-back")
	for _, p := range pages {
		require.NotEmpty(t, p.Hits)
	}
	var ids []string
	for _, h := range pages[1].Hits { // without neighbours
		ids = append(ids, h.MessageID)
	}
	require.Contains(t, ids, "1t", "found by its tool's name")
	require.NoError(t, s.Close())

	// Reopened: the committer finds the tail at its first idle time.
	done := make(chan int, 16)
	s = open(t, path, withOnIndexed(func(n int) { done <- n }))
	select {
	case n := <-done:
		assert.Equal(t, 12, n)
	case <-time.After(time.Minute):
		t.Fatal("the tail was not indexed")
	}
	indexed, messages, rows = indexState(t, s, "s")
	require.Equal(t, [3]int64{12, 12, 12}, [3]int64{indexed, messages, rows})
	gotPages, gotWindows := read(s)
	assert.Equal(t, pages, gotPages, "the index answers as the tail did")
	assert.Equal(t, windows, gotWindows)
	// The reads see the watermarks, and so read no tail now.
	var c chain
	require.NoError(t, s.view(ctx, "test", func(q querier) (err error) {
		c, err = chainOf(q, "f")
		return err
	}))
	require.Len(t, c, 2)
	assert.Equal(t, [2]int64{7, 12}, [2]int64{c[0].indexed, c[1].indexed}, "the fork's watermark (its first own seq) and its source's")
}

// TestTailBound: the Append that makes a session's unindexed tail longer
// than a bound of at most overChunk indexes the whole tail in its
// transaction.
func TestTailBound(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withIndexBound(4), withoutIdleIndex())
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v := snap.Version
	msgs := indexerMessages("m")
	msgs = append(msgs, indexerMessages("n")...)
	for i := range 4 {
		v, err = s.Append(ctx, "s", v, msgs[i:i+1])
		require.NoError(t, err)
	}
	indexed, _, rows := indexState(t, s, "s")
	assert.Equal(t, [2]int64{0, 0}, [2]int64{indexed, rows}, "a tail of 4 stays")
	v, err = s.Append(ctx, "s", v, msgs[4:5])
	require.NoError(t, err)
	indexed, _, rows = indexState(t, s, "s")
	assert.Equal(t, [2]int64{5, 5}, [2]int64{indexed, rows}, "a tail of 5 is indexed")
	_, err = s.Append(ctx, "s", v, msgs[5:8])
	require.NoError(t, err)
	indexed, _, rows = indexState(t, s, "s")
	assert.Equal(t, [2]int64{5, 5}, [2]int64{indexed, rows})
	p, err := s.Search(ctx, "s", history.SearchQuery{Text: "roundHalfEven", Limit: 20})
	require.NoError(t, err)
	var ids []string
	for _, h := range p.Hits {
		ids = append(ids, h.MessageID)
	}
	assert.ElementsMatch(t, []string{"mt", "mr", "nt", "nr"}, ids, "from the index and the tail")
}

// TestIdleIndexAfterDelete: a session deleted before the committer's idle
// time leaves no index rows and no pending work behind.
func TestIdleIndexAfterDelete(t *testing.T) {
	ctx := context.Background()
	done := make(chan int, 16)
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withOnIndexed(func(n int) { done <- n }))
	select { // the first idle time: nothing to index in a new file
	case n := <-done:
		t.Fatalf("indexed %d messages of an empty file", n)
	default:
	}
	snap, err := s.Create(ctx, history.NewSession{ID: "gone"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "gone", snap.Version, indexerMessages("g"))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "gone"))
	snap, err = s.Create(ctx, history.NewSession{ID: "kept"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "kept", snap.Version, indexerMessages("k"))
	require.NoError(t, err)
	total := 0
	for total < 4 {
		select {
		case n := <-done:
			total += n
		case <-time.After(time.Minute):
			t.Fatal("not indexed")
		}
	}
	var rows int64
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM message_fts`).Scan(&rows))
	assert.Equal(t, int64(4), rows, "only the kept session's messages")
}

// TestTailBoundChunks: past a bound above overChunk, the Append that makes
// the tail longer indexes its oldest messages in its transaction, leaving
// overChunk fewer than the bound, and the search finds messages on both
// sides of the watermark.
func TestTailBoundChunks(t *testing.T) {
	ctx := context.Background()
	const bound = overChunk + 6
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withIndexBound(bound), withoutIdleIndex())
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v := snap.Version
	msgs := make([]history.Message, bound+10)
	for i := range msgs {
		msgs[i] = history.Message{ID: fmt.Sprint("m", i), Role: history.RoleUser, Text: fmt.Sprintf("note %d of the ledger", i)}
	}
	msgs[0].Text, msgs[len(msgs)-1].Text = "the oldest zebra", "the newest zebra"
	for i := 0; i < bound; i += 64 {
		v, err = s.Append(ctx, "s", v, msgs[i:min(i+64, bound)])
		require.NoError(t, err)
	}
	indexed, _, rows := indexState(t, s, "s")
	assert.Equal(t, [2]int64{0, 0}, [2]int64{indexed, rows}, "a tail of the bound stays")
	_, err = s.Append(ctx, "s", v, msgs[bound:])
	require.NoError(t, err)
	indexed, _, rows = indexState(t, s, "s")
	want := int64(bound + 10 - bound + overChunk)
	assert.Equal(t, [2]int64{want, want}, [2]int64{indexed, rows}, "the oldest indexed, overChunk below the bound left")
	p, err := s.Search(ctx, "s", history.SearchQuery{Text: "zebra", Limit: 20})
	require.NoError(t, err)
	var ids []string
	for _, h := range p.Hits {
		ids = append(ids, h.MessageID)
	}
	assert.ElementsMatch(t, []string{"m0", fmt.Sprint("m", bound+9)}, ids, "from the index and the tail")
}

// TestSearchLongTail: a tail longer than a search reads at once
// (tailChunk) is matched chunk by chunk, newest first, and a search of it
// finds what a search of the same messages through the index finds.
func TestSearchLongTail(t *testing.T) {
	ctx := context.Background()
	msgs := make([]history.Message, tailChunk+100)
	for i := range msgs {
		msgs[i] = history.Message{ID: fmt.Sprint("m", i), Role: history.RoleUser, Text: fmt.Sprintf("note %d of the ledger, round %d", i, i%7)}
	}
	msgs[0].Text, msgs[len(msgs)-1].Text = "the oldest zebra", "the newest zebra"
	queries := []string{"zebra", "ledger", "note round", "oldest", "6"}
	search := func(opts ...Option) [][]string {
		s := open(t, filepath.Join(t.TempDir(), "s.db"), opts...)
		snap, err := s.Create(ctx, history.NewSession{ID: "s"})
		require.NoError(t, err)
		_, err = s.Append(ctx, "s", snap.Version, msgs)
		require.NoError(t, err)
		var out [][]string
		for _, q := range queries {
			p, err := s.Search(ctx, "s", history.SearchQuery{Text: q, Limit: 10})
			require.NoError(t, err)
			var ids []string
			for _, h := range p.Hits {
				ids = append(ids, h.MessageID)
			}
			out = append(out, ids)
		}
		return out
	}
	tail := search(withIndexBound(1<<30), withoutIdleIndex(), withoutHurry())
	index := search(withIndexBound(0))
	assert.Equal(t, index, tail)
	assert.ElementsMatch(t, []string{"m0", fmt.Sprint("m", len(msgs)-1)}, tail[0], "both chunks")
}

// TestSearchHurriesALongTail: a search that reads a tail of hurryTail
// messages or more asks the committer to index it without waiting for
// idle time (there is none here: withoutIdleIndex), and the session is
// then indexed whole, over three transactions (idleBatch) with no
// write between them; a shorter tail is left alone.
func TestSearchHurriesALongTail(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withIndexBound(1<<30), withoutIdleIndex())
	long := 2*max(hurryTail, idleBatch) + 100
	msgs := make([]history.Message, long)
	for i := range msgs {
		msgs[i] = history.Message{ID: fmt.Sprint("m", i), Role: history.RoleUser, Text: fmt.Sprintf("note %d of the ledger", i)}
	}
	for _, id := range []string{"short", "long"} {
		snap, err := s.Create(ctx, history.NewSession{ID: id})
		require.NoError(t, err)
		n := len(msgs)
		if id == "short" {
			n = hurryTail - 1
		}
		_, err = s.Append(ctx, id, snap.Version, msgs[:n])
		require.NoError(t, err)
		p, err := s.Search(ctx, id, history.SearchQuery{Text: "ledger note"})
		require.NoError(t, err)
		require.NotEmpty(t, p.Hits)
	}
	poll.Until(t, time.Minute, func() bool {
		indexed, _, _ := indexState(t, s, "long")
		return indexed == int64(long)
	}, "the long tail indexed")
	_, _, rows := indexState(t, s, "long")
	assert.Equal(t, int64(long), rows)
	indexed, _, _ := indexState(t, s, "short")
	assert.Zero(t, indexed, "a short tail waits for idle time")
}
