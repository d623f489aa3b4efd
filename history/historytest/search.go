package historytest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
)

// search runs one search that must succeed.
func search(t *testing.T, s history.Store, id, text string, limit int) history.SearchPage {
	t.Helper()
	p, err := s.Search(context.Background(), id, history.SearchQuery{Text: text, Limit: limit})
	require.NoError(t, err, "search %q", text)
	return p
}

// hitIDs are the message IDs of hits, in order.
func hitIDs(hits []history.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MessageID
	}
	return out
}

// hitOf returns the hit of message id, failing when there is none.
func hitOf(t *testing.T, p history.SearchPage, id string) history.SearchHit {
	t.Helper()
	for _, h := range p.Hits {
		if h.MessageID == id {
			return h
		}
	}
	require.Failf(t, "no hit", "message %s is not among the hits %v", id, hitIDs(p.Hits))
	return history.SearchHit{}
}

// text returns a user (even i) or assistant message with the given text.
func text(id string, i int, s string) history.Message {
	m := Msg(id, i)
	m.Text = s
	return m
}

// ledgerSession stores the messages the ranking cases search.
func ledgerSession(t *testing.T, s history.Store, id string) uint64 {
	v := create(t, s, id)
	return appendMsgs(t, s, id, v, []history.Message{
		text("u0", 0, "Please rename the parse function in ledger.go."),
		text("a1", 1, "I renamed parseAmount to parseMoney in ledger.go and changed the rounding to banker's rounding."),
		text("u2", 2, "The rounding of totals still looks wrong to me."),
		text("a3", 3, "Done. All tests pass now."),
	})
}

// testSearchRanking: a query is a question, not an expression: a message
// holding more of its content words ranks first, stop words do not count,
// and words match in other verb forms on both sides ("rename" finds
// "renamed" and the reverse). Each hit says where the message sits and
// marks the matched words.
func testSearchRanking(t *testing.T, h Harness) {
	s := h.New(t)
	ledgerSession(t, s, "s")

	p := search(t, s, "s", "why did we rename the rounding in ledger.go?", 0)
	require.Equal(t, []string{"a1", "u0", "u2"}, hitIDs(p.Hits), "a1 holds rename, rounding, ledger and go; u0 three of them; u2 one")
	assert.Empty(t, p.Next)
	for i := 1; i < len(p.Hits); i++ {
		assert.Greater(t, p.Hits[i-1].Score, p.Hits[i].Score, "hits are best first")
	}
	a1 := p.Hits[0]
	assert.Equal(t, history.RoleAssistant, a1.Role)
	assert.Empty(t, a1.SegmentID, "an Active message has no Segment")
	assert.Empty(t, a1.ToolName)
	assert.Equal(t, int64(1), a1.Position)
	assert.Contains(t, a1.Snippet, "«renamed»")
	assert.Contains(t, a1.Snippet, "«ledger»")
	assert.Contains(t, a1.Snippet, "«rounding»")
	assert.NotContains(t, a1.Snippet, "«the»", "stop words are not matched")

	// Stemming, both ways.
	assert.ElementsMatch(t, []string{"a1", "u0"}, hitIDs(search(t, s, "s", "renaming", 0).Hits))
	assert.Contains(t, hitIDs(search(t, s, "s", "renamed", 0).Hits), "u0", `"renamed" finds "rename"`)
	assert.Contains(t, hitIDs(search(t, s, "s", "rounded", 0).Hits), "u2", `"rounded" finds "rounding"`)
	// Case does not matter.
	assert.ElementsMatch(t, []string{"a1", "u0"}, hitIDs(search(t, s, "s", "LEDGER", 0).Hits))
	// Among messages holding as many of the words, bm25 ranks the one
	// where they weigh more (the shorter message) first.
	assert.Equal(t, []string{"u0", "a1"}, hitIDs(search(t, s, "s", "ledger", 0).Hits))
	// A word no message holds finds nothing.
	assert.Empty(t, search(t, s, "s", "kubernetes", 0).Hits)

	// Holding more of the words beats bm25: a long message with both
	// words ranks above a short one repeating one of them.
	v := create(t, s, "long")
	appendMsgs(t, s, "long", v, []history.Message{
		text("x0", 0, "flux flux flux flux flux flux"),
		text("x1", 1, "the flux "+strings.Repeat("filler words here ", 700)+"and the capacitor"),
	})
	assert.Equal(t, []string{"x1", "x0"}, hitIDs(search(t, s, "long", "flux capacitor", 0).Hits))
	assert.Equal(t, []string{"x0", "x1"}, hitIDs(search(t, s, "long", "flux", 0).Hits), "by bm25 alone x0 is first")
}

