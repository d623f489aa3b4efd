package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/session"
)

// TestCompactOnOverflowFlag: a turn step the model rejects as longer than
// its context is recovered by default (one compaction, one retry: the
// prompt succeeds), and fails with the overflow under
// --compact-on-overflow=false, with no summary asked for. The fake model
// rejects every turn request that still carries the first prompt next to
// the second.
func TestCompactOnOverflowFlag(t *testing.T) {
	clearProviderEnv(t)
	var summaries atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		body := string(raw)
		switch {
		case !strings.Contains(body, `"tools"`): // a summary request offers no tools
			summaries.Add(1)
			openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk("the user said hello"), openaitest.FinishChunk("stop"), openaitest.UsageChunk(3, 1), openaitest.Done)
		case strings.Contains(body, "first-marker") && strings.Contains(body, "second-marker"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"This model's maximum context length is 16 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		default:
			openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk("ok"), openaitest.FinishChunk("stop"), openaitest.UsageChunk(3, 1), openaitest.Done)
		}
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")

	bin := agentBinary(t) // built before the minute starts
	twoPrompts := func(t *testing.T, args ...string) session.TurnResult {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := acp.Start(ctx, bin, append([]string{"--store", filepath.Join(t.TempDir(), "s.db")}, args...), acp.ClientOptions{Stderr: io.Discard})
		require.NoError(t, err)
		defer c.Close()
		rs, err := c.NewSession(ctx, t.TempDir())
		require.NoError(t, err)
		var res session.TurnResult
		for _, text := range []string{"first-marker", "second-marker"} {
			h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
			require.NoError(t, err)
			res, err = h.Wait(ctx)
			require.NoError(t, err)
		}
		return res
	}

	t.Run("default", func(t *testing.T) {
		summaries.Store(0)
		res := twoPrompts(t)
		require.NoError(t, res.Err, "recovered by compaction")
		assert.Equal(t, int32(1), summaries.Load(), "one overflow compaction")
	})
	t.Run("off", func(t *testing.T) {
		summaries.Store(0)
		res := twoPrompts(t, "--compact-on-overflow=false")
		require.Error(t, res.Err)
		assert.Contains(t, res.Err.Error(), "maximum context length")
		assert.Zero(t, summaries.Load(), "no compaction")
	})
	t.Run("malformed", func(t *testing.T) {
		_, err := parseFlags([]string{"--compact-on-overflow=sometimes"})
		assert.ErrorContains(t, err, "-compact-on-overflow")
	})
}
