package storekit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

func TestListCursor(t *testing.T) {
	for _, p := range []storekit.ListPosition{{UpdatedAt: 0, ID: ""}, {UpdatedAt: -5, ID: "a:b:c"}, {UpdatedAt: 1 << 62, ID: "\x00é"}} {
		limit, after, err := storekit.ParseList(history.ListOptions{Cursor: p.Cursor()})
		require.NoError(t, err)
		assert.Equal(t, history.DefaultListLimit, limit)
		assert.Equal(t, p, *after)
	}
	limit, _, err := storekit.ParseList(history.ListOptions{Limit: history.MaxListLimit + 1})
	require.NoError(t, err)
	assert.Equal(t, history.MaxListLimit, limit)
}