// testSearchToolResults: a tool result is searchable by its text and by
// the name of the tool it answers (the call in an earlier assistant
// message, appended in another write), and its hit names the tool; an
// assistant's tool calls are searchable by their arguments.
func testSearchToolResults(t *testing.T, h Harness) {
	s := h.New(t)
	v := create(t, s, "s")
	call := text("a1", 1, "Let me look at the configuration.")
	call.ToolCalls = []history.ToolCall{
		{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"/project/deploy.yaml"}`)},
		{ID: "c2", Name: "run_command", Arguments: json.RawMessage(`{"command":"kubectl get pods"}`)},
	}
	v = appendMsgs(t, s, "s", v, []history.Message{text("u0", 0, "Check the deployment"), call})
	v = appendMsgs(t, s, "s", v, []history.Message{
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c1", Text: "# deployment\nreplicas: 3\ntimeout: 45s", CreatedAt: t0},
		{ID: "t2", Role: history.RoleTool, ToolCallID: "c2", Text: "NAME READY STATUS\nweb-1 1/1 Running", CreatedAt: t0},
	})
	appendMsgs(t, s, "s", v, []history.Message{text("u2", 2, "thanks")})
	s = h.reopen(t, s)

	p := search(t, s, "s", "what timeout did the deployment use", 0)
	t1 := hitOf(t, p, "t1")
	assert.Equal(t, history.RoleTool, t1.Role)
	assert.Equal(t, "read_file", t1.ToolName)
	assert.Contains(t, t1.Snippet, "«timeout»")
	assert.Equal(t, "t1", p.Hits[0].MessageID)

	p = search(t, s, "s", "run_command", 0)
	assert.Equal(t, "run_command", hitOf(t, p, "t2").ToolName, "a tool result is found by its tool's name")
	assert.Contains(t, hitIDs(p.Hits), "a1", "an assistant message is found by its tool calls")
	assert.Contains(t, hitIDs(search(t, s, "s", "deploy.yaml", 0).Hits), "a1", "and by their arguments")
}

// testSearchAttachments: a user message is found by the words of its
// attachments (a link's name, URI and description, a resource's URI and
// contents, an image's name) but never by an image's bytes.
func testSearchAttachments(t *testing.T, h Harness) {
	s := h.New(t)
	v := create(t, s, "s")
	u := text("u0", 0, "compare these")
	u.Attachments = []history.Attachment{
		{Kind: history.AttachLink, At: len(u.Text), Name: "ledger.go", URI: "file:///w/ledger.go", Text: "the bookkeeping"},
		{Kind: history.AttachResource, At: len(u.Text), URI: "file:///w/notes.md", Text: "rounding is done by the treasurer"},
		{Kind: history.AttachImage, At: len(u.Text), Name: "chart.png", MIMEType: "image/png", Data: []byte("zebra giraffe")},
	}
	appendMsgs(t, s, "s", v, []history.Message{u, text("a1", 1, "ok")})
	s = h.reopen(t, s)
	for _, q := range []string{"bookkeeping", "treasurer", "notes.md", "ledger", "chart"} {
		assert.Equal(t, []string{"u0"}, hitIDs(search(t, s, "s", q, 0).Hits), q)
	}
	assert.Empty(t, search(t, s, "s", "zebra", 0).Hits, "an image's bytes are not indexed")
}

// testSearchArchived: archived messages are found with the Segment that
// archived them; a message still Active has none; once an Uncompact undid
// the Segment its messages are Active again, and a new compaction archives
// them in its own Segment.
func testSearchArchived(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "s", []history.Message{
		text("m0", 0, "the first migration added a column"),
		text("m1", 1, "the second migration added an index"),
		text("m2", 2, "the third migration dropped a table"),
		text("m3", 3, "the fourth migration renamed a view"),
	})
	v, _ = compact(t, s, "s", v, "c1", 2, "S1")
	v, _ = compact(t, s, "s", v, "c2", 1, "S2")
	v = appendMsgs(t, s, "s", v, []history.Message{text("m4", 4, "the fifth migration")})
	where := func() map[string]string {
		out := map[string]string{}
		for _, hit := range search(t, s, "s", "migration", 0).Hits {
			out[hit.MessageID] = hit.SegmentID
			// The number of the compaction is the Segment's place in
			// Segments, read in the same search.
			assert.Equal(t, compactionOf(t, s, "s", hit.SegmentID), hit.Compaction, "the compaction of %s", hit.MessageID)
		}
		return out
	}
	assert.Equal(t, map[string]string{"m0": "seg-c1", "m1": "seg-c1", "m2": "seg-c2", "m3": "", "m4": ""}, where())
	s = h.reopen(t, s)
	assert.Equal(t, map[string]string{"m0": "seg-c1", "m1": "seg-c1", "m2": "seg-c2", "m3": "", "m4": ""}, where())

	v, _, err := s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"m0": "seg-c1", "m1": "seg-c1", "m2": "", "m3": "", "m4": ""}, where(), "the undone Segment's message is Active again")
	_, _ = compact(t, s, "s", v, "c3", 2, "S3")
	assert.Equal(t, map[string]string{"m0": "seg-c1", "m1": "seg-c1", "m2": "seg-c3", "m3": "seg-c3", "m4": ""}, where())
	assert.Equal(t, 3, hitOf(t, search(t, s, "s", "fourth", 0), "m3").Compaction, "the undone Segment keeps its number: c3 made the third")
}

// compactionOf is the number of the compaction that made Segment seg (its
// place in Segments, from 1), 0 for "".
func compactionOf(t *testing.T, s history.Store, id, seg string) int {
	t.Helper()
	if seg == "" {
		return 0
	}
	segs, err := s.Segments(context.Background(), id)
	require.NoError(t, err)
	for i := range segs {
		if segs[i].ID == seg {
			return i + 1
		}
	}
	require.Failf(t, "no segment", "session %s has no Segment %s", id, seg)
	return 0
}

// testSearchSessions: a session's search never returns another session's
// messages, however alike they are.
func testSearchSessions(t *testing.T, h Harness) {
	s := h.New(t)
	ledgerSession(t, s, "a")
	vb := create(t, s, "b")
	vb = appendMsgs(t, s, "b", vb, []history.Message{text("b0", 0, "rename the rounding in ledger.go"), text("b1", 1, "renamed")})
	compact(t, s, "b", vb, "c1", 1, "S")
	// A busy session whose newer messages all hold the words does not
	// crowd the others' out of a search.
	vc := create(t, s, "busy")
	busy := make([]history.Message, 600)
	for i := range busy {
		busy[i] = text(fmt.Sprintf("c%d", i), i, "rename the rounding in ledger.go")
	}
	appendMsgs(t, s, "busy", vc, busy)
	assert.ElementsMatch(t, []string{"a1", "u0", "u2"}, hitIDs(search(t, s, "a", "rename rounding ledger", history.MaxSearchLimit).Hits))
	assert.ElementsMatch(t, []string{"b0", "b1"}, hitIDs(search(t, s, "b", "rename rounding ledger", history.MaxSearchLimit).Hits))
	assert.Len(t, search(t, s, "busy", "rename rounding ledger", history.MaxSearchLimit).Hits, history.MaxSearchLimit)
}

// testSearchPages: pages of Limit hits, each hit once across the pages,
// best first across pages, the last page without Next; Limit 0 is
// DefaultSearchLimit and a Limit above MaxSearchLimit is MaxSearchLimit.
func testSearchPages(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "s")
	n := history.DefaultSearchLimit + 15
	msgs := make([]history.Message, n)
	for i := range msgs {
		// message i holds "widget" and, for a third of them, "gadget" too
		body := fmt.Sprintf("note %d about the widget", i)
		if i%3 == 0 {
			body += " and the gadget"
		}
		msgs[i] = text(fmt.Sprintf("m%02d", i), i, body)
	}
	v = appendMsgs(t, s, "s", v, msgs)
	compact(t, s, "s", v, "c1", n/2, "S")

	first := search(t, s, "s", "widget gadget", 0)
	require.Len(t, first.Hits, history.DefaultSearchLimit)
	require.NotEmpty(t, first.Next)
	var all []history.SearchHit
	q := history.SearchQuery{Text: "widget gadget", Limit: 10}
	pages := 0
	for {
		p, err := s.Search(ctx, "s", q)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(p.Hits), 10)
		all = append(all, p.Hits...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
		require.Less(t, pages, 10, "paging does not end")
	}
	assert.Equal(t, 3, pages)
	seen := map[string]bool{}
	for i, hit := range all {
		assert.False(t, seen[hit.MessageID], "hit %s twice", hit.MessageID)
		seen[hit.MessageID] = true
		if i > 0 {
			assert.GreaterOrEqual(t, all[i-1].Score, hit.Score, "best first across pages")
		}
		if i < (n+2)/3 {
			assert.Contains(t, hit.Snippet, "«gadget»", "the messages with both words come first")
		}
	}
	assert.Len(t, seen, n)
	assert.Len(t, search(t, s, "s", "widget", history.MaxSearchLimit+50).Hits, n)
	many := make([]history.Message, history.MaxSearchLimit)
	for i := range many {
		many[i] = text(fmt.Sprintf("x%03d", i), i, "sprocket")
	}
	v2 := create(t, s, "many")
	appendMsgs(t, s, "many", v2, many)
	p := search(t, s, "many", "sprocket", history.MaxSearchLimit+1)
	assert.Len(t, p.Hits, history.MaxSearchLimit)
	assert.Empty(t, p.Next)
}

// testSearchAnyText: no text a model may send is an error: FTS and
// tsquery syntax, quotes, NUL bytes, invalid UTF-8, a huge query; a query
// without a content word (empty, only stop words, only punctuation) finds
// nothing.
func testSearchAnyText(t *testing.T, h Harness) {
	s := h.New(t)
	ledgerSession(t, s, "s")
	for _, q := range []string{
		`"ledger.go"`, `ledger" OR "x`, `ledger AND NOT rounding`, `ledger*`, `text:ledger`, `NEAR(ledger rounding)`,
		`(ledger`, `ledger)`, `^ledger`, `'ledger'`, `ledger & rounding | !x`, `ledger:*`, `{ledger}`, `-ledger +rounding`,
		"ledger\x00rounding", "ledger\xff\xferounding", `\"ledger\\`, `ledger; DROP TABLE messages; --`,
	} {
		p := search(t, s, "s", q, 0)
		assert.Contains(t, hitIDs(p.Hits), "a1", "query %q", q)
	}
	huge := strings.Repeat("ledger rounding ", 1<<16) + strings.Repeat("x", 1<<20)
	assert.Equal(t, "a1", search(t, s, "s", huge, 0).Hits[0].MessageID)
	for _, q := range []string{"", " ", "the of and to", `"" '' ()`, "?!", "\x00", "*", "AND OR NOT"} {
		p := search(t, s, "s", q, 0)
		assert.Empty(t, p.Hits, "query %q", q)
		assert.Empty(t, p.Next, "query %q", q)
	}
}

