package session_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/session"
)

// openAIOverflowBody is the error body OpenAI sends for a request longer
// than the model's context.
const openAIOverflowBody = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`

// overflowServer is a fake OpenAI-compatible server: summary requests (the
// summarizer's system prompt) are answered with a summary; the turn
// requests whose numbers (from 1) are in overflow get the OpenAI overflow
// error, the others a reply.
type overflowServer struct {
	mu       sync.Mutex
	overflow []int
	turns    int
	summary  int
	sizes    []int // messages of each turn request
}

func (o *overflowServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(raw, &body)
	o.mu.Lock()
	isSummary := len(body.Messages) > 0 && body.Messages[0].Role == "system" && body.Messages[0].Content == compact.SystemPrompt()
	var n int
	if isSummary {
		o.summary++
	} else {
		o.turns++
		n = o.turns
		o.sizes = append(o.sizes, len(body.Messages))
	}
	overflow := !isSummary && slices.Contains(o.overflow, n)
	o.mu.Unlock()
	switch {
	case overflow:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, openAIOverflowBody)
	case isSummary:
		openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk("- the earlier conversation"),
			openaitest.FinishChunk("stop"), openaitest.UsageChunk(50, 6), openaitest.Done)
	default:
		openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk(fmt.Sprintf("reply %d", n)),
			openaitest.FinishChunk("stop"), openaitest.UsageChunk(10*n, 4), openaitest.Done)
	}
}

func (o *overflowServer) counts() (turns, summaries int, sizes []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.turns, o.summary, slices.Clone(o.sizes)
}

// overflowSession opens a session on the OpenAI provider against srv.
func overflowSession(t *testing.T, srv *overflowServer, cfg session.Config) *session.Session {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	p, err := openai.New(openai.WithBaseURL(hs.URL+"/v1"), openai.WithAPIKey("sk-test"), openai.WithModel("gpt-test"), openai.WithMaxRetries(0))
	require.NoError(t, err)
	return newSession(t, p, cfg)
}

func prompt(t *testing.T, s *session.Session, text string) (session.TurnResult, string) {
	t.Helper()
	h := mustPrompt(t, s, text)
	return wait(t, h), h.ID()
}

// warmUp runs the two turns before the one a test overflows.
func warmUp(t *testing.T, s *session.Session) {
	t.Helper()
	for i := range 2 {
		res, _ := prompt(t, s, fmt.Sprintf("prompt %d", i+1))
		require.NoError(t, res.Err)
	}
}

// finishedCompactions returns the results of the finished compactions.
func finishedCompactions(evs []session.Event) []*session.CompactionEvent {
	var out []*session.CompactionEvent
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
			out = append(out, c)
		}
	}
	return out
}

// TestCompactOnOverflow_CompactsOnceAndRetries: a step the server rejects
// with OpenAI's context_length_exceeded body runs exactly one compaction
// (trigger overflow, inside the turn) and is retried once from the
// compacted history; the turn ends normally.
func TestCompactOnOverflow_CompactsOnceAndRetries(t *testing.T) {
	srv := &overflowServer{overflow: []int{3}}
	s := overflowSession(t, srv, session.Config{CompactOnOverflow: true})
	warmUp(t, s)
	rec := record(t, s)
	res, turnID := prompt(t, s, "prompt 3")
	require.NoError(t, res.Err, "the turn ends normally")
	require.NotEmpty(t, res.Messages)
	assert.Equal(t, "reply 4", res.Messages[len(res.Messages)-1].Text)
	turns, summaries, sizes := srv.counts()
	assert.Equal(t, 4, turns, "one retry")
	assert.Equal(t, 1, summaries, "exactly one compaction")
	assert.Less(t, sizes[3], sizes[2], "the retry is built from the compacted history")

	evs := rec.until(t, func(evs []session.Event) bool { return len(finishedCompactions(evs)) == 1 })
	done := finishedCompactions(evs)
	require.Len(t, done, 1)
	assert.Equal(t, session.TriggerOverflow, done[0].Trigger)
	assert.Equal(t, turnID, done[0].TurnID, "reported inside the turn")
	assert.True(t, done[0].Result.Compacted)
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.Equal(t, session.TriggerOverflow, segs[0].Trigger)
	assert.Equal(t, "openai", segs[0].SummaryProvider)
	assert.Equal(t, openaitest.Model, segs[0].SummaryModel, "the model the server reported")
	sameAsStore(t, s)
}

// TestCompactOnOverflow_OverflowsAgainFailsTurn: when the retry overflows
// too the turn fails with the overflow error, after one compaction and one
// retry: no loop.
func TestCompactOnOverflow_OverflowsAgainFailsTurn(t *testing.T) {
	srv := &overflowServer{overflow: []int{3, 4, 5, 6}}
	s := overflowSession(t, srv, session.Config{CompactOnOverflow: true})
	warmUp(t, s)
	res, _ := prompt(t, s, "prompt 3")
	require.ErrorIs(t, res.Err, provider.ErrContextOverflow)
	turns, summaries, _ := srv.counts()
	assert.Equal(t, 4, turns, "the step and one retry")
	assert.Equal(t, 1, summaries, "one compaction per step")
	sameAsStore(t, s)
}

// TestCompactOnOverflow_NothingToCompactFailsTurn: when the compaction has
// nothing to compact the turn fails with the overflow error, without a
// retry.
func TestCompactOnOverflow_NothingToCompactFailsTurn(t *testing.T) {
	srv := &overflowServer{overflow: []int{1}}
	s := overflowSession(t, srv, session.Config{CompactOnOverflow: true})
	rec := record(t, s)
	res, _ := prompt(t, s, "one very long prompt")
	require.ErrorIs(t, res.Err, provider.ErrContextOverflow)
	turns, summaries, _ := srv.counts()
	assert.Equal(t, 1, turns, "no retry")
	assert.Equal(t, 0, summaries)
	evs := rec.until(t, func(evs []session.Event) bool { return len(finishedCompactions(evs)) == 1 })
	assert.Equal(t, session.ReasonNothingToCompact, finishedCompactions(evs)[0].Result.Reason)
}

// TestCompactOnOverflow_OffByDefault: without CompactOnOverflow an overflow
// fails the turn at once; Configure turns it on.
func TestCompactOnOverflow_OffByDefault(t *testing.T) {
	srv := &overflowServer{overflow: []int{3, 5}}
	s := overflowSession(t, srv, session.Config{})
	warmUp(t, s)
	res, _ := prompt(t, s, "prompt 3")
	require.ErrorIs(t, res.Err, provider.ErrContextOverflow)
	turns, summaries, _ := srv.counts()
	assert.Equal(t, 3, turns)
	assert.Equal(t, 0, summaries)

	on := true
	h, err := s.Configure(ctxT(t), session.ConfigureRequest{CompactOnOverflow: &on})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	assert.True(t, s.Settings().CompactOnOverflow)
	res, _ = prompt(t, s, "prompt 4") // request 4 succeeds
	require.NoError(t, res.Err)
	res, _ = prompt(t, s, "prompt 5") // request 5 overflows, 6 succeeds
	require.NoError(t, res.Err)
	turns, summaries, _ = srv.counts()
	assert.Equal(t, 6, turns)
	assert.Equal(t, 1, summaries)
}
