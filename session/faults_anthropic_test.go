package session_test

// The Anthropic wire of the provider fault suite (faults_provider_test.go),
// and what only this provider has to prove above a session: a compaction
// end to end through the Messages API, and an automatic compaction that the
// cache-read tokens trigger.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
	"github.com/sessionkit/sessionkit/session"
)

const anthropicKey = "sk-ant-faults"

func anthropicWire() *faultWire {
	return &faultWire{
		name: "anthropic",
		decode: func(r *http.Request, raw []byte) (chatRequest, bool) {
			body, err := at.DecodeRequest(raw)
			if err != nil || r.URL.Path != at.Path || r.Header.Get("Authorization") != "Bearer "+anthropicKey ||
				r.Header.Get("anthropic-version") == "" || body.MaxTokens <= 0 || len(body.Messages) == 0 {
				return chatRequest{}, false
			}
			req := chatRequest{Purpose: "turn", Stream: body.Stream}
			if len(body.System) > 0 && body.System[0].Text == compact.SystemPrompt() {
				req.Purpose = "summary"
			}
			return req, true
		},
		newProvider: func(t *testing.T, cs *chatServer, o wireOptions) provider.Provider {
			p, err := anthropic.New(
				anthropic.WithBaseURL(cs.srv.URL),
				anthropic.WithModel("claude-test"),
				anthropic.WithAPIKey(anthropicKey),
				anthropic.WithHTTPClient(o.client),
				anthropic.WithMaxRetries(o.maxRetries),
				anthropic.WithBackoff(o.backoff, 2*o.backoff),
				anthropic.WithLogger(o.logger),
			)
			require.NoError(t, err)
			return p
		},
		text: func(deltas ...string) http.HandlerFunc {
			return at.Stream(append(anthropicDeltas(deltas), at.BlockStop(0), at.MessageDelta("end_turn", 7), at.MessageStop())...)
		},
		deltas: func(deltas ...string) http.HandlerFunc { return at.Stream(anthropicDeltas(deltas)...) },
		httpError: func(status int, headers ...string) http.HandlerFunc {
			typ := map[int]string{429: "rate_limit_error", 529: "overloaded_error"}[status]
			if typ == "" {
				typ = "api_error"
			}
			return at.HTTPError(status, typ, http.StatusText(status), headers...)
		},
		asErr: func(err error) (faultErr, bool) {
			if e := (*anthropic.Error)(nil); errors.As(err, &e) {
				return faultErr{StatusCode: e.StatusCode, Retries: e.Retries, Retryable: e.Retryable}, true
			}
			return faultErr{}, false
		},
		serverErrors: [][]int{{500}, {503}, {529}, {500, 529}},
		malformed: map[string]http.HandlerFunc{
			"before deltas": at.Stream(at.Event{Type: "message_start", Data: `{not json}`}),
			"after deltas": at.Stream(at.MessageStart(at.Usage{Input: 11}), at.TextStart(0), at.TextDelta(0, "so far so good"),
				at.Event{Type: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"br`}),
		},
		truncated: []truncation{
			{"deltas then end of body", at.Stream(at.MessageStart(at.Usage{Input: 3}), at.TextStart(0), at.TextDelta(0, "I was about to")), 1},
			{"deltas and message_delta, no message_stop", at.Stream(at.MessageStart(at.Usage{Input: 3}), at.TextStart(0), at.TextDelta(0, "I was about to"),
				at.BlockStop(0), at.MessageDelta("end_turn", 3)), 1},
			{"no delta, every attempt", at.Stream(at.MessageStart(at.Usage{Input: 3}), at.Ping()), 3},
		},
		truncatedText: "stream ended before the response was complete (no message_stop)",
	}
}

// anthropicDeltas is the start of an answer: message_start, a text block
// (and a ping) and a text_delta per delta.
func anthropicDeltas(deltas []string) []at.Event {
	evs := []at.Event{at.MessageStart(at.Usage{Input: 11}), at.TextStart(0), at.Ping()}
	for _, d := range deltas {
		evs = append(evs, at.TextDelta(0, d))
	}
	return evs
}

// anthropicServer is an anthropictest server for session seededID above
// the real provider/anthropic.
func anthropicSession(t *testing.T, cfg session.Config, script ...http.HandlerFunc) (*at.Server, *session.Session) {
	t.Helper()
	srv := at.NewServer(t, anthropicKey, script...)
	p, err := anthropic.New(
		anthropic.WithBaseURL(srv.URL),
		anthropic.WithModel("claude-test"),
		anthropic.WithAPIKey(anthropicKey),
		anthropic.WithHTTPClient(srv.Client()),
	)
	require.NoError(t, err)
	cfg.ID, cfg.Store = seededID, seeded(t, 2)
	return srv, newSession(t, p, cfg)
}

// TestAnthropicCompactionEndToEnd: session.Compact through
// provider/anthropic. The summary request is an ordinary Messages request
// (the summarizer instructions as system, the transcript as one user
// message, no tools, its own cache breakpoints); the streamed summary is
// committed; the next turn request carries it as a marked system block
// before the remaining Active.
func TestAnthropicCompactionEndToEnd(t *testing.T) {
	tools := []session.Tool{{Name: "noop", Description: "Does nothing.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Run: func(context.Context, json.RawMessage) (string, error) { return "", nil }}}
	srv, s := anthropicSession(t, session.Config{SystemPrompt: "You are a coding agent.", Tools: tools},
		at.Stream(at.TextReply("The user asked ", at.Usage{Input: 900, Output: 12}, "questions 0 and 1.")...),
		at.Stream(at.TextReply("Answer 2.", at.Usage{Input: 40, CacheWrite: 200, Output: 3})...))
	rec := record(t, s)

	h := mustCompact(t, s, "keep it short")
	res := wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, "The user asked questions 0 and 1.", res.Segment.Summary)
	assert.Equal(t, provider.Usage{InputTokens: 900, OutputTokens: 12}, res.Usage)
	evs := rec.until(t, func(evs []session.Event) bool {
		p := phases(evs, h.ID())
		return len(p) > 0 && p[len(p)-1] == session.PhaseFinished
	})
	assert.Equal(t, []string{"The user asked ", "questions 0 and 1."}, deltas(evs), "the summary streamed to the timeline")
	assert.Equal(t, []string{"user:question 1", "assistant:answer 1"}, activeTexts(t, s))

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	sum := reqs[0].Request
	require.Len(t, sum.System, 1)
	assert.Equal(t, compact.SystemPrompt(), sum.System[0].Text)
	assert.Empty(t, sum.Tools, "no tool definitions in a summary request")
	require.Len(t, sum.Messages, 1)
	assert.Equal(t, "user", sum.Messages[0].Role)
	require.Len(t, sum.Messages[0].Content, 1)
	transcript := sum.Messages[0].Content[0].Text
	for _, want := range []string{"question 0", "answer 0", "keep it short"} {
		assert.Contains(t, transcript, want)
	}
	assert.NotContains(t, transcript, "question 1", "the kept half is not summarized")
	assert.Equal(t, []string{"system[0]", "messages[0].content[0]"}, sum.Breakpoints())
	assert.True(t, sum.Stream)

	turn := wait(t, mustPrompt(t, s, "question 2"))
	require.NoError(t, turn.Err)
	assert.Equal(t, provider.Usage{InputTokens: 240, OutputTokens: 3, CacheWriteTokens: 200}, turn.Usage)
	reqs = srv.Requests()
	require.Len(t, reqs, 2)
	next := reqs[1].Request
	require.Len(t, next.System, 2)
	assert.Equal(t, "You are a coding agent.", next.System[0].Text)
	assert.Equal(t, provider.SummaryPreamble+"\n\n<summary>\nThe user asked questions 0 and 1.\n</summary>", next.System[1].Text)
	var got []string
	for _, m := range next.Messages {
		got = append(got, m.Role+":"+m.Content[0].Text)
	}
	assert.Equal(t, []string{"user:question 1", "assistant:answer 1", "user:question 2"}, got)
	assert.Equal(t, []string{"tools[0]", "system[0]", "system[1]", "messages[2].content[0]"}, next.Breakpoints())
	sameAsStore(t, s)
}

// TestAnthropicAutoCompactOnCacheReads: a turn whose uncached input is tiny
// but whose conversation is read from the cache reaches the automatic
// threshold: the trigger sees input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens (plus output), not input_tokens alone, and the
// automatic compaction runs at the end of the turn.
func TestAnthropicAutoCompactOnCacheReads(t *testing.T) {
	cached := at.Usage{Input: 30, CacheWrite: 500, CacheRead: 9_600, Output: 20} // 10 150 tokens of context
	srv, s := anthropicSession(t, session.Config{AutoCompactTokens: 10_000},
		at.Stream(at.TextReply("Answer 2.", cached)...),
		at.Stream(at.TextReply("Summary of the first exchange.", at.Usage{Input: 700, Output: 9})...))
	rec := record(t, s)

	turn := wait(t, mustPrompt(t, s, "question 2"))
	require.NoError(t, turn.Err)
	assert.Equal(t, provider.Usage{InputTokens: 10_130, OutputTokens: 20, CacheReadTokens: 9_600, CacheWriteTokens: 500}, turn.Usage)
	assert.Less(t, cached.Input+cached.Output, 10_000, "input_tokens alone would not reach the threshold")

	evs := rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
				return true
			}
		}
		return false
	})
	var res *session.CompactResult
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
			res = c.Result
		}
	}
	require.NotNil(t, res)
	assert.True(t, res.Compacted, res.Error)
	assert.Equal(t, "auto", string(res.Trigger))
	reqs := srv.Requests()
	require.Len(t, reqs, 2, "one turn step, then the summary")
	assert.Equal(t, "summary", reqs[1].Purpose(compact.SystemPrompt()))
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "Summary of the first exchange.", sum)
}

// TestAnthropicContextOverflowIsReported: a turn rejected as "prompt is too
// long" fails with provider.ErrContextOverflow, found through the turn's
// error, without a retry.
func TestAnthropicContextOverflowIsReported(t *testing.T) {
	srv, s := anthropicSession(t, session.Config{},
		at.HTTPError(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"))
	res := wait(t, mustPrompt(t, s, "a very long question"))
	require.Error(t, res.Err)
	assert.True(t, errors.Is(res.Err, provider.ErrContextOverflow), "%v", res.Err)
	assert.True(t, strings.Contains(res.Err.Error(), "prompt is too long"))
	assert.Len(t, srv.Requests(), 1)
}