// testSearchInvalid: an unknown session is ErrNotFound; a negative Limit
// and a malformed cursor (or one of another query) are ErrInvalid.
func testSearchInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := ledgerSession(t, s, "s")
	msgs := make([]history.Message, 5)
	for i := range msgs {
		msgs[i] = text(fmt.Sprintf("w%d", i), i, "widget")
	}
	appendMsgs(t, s, "s", v, msgs)
	q := s
	_, err := q.Search(ctx, "missing", history.SearchQuery{Text: "ledger"})
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = q.Search(ctx, "s", history.SearchQuery{Text: "ledger", Limit: -1})
	assert.ErrorIs(t, err, history.ErrInvalid)
	for _, c := range []string{"x", "!!!", "bm90IGEgY3Vyc29y", "\x00"} {
		_, err = q.Search(ctx, "s", history.SearchQuery{Text: "ledger", Cursor: c})
		assert.ErrorIs(t, err, history.ErrInvalid, "cursor %q", c)
	}
	p, err := q.Search(ctx, "s", history.SearchQuery{Text: "widget", Limit: 2})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	_, err = q.Search(ctx, "s", history.SearchQuery{Text: "ledger", Cursor: p.Next})
	assert.ErrorIs(t, err, history.ErrInvalid, "a cursor of another query")
	p2, err := q.Search(ctx, "s", history.SearchQuery{Text: "widgets", Limit: 2, Cursor: p.Next})
	require.NoError(t, err, "the same words in another form are the same query")
	assert.Len(t, p2.Hits, 2)
	assert.NotContains(t, hitIDs(p2.Hits), p.Hits[0].MessageID)
}

