package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/provider/offline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart runs the main job as `make run` does and checks that it
// shows what it promises: tool calls, an automatic and a manual compaction,
// and the final state.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, t.TempDir(), offline.New(), offlineThreshold))
	text := out.String()
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
	} {
		assert.Contains(t, text, want)
	}
}
