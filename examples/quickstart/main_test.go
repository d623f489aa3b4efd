package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/provider/offline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart runs the main job as `make run` does and checks that it
// shows what it promises: tool calls, an automatic and a manual compaction,
// and the final state; and what compaction does as it happens: the provider
// named first, why the automatic compaction fired, the summary streamed, the
// Segment archived and the context before and after; and a recall of what
// only the archive holds.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, t.TempDir(), "offline", offline.New(), offlineThreshold))
	text := out.String()
	assert.True(t, strings.HasPrefix(text, "provider offline ("), "the first line names the provider")
	for _, want := range []string{
		"→ list_files({})",
		`→ read_file({"path":"main.go"})`,
		"compact   finished (auto): compacted",
		"compact   finished (manual): compacted",
		"manual compaction: success=true compacted=true reason=compacted",
		"segment 1: trigger=auto",
		"segment 2: trigger=manual",
		"== retained summary ==",
		"We are building a CLI called falcon in Go.",
		"compact   queued (auto): the model reported 540 tokens of context, at or above the threshold of 450",
		"  summary │ ## Summary of earlier conversation\n  summary │ ### User requests\n",
		"before the compaction, so",
		// The second automatic compaction's summary outweighs what it
		// archived: flagged, and automatic compaction is held.
		"compact   GREW the context: the context did not shrink",
		"so 266 LARGER: the compaction grew the context",
		"compact   held: the automatic compaction left the context at 1127 tokens, above the threshold of 450",
		"archived: summary call",
		"fidelity: the summary kept ",
		// The recall after the compactions: a search, a read of the best
		// hit, and the answer from the archived read_file result.
		"== recall ==\n  user      What file mode does copyFile create dst with?\n",
		`→ recall({"query":"What file mode does copyFile create dst with?"})`,
		`→ recall({"message_id":"`,
		`, result of read_file): "// copyFile copies src to dst, creating dst with mode 0644 or truncating it."`,
	} {
		assert.Contains(t, text, want)
	}
}
