package historytest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// neighborSession stores the messages the neighbour cases search, the
// first five archived: "rounding" is in n1, n3, n6 and n7; n2 lies in the
// windows of n1 and n3, n6 and n7 are next to each other.
func neighborSession(t *testing.T, s history.Store) []history.Message {
	msgs := []history.Message{
		text("n0", 0, "good morning"),
		text("n1", 1, "which rounding mode did the ledger use"),
		text("n2", 2, "banker's mode, since March"),
		text("n3", 3, "and for totals, which rounding?"),
		text("n4", 4, "half up, as the invoices want"),
		text("n5", 5, "nothing here"),
		text("n6", 6, "rounding rounding rounding"),
		text("n7", 7, "the rounding once more, for the report"),
		text("n8", 8, "the end"),
	}
	v := create(t, s, "s")
	v = appendMsgs(t, s, "s", v, msgs[:6])
	v, _ = compact(t, s, "s", v, "c", 5, "S")
	appendMsgs(t, s, "s", v, msgs[6:])
	return msgs
}

// testSearchNeighbors: with Neighbors n, each hit carries the n messages
// before and after it verbatim, in timeline order, archived or not; a
// message is returned once on a page, with the best hit whose window
// holds it (a lower hit in that window is its neighbour, not a hit, and
// the page takes the next one); fewer at the ends of the history; none
// with n = 0; the same on every page.
func testSearchNeighbors(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	msgs := neighborSession(t, s)
	index := map[string]int{}
	for i, m := range msgs {
		index[m.ID] = i
	}
	p0 := search(t, s, "s", "rounding", 0)
	require.Len(t, p0.Hits, 4)
	for _, hit := range p0.Hits {
		assert.Nil(t, hit.Neighbors, "Neighbors 0 returns none")
		assert.Zero(t, hit.NeighborsBefore)
	}
	for _, n := range []int{1, 2, history.MaxNeighbors} {
		p, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Neighbors: n})
		require.NoError(t, err, "neighbors %d", n)
		// what the page must hold: the hits best first, each with its
		// window less what is on the page already; a hit in the window of
		// a better one is its neighbour, not a hit
		taken := map[int]bool{}
		var wantHits []string
		wantNeighbors := map[string][]string{}
		wantBefore := map[string]int{}
		for _, h0 := range p0.Hits {
			at := index[h0.MessageID]
			if taken[at] {
				continue
			}
			taken[at] = true
			wantHits = append(wantHits, h0.MessageID)
			wantNeighbors[h0.MessageID] = []string{}
			for i := max(0, at-n); i <= min(len(msgs)-1, at+n); i++ {
				if !taken[i] {
					taken[i] = true
					wantNeighbors[h0.MessageID] = append(wantNeighbors[h0.MessageID], msgs[i].ID)
					if i < at {
						wantBefore[h0.MessageID]++
					}
				}
			}
		}
		require.Equal(t, wantHits, hitIDs(p.Hits), "neighbors %d", n)
		for _, hit := range p.Hits {
			assert.Equal(t, wantNeighbors[hit.MessageID], ids(hit.Neighbors), "neighbors %d of %s", n, hit.MessageID)
			assert.Equal(t, wantBefore[hit.MessageID], hit.NeighborsBefore, "neighbors %d of %s", n, hit.MessageID)
		}
		seen := map[string]bool{}
		for _, hit := range p.Hits {
			for _, m := range hit.Neighbors {
				assert.False(t, seen[m.ID], "neighbors %d: %s returned twice", n, m.ID)
				seen[m.ID] = true
				want := msgs[index[m.ID]]
				assert.Equal(t, want.Text, m.Text, "a neighbour is verbatim")
				assert.Equal(t, want.Role, m.Role)
			}
		}
		for _, hit := range p.Hits {
			assert.False(t, seen[hit.MessageID], "neighbors %d: a hit is never a neighbour", n)
		}
		if n == 1 {
			assert.True(t, seen["n2"], "n2 follows the question n1 and precedes n3")
			assert.True(t, seen["n7"], "n7 follows n6, the best hit (three times rounding)")
			assert.Len(t, p.Hits, 3, "n6 and n7 are one hit and its neighbour")
		}
		if n == history.MaxNeighbors {
			assert.Equal(t, []string{"n6"}, hitIDs(p.Hits), "n6's window holds every other hit")
			assert.Len(t, seen, len(msgs)-2, "every message but n6 and n0 (six before it), once")
		}
	}
	// page by page: a page's hits carry their neighbours; a page holds
	// Limit hits while there are any
	p1, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Limit: 2, Neighbors: 1})
	require.NoError(t, err)
	require.Len(t, p1.Hits, 2)
	require.NotEmpty(t, p1.Next)
	p2, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Limit: 2, Neighbors: 1, Cursor: p1.Next})
	require.NoError(t, err)
	require.NotEmpty(t, p2.Hits)
	assert.NotEmpty(t, p2.Hits[0].Neighbors, "a later page's hit has its neighbours")
	for _, bad := range []int{-1, history.MaxNeighbors + 1, 1 << 30} {
		_, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Neighbors: bad})
		require.ErrorIs(t, err, history.ErrInvalid, "neighbors %d", bad)
		assert.Contains(t, err.Error(), "Neighbors", "the error names the field")
	}
}

// testSearchConversation: the ranking of conversation: irregular forms
// match ("meet" finds "met", "children" finds "child"), a month is never a
// stop word ("May"), a rare word outweighs a common one, and no text is an
// error: every script, emoji, code punctuation, 10,000 words.
func testSearchConversation(t *testing.T, h Harness) {
	s := h.New(t)
	v := create(t, s, "s")
	msgs := []history.Message{
		text("c0", 0, "How did you two get together, Evan?"),
		text("c1", 1, "I met this amazing woman at a pottery class back in May."),
		text("c2", 2, "Evan, the children are loud today."),
		text("c3", 3, "Evan, Evan, Evan: see you in March."),
		text("c4", 4, "Привет, как дела? 你好，世界。 مرحبا بالعالم. こんにちは 🚀🔥 naïve café"),
		text("c5", 5, "if err := f(x); err != nil { return fmt.Errorf(\"%w\", err) } // a->b::c"),
	}
	appendMsgs(t, s, "s", v, msgs)
	for _, c := range []struct{ query, want string }{
		{"When did Evan meet his future wife?", "c1"},
		{"What happened in May?", "c1"},
		{"How is the child?", "c2"},
		{"как дела", "c4"},
		{"你好", "c4"},
		{"بالعالم", "c4"},
		{"cafe naïve", "c4"},
		{"fmt.Errorf", "c5"},
	} {
		p := search(t, s, "s", c.query, 0)
		require.NotEmpty(t, p.Hits, "query %q", c.query)
		assert.Equal(t, c.want, p.Hits[0].MessageID, "query %q", c.query)
	}
	long := strings.Repeat("pottery evan zebra ", 3334)
	p := search(t, s, "s", long, 0)
	require.NotEmpty(t, p.Hits, "a query of 10,000 words")
	assert.Equal(t, "c1", p.Hits[0].MessageID, "pottery is rarer than evan")
	for _, q := range []string{"", "the", "may I", "🚀🔥", "{}();:->", "\u200b\u200d"} {
		_, err := s.Search(context.Background(), "s", history.SearchQuery{Text: q, Neighbors: 1})
		assert.NoError(t, err, "query %q", q)
	}
}