// testSegmentFidelity: a commit's Fidelity is stored with its Segment and
// read back by Segments, also after reopening; a Segment committed without
// one has the zero Fidelity; an impossible Fidelity is ErrInvalid and
// writes nothing.
func testSegmentFidelity(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "s", Msgs("m", 8))
	v, _ = compact(t, s, "s", v, "c0", 1, "S0")
	v, err := s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	commit := history.Commit{CompactID: "c1", SegmentID: "seg-c1", Archive: 2, Summary: "S1", At: t0.Add(time.Minute)}
	missing := make([]string, history.MaxFidelityMissing+1)
	for i := range missing {
		missing[i] = fmt.Sprintf("fact %d", i)
	}
	for _, bad := range []history.Fidelity{
		{Facts: 2, Kept: 3},
		{Facts: -1},
		{Facts: 30, Kept: 1, Missing: missing},
	} {
		c := commit
		c.Fidelity = bad
		_, _, err := s.CommitCompaction(ctx, "s", v, c)
		assert.ErrorIs(t, err, history.ErrInvalid, "fidelity %+v", bad)
	}
	want := history.Fidelity{Facts: 7, Kept: 4, Missing: []string{"ledger.go", "`parseMoney`", "30 ms"}}
	commit.Fidelity = want
	commit.Fidelity.Missing = append([]string(nil), want.Missing...)
	_, seg, err := s.CommitCompaction(ctx, "s", v, commit)
	require.NoError(t, err, "the failed commits wrote nothing")
	commit.Fidelity.Missing[0] = "changed by the caller"
	assert.Equal(t, want, seg.Fidelity)
	seg.Fidelity.Missing[1] = "changed in the returned Segment"
	check := func() {
		t.Helper()
		segs, err := s.Segments(ctx, "s")
		require.NoError(t, err)
		require.Len(t, segs, 2)
		assert.Zero(t, segs[0].Fidelity, "a commit without fidelity")
		assert.Equal(t, want, segs[1].Fidelity)
		segs[1].Fidelity.Missing[2] = "changed in a read Segment"
	}
	check()
	check()
	s = h.reopen(t, s)
	check()
}

// testSearchSameAsMemstore: on a corpus small enough that no term's
// candidates are cut (100 messages: a query of at most 5 terms gives each
// a share of at least 102 of the SQL stores' 512), the store's search
// returns what memstore's does: the same hits in the same order, with the
// same scores, snippets and Segments (its index's stemming and the shared
// ranking's agree).
func testSearchSameAsMemstore(t *testing.T, h Harness) {
	msgs := SearchCorpus(100, 11)
	queries := SearchQueries(msgs, 60, 12)
	s, mem := h.New(t), memstore.New()
	for _, st := range []history.Store{s, mem} {
		v := create(t, st, "s")
		v = appendMsgs(t, st, "s", v, msgs[:80])
		v, _ = compact(t, st, "s", v, "c", 50, "S")
		appendMsgs(t, st, "s", v, msgs[80:])
	}
	found := 0
	for _, q := range queries {
		want := search(t, mem, "s", q, history.MaxSearchLimit)
		got := search(t, s, "s", q, history.MaxSearchLimit)
		require.Equal(t, want, got, "query %q", q)
		found += len(got.Hits)
	}
	assert.Greater(t, found, 100, "the queries find messages")
}
