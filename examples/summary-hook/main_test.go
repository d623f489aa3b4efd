package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSummaryHook runs the example and checks what it promises: the small
// model writes the summary, the hook vetoes and supplies one, and the undo
// restores the messages.
func TestSummaryHook(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	text := out.String()
	t.Log(text)
	for _, want := range []string{
		"compact: compacted, 4 messages archived, summary by offline/offline-small",
		"compact: compact_failed (session: BeforeCompact vetoed the compaction: the user pinned this part of the conversation)",
		"compacted, 2 messages archived, summary by hook\n",
		"summary by hook, context",
		"segment 1: trigger=manual",
		"uncompact: restored 2 messages\n",
		"model calls: main 6, summaries 1",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "hook/", "a summary the hook wrote names no model")
	assert.Equal(t, "1 message", messages(1))
}
