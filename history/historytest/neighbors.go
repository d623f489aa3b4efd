package historytest

import (
	"context"
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
// message is returned once on a page (with the best hit whose window
// holds it, never as a neighbour when it is a hit); fewer at the ends of
// the history; none with n = 0; the same on every page.
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
		require.Equal(t, hitIDs(p0.Hits), hitIDs(p.Hits), "neighbors do not change the hits")
		// what each hit must carry: its window less the page's hits and
		// what a better hit took
		taken := map[int]bool{}
		for _, hit := range p.Hits {
			taken[index[hit.MessageID]] = true
		}
		seen := map[string]bool{}
		for _, hit := range p.Hits {
			at := index[hit.MessageID]
			want := []string{}
			before := 0
			for i := max(0, at-n); i <= min(len(msgs)-1, at+n); i++ {
				if !taken[i] {
					taken[i] = true
					want = append(want, msgs[i].ID)
					if i < at {
						before++
					}
				}
			}
			assert.Equal(t, want, ids(hit.Neighbors), "neighbors %d of %s", n, hit.MessageID)
			assert.Equal(t, before, hit.NeighborsBefore, "neighbors %d of %s", n, hit.MessageID)
			for _, m := range hit.Neighbors {
				assert.False(t, seen[m.ID], "neighbors %d: %s returned twice", n, m.ID)
				seen[m.ID] = true
				want := msgs[index[m.ID]]
				assert.Equal(t, want.Text, m.Text, "a neighbour is verbatim")
				assert.Equal(t, want.Role, m.Role)
			}
		}
		if n == 1 {
			assert.True(t, seen["n2"], "n2 follows the question n1 and precedes n3")
			assert.True(t, seen["n8"], "the end follows n7")
			assert.False(t, seen["n6"] || seen["n7"], "a hit is never a neighbour")
		}
		if n == history.MaxNeighbors {
			assert.Len(t, seen, len(msgs)-len(p.Hits), "every other message, once")
		}
	}
	// page by page: a page's hits carry their neighbours
	p1, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Limit: 1, Neighbors: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p1.Next)
	p2, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Limit: 1, Neighbors: 1, Cursor: p1.Next})
	require.NoError(t, err)
	require.Len(t, p2.Hits, 1)
	assert.Equal(t, p0.Hits[1].MessageID, p2.Hits[0].MessageID)
	assert.NotEmpty(t, p2.Hits[0].Neighbors, "a later page's hit has its neighbours")
	for _, bad := range []int{-1, history.MaxNeighbors + 1, 1 << 30} {
		_, err := s.Search(ctx, "s", history.SearchQuery{Text: "rounding", Neighbors: bad})
		require.ErrorIs(t, err, history.ErrInvalid, "neighbors %d", bad)
		assert.Contains(t, err.Error(), "Neighbors", "the error names the field")
	}
}
