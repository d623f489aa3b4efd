package provider_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

func TestAllMessages(t *testing.T) {
	msgs := []history.Message{{ID: "1", Role: history.RoleUser, Text: "a"}}
	req := &provider.Request{Messages: msgs}
	assert.Equal(t, msgs, req.AllMessages(), "without Input: Messages itself")

	req.Input = provider.StringText("the input")
	all := req.AllMessages()
	require.Len(t, all, 2)
	assert.Equal(t, history.Message{ID: provider.InputID, Role: history.RoleUser, Text: "the input"}, all[1])
	assert.Len(t, req.Messages, 1, "Messages is not changed")

	assert.Len(t, (&provider.Request{Input: provider.StringText("")}).AllMessages(), 1)
}

func TestStringTextReadsAgain(t *testing.T) {
	text := provider.StringText("héllo")
	for range 2 {
		b, err := io.ReadAll(text.NewReader())
		require.NoError(t, err)
		assert.Equal(t, "héllo", string(b))
	}
	assert.Equal(t, "héllo", text.String())
}
