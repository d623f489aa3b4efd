package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRemote runs the example against a freshly built agent process (with
// its demo tools: the example calls echo).
func TestRemote(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "acp-agent")
	out, err := exec.Command("go", "build", "-tags", "demotools", "-o", agent, "../acp-agent").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var buf bytes.Buffer
	require.NoError(t, run(context.Background(), &buf, agent))
	text := buf.String()
	for _, want := range []string{
		"connected to sessionkit",
		`→ echo({"text":"hello"})`,
		"compact   started (manual)",
		"compact   finished (manual)",
		"success=true compacted=true reason=compacted",
		"- We are building falcon, a file copier in Go.",
	} {
		assert.Contains(t, text, want)
	}
}
