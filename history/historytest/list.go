package historytest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// listAll pages through the listing with limit and returns the IDs in order.
func listAll(t *testing.T, l history.Catalog, opts history.ListOptions, between func(page int)) []string {
	t.Helper()
	var out []string
	for page := 0; ; page++ {
		p, err := l.ListSessions(context.Background(), opts)
		require.NoError(t, err)
		if opts.Limit > 0 {
			require.LessOrEqual(t, len(p.Sessions), opts.Limit)
		}
		for _, s := range p.Sessions {
			out = append(out, s.ID)
		}
		if p.Next == "" {
			return out
		}
		require.NotEmpty(t, p.Sessions, "a page with a Next cursor lists sessions")
		require.NotEqual(t, opts.Cursor, p.Next, "the next page starts after this one")
		require.Less(t, page, 1000, "the listing never ends")
		opts.Cursor = p.Next
		if between != nil {
			between(page)
		}
	}
}

func testListOrder(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := context.Background()
	v := map[string]uint64{}
	for i := range 4 {
		n := history.NewSession{ID: fmt.Sprintf("list-%d", i), Cwd: "/src/a"}
		if i == 0 {
			n.Title = "Fix the build"
		}
		snap, err := s.Create(ctx, n)
		require.NoError(t, err)
		v[n.ID] = snap.Version
	}
	// Written in this order: 2, 0, 3 (1 only created).
	v["list-2"] = appendMsgs(t, s, "list-2", v["list-2"], []history.Message{{ID: "m", Role: history.RoleUser, Text: "\n  Rename   the\tpackage\nand more"}})
	v["list-0"] = appendMsgs(t, s, "list-0", v["list-0"], Msgs("m0", 4))
	v["list-0"], _ = compact(t, s, "list-0", v["list-0"], "c0", 2, "S")
	v["list-3"] = appendMsgs(t, s, "list-3", v["list-3"], Msgs("m3", 1))

	s = h.reopen(t, s)
	page, err := s.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Next)
	got := make([]string, len(page.Sessions))
	byID := map[string]history.SessionInfo{}
	for i, info := range page.Sessions {
		got[i] = info.ID
		byID[info.ID] = info
		assert.False(t, info.CreatedAt.IsZero(), info.ID)
		assert.False(t, info.UpdatedAt.Before(info.CreatedAt), info.ID)
		if i > 0 {
			assert.False(t, info.UpdatedAt.After(page.Sessions[i-1].UpdatedAt), "newest UpdatedAt first")
		}
	}
	assert.Equal(t, []string{"list-3", "list-0", "list-2", "list-1"}, got)
	assert.Equal(t, 4, byID["list-0"].Messages, "Active plus archived")
	assert.Equal(t, 1, byID["list-2"].Messages)
	assert.Zero(t, byID["list-1"].Messages)
	assert.Equal(t, "Fix the build", byID["list-0"].Title, "its own title")
	assert.Equal(t, "Rename the package", byID["list-2"].Title, "a default from the first message")
	assert.Empty(t, byID["list-1"].Title, "no title, no message")
	assert.Equal(t, "/src/a", byID["list-1"].Cwd)

	snap, err := s.Load(ctx, "list-2")
	require.NoError(t, err)
	assert.Equal(t, "Rename the package", snap.Title, "Load reports the listed title")
	assert.Equal(t, "/src/a", snap.Cwd)
}

func testListPages(t *testing.T, h Harness) {
	s := h.New(t)
	const n = 11
	v := make([]uint64, n)
	for i := range n {
		v[i] = create(t, s, fmt.Sprintf("page-%02d", i))
	}
	l := s
	all := listAll(t, l, history.ListOptions{Limit: 3}, nil)
	require.Len(t, all, n)
	assert.Equal(t, all, listAll(t, l, history.ListOptions{}, nil), "the same order in one page")

	// Sessions written while a client pages: none is listed twice, and
	// every session that was not written is listed exactly once.
	written := map[string]bool{}
	got := listAll(t, l, history.ListOptions{Limit: 4}, func(page int) {
		for _, i := range []int{page, n - 1 - page} { // one listed already, one not yet
			id := fmt.Sprintf("page-%02d", i)
			v[i] = appendMsgs(t, s, id, v[i], []history.Message{Msg(fmt.Sprintf("w%d-%d", page, i), 0)})
			written[id] = true
		}
	})
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for i := range n {
		id := fmt.Sprintf("page-%02d", i)
		assert.LessOrEqual(t, seen[id], 1, "%s listed twice", id)
		if !written[id] {
			assert.Equal(t, 1, seen[id], "%s was not written and must be listed once", id)
		}
	}
}

func testListCwd(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := context.Background()
	for i, cwd := range []string{"/a", "/b", "/a", ""} {
		_, err := s.Create(ctx, history.NewSession{ID: fmt.Sprintf("cwd-%d", i), Cwd: cwd})
		require.NoError(t, err)
	}
	l := s
	got := listAll(t, l, history.ListOptions{Cwd: "/a", Limit: 1}, nil)
	slices.Sort(got)
	assert.Equal(t, []string{"cwd-0", "cwd-2"}, got)
	assert.Empty(t, listAll(t, l, history.ListOptions{Cwd: "/none"}, nil))
	assert.Len(t, listAll(t, l, history.ListOptions{}, nil), 4)
}

func testListInvalid(t *testing.T, h Harness) {
	l := h.New(t)
	ctx := context.Background()
	for name, opts := range map[string]history.ListOptions{
		"negative limit":   {Limit: -1},
		"not base64":       {Cursor: "!!!"},
		"no separator":     {Cursor: "bm9wZQ"},
		"not a number":     {Cursor: "eDpp"},
		"cursor and limit": {Cursor: "%%", Limit: 5},
	} {
		_, err := l.ListSessions(ctx, opts)
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	page, err := l.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	assert.NotNil(t, page.Sessions)
	assert.Empty(t, page.Sessions)
	assert.Empty(t, page.Next)
}
