package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// noticeClients are the three ways a client takes notices: v1 with the
// capability (notice updates), v1 without it (agent text), v2 (notice
// updates, no capability needed).
var noticeClients = []struct {
	name    string
	init    string
	v2      bool
	notices bool
}{
	{"v1 with session.notices", `{"protocolVersion":1,"clientCapabilities":{"session":{"notices":{}}}}`, false, true},
	{"v1 without", `{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`, false, false},
	{"v1 notices null", `{"protocolVersion":1,"clientCapabilities":{"session":{"notices":null}}}`, false, false},
	{"v1 notices true", `{"protocolVersion":1,"clientCapabilities":{"session":{"notices":true}}}`, false, false},
	{"v2", v2InitParams, true, true},
}

// open initializes c as the client says and opens a session.
func openFor(t *testing.T, c *hostileClient, init string, v2 bool) string {
	t.Helper()
	m := c.call("initialize", init)
	require.Nil(t, m.Error, "initialize")
	if v2 {
		return c.newSessionV2()
	}
	return c.newSession()
}

// promptDone sends a prompt and waits for the end of its turn (v1: the
// response; v2: the idle state).
func promptDone(t *testing.T, c *hostileClient, v2 bool, sid, text string) {
	t.Helper()
	seq := c.lastSeq()
	m := c.call("session/prompt", promptParams(sid, text))
	require.Nil(t, m.Error, "session/prompt")
	if v2 {
		c.waitNote(seq, "idle", isIdle)
	}
}

// noticesSince returns the notice updates after seq, decoded.
func noticesSince(t *testing.T, c *hostileClient, seq int) []schema.Notice {
	t.Helper()
	var out []schema.Notice
	for _, n := range c.notesSince(seq) {
		if n.kind != "notice" {
			continue
		}
		var v schema.Notice
		require.NoError(t, json.Unmarshal(n.update, &v), "a notice update: %s", n.update)
		out = append(out, v)
	}
	return out
}

// agentText is the agent text after seq.
func agentText(c *hostileClient, seq int) string {
	var b strings.Builder
	for _, n := range c.notesSince(seq) {
		if n.kind == "agent_message_chunk" {
			var u struct {
				Content struct{ Text string } `json:"content"`
			}
			_ = json.Unmarshal(n.update, &u)
			b.WriteString(u.Content.Text)
		}
	}
	return b.String()
}

// TestNotice_AutoCompactionSuspendedAndResumed: three failed automatic
// compactions in a row suspend automatic compaction, and a compaction that
// succeeds resumes it; the user is told each time: a notice where the
// client takes notices (v1 with session.notices as an object, v2), agent
// text otherwise, never both. A replay (session/load) repeats no notice.
func TestNotice_AutoCompactionSuspendedAndResumed(t *testing.T) {
	for _, cl := range noticeClients {
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			var summaryWorks atomic.Bool
			fake.SetDefault(func(req *provider.Request) providertest.Reply {
				if req.Purpose == provider.PurposeSummary {
					if summaryWorks.Load() {
						return providertest.Reply{Text: "a summary"}
					}
					return providertest.Reply{Err: errors.New("the summary model is down")}
				}
				return providertest.Reply{Text: "noted", Usage: provider.Usage{InputTokens: 500}}
			})
			store := memstore.New()
			c := hostileServe(t, fake, store, acp.ServerOptions{Session: session.Config{AutoCompactTokens: 100}})
			sid := openFor(t, c, cl.init, cl.v2)
			start := c.lastSeq()
			for i := range 3 {
				promptDone(t, c, cl.v2, sid, fmt.Sprintf("prompt %d", i))
			}
			suspended := "Automatic compaction suspended: 3 automatic compactions in a row failed (the last: "
			if cl.notices {
				got := noticesSince(t, c, start)
				require.Len(t, got, 1, "one notice, after the third failure")
				assert.Equal(t, schema.NoticeWarning, got[0].Severity)
				assert.Equal(t, "Automatic compaction suspended", got[0].Title)
				assert.Contains(t, got[0].Description, "3 automatic compactions in a row failed")
				assert.Contains(t, got[0].Description, "the summary model is down")
				assert.NotContains(t, agentText(c, start), "Automatic compaction suspended", "not also as text")
				var failedAt, noticeAt int
				for _, n := range c.notesSince(start) {
					switch {
					case strings.Contains(n.text, "Compaction failed") || (n.kind == "compaction_update" && strings.Contains(string(n.update), `"failed"`)):
						failedAt = n.seq
					case n.kind == "notice":
						noticeAt = n.seq
					}
				}
				assert.Less(t, failedAt, noticeAt, "after the end of the compaction that caused it")
			} else {
				assert.Empty(t, noticesSince(t, c, start), "no notice without the capability")
				assert.Contains(t, agentText(c, start), suspended)
				assert.Contains(t, agentText(c, start), "the summary model is down")
				text := agentText(c, start)
				assert.Less(t, strings.LastIndex(text, "Compaction failed"), strings.Index(text, suspended), "after the end of the compaction that caused it")
			}

			// A manual compaction succeeds: resumed.
			summaryWorks.Store(true)
			seq := c.lastSeq()
			promptDone(t, c, cl.v2, sid, "/compact")
			if cl.notices {
				c.waitNote(seq, "the resumed notice", func(n hostileNote) bool { return n.kind == "notice" })
				got := noticesSince(t, c, seq)
				require.Len(t, got, 1)
				assert.Equal(t, schema.Notice{Severity: schema.NoticeInfo, Title: "Automatic compaction resumed", Description: "A compaction succeeded: the conversation is compacted automatically again when it grows."}, got[0])
			} else {
				assert.Contains(t, agentText(c, seq), "Automatic compaction resumed: A compaction succeeded")
			}
			if cl.v2 {
				return
			}
			// A replay on a new connection repeats none of it.
			c2 := hostileServe(t, fake, store, acp.ServerOptions{Session: session.Config{AutoCompactTokens: 100}})
			require.Nil(t, c2.call("initialize", cl.init).Error)
			seq2 := c2.lastSeq()
			require.Nil(t, c2.call("session/load", `{"sessionId":"`+sid+`","cwd":"/project","mcpServers":[]}`).Error)
			assert.Empty(t, noticesSince(t, c2, seq2), "notices are live only")
			assert.NotContains(t, agentText(c2, seq2), "Automatic compaction")
		})
	}
}

// retryingProvider reports one rate-limited retry before each turn answer.
type retryingProvider struct{ *providertest.Fake }

func (p retryingProvider) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose == provider.PurposeTurn {
		provider.ReportRetry(ctx, provider.Retry{Retry: 1, MaxRetries: 3, Wait: 7 * time.Second, RateLimited: true, Err: errors.New("HTTP 429: rate_limit_error: slow down\nmore detail")})
	}
	return p.Fake.Complete(ctx, req, onDelta)
}

// TestNotice_ProviderRetry: a provider's retry after a rate limit is told
// before the answer: a warning notice naming the wait and the retry, or
// agent text without the capability.
func TestNotice_ProviderRetry(t *testing.T) {
	for _, cl := range noticeClients {
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "the answer"} })
			c := hostileServe(t, retryingProvider{fake}, memstore.New(), acp.ServerOptions{})
			sid := openFor(t, c, cl.init, cl.v2)
			seq := c.lastSeq()
			promptDone(t, c, cl.v2, sid, "hello")
			want := schema.Notice{Severity: schema.NoticeWarning, Title: "Rate limited by the model provider: retrying in 7s", Description: "Retry 1 of 3 after: HTTP 429: rate_limit_error: slow down"}
			if !cl.notices {
				assert.Empty(t, noticesSince(t, c, seq))
				text := agentText(c, seq)
				assert.True(t, strings.HasPrefix(text, want.Title+": "+want.Description+"\n\n"), "the notice's text comes before the answer: %q", text)
				assert.Contains(t, text, "the answer")
				return
			}
			got := noticesSince(t, c, seq)
			require.Len(t, got, 1)
			assert.Equal(t, want, got[0])
			// Before the answer's text.
			var noticeAt, answerAt int
			for _, n := range c.notesSince(seq) {
				switch {
				case n.kind == "notice":
					noticeAt = n.seq
				case n.kind == "agent_message_chunk" && answerAt == 0:
					answerAt = n.seq
				}
			}
			assert.Less(t, noticeAt, answerAt, "the notice precedes the answer")
		})
	}
}

// TestNotice_OverflowRecovered: a step the provider refused as too long for
// the context, recovered by an overflow compaction, is told once the
// compaction has completed, before the retried step's answer.
func TestNotice_OverflowRecovered(t *testing.T) {
	for _, cl := range noticeClients {
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			store := memstore.New()
			c := hostileServe(t, fake, store, acp.ServerOptions{Session: session.Config{CompactOnOverflow: true}})
			sid := openFor(t, c, cl.init, cl.v2)
			fake.QueueTurn(providertest.Reply{Text: "first answer"})
			promptDone(t, c, cl.v2, sid, "first")
			fake.QueueTurn(providertest.Reply{Err: fmt.Errorf("too long: %w", provider.ErrContextOverflow)}, providertest.Reply{Text: "after the overflow"})
			fake.QueueSummary(providertest.Reply{Text: "a summary"})
			seq := c.lastSeq()
			promptDone(t, c, cl.v2, sid, "second")
			title := "Context overflow recovered by compaction"
			if !cl.v2 {
				// A replay on a new connection repeats no notice.
				c2 := hostileServe(t, fake, store, acp.ServerOptions{})
				require.Nil(t, c2.call("initialize", cl.init).Error)
				seq2 := c2.lastSeq()
				require.Nil(t, c2.call("session/load", `{"sessionId":"`+sid+`","cwd":"/project","mcpServers":[]}`).Error)
				assert.Empty(t, noticesSince(t, c2, seq2), "notices are live only")
				assert.NotContains(t, agentText(c2, seq2), title)
			}
			if !cl.notices {
				assert.Empty(t, noticesSince(t, c, seq))
				text := agentText(c, seq)
				assert.Contains(t, text, title+": The request was longer than the model's context: 1 earlier message was summarized")
				assert.Less(t, strings.Index(text, title), strings.Index(text, "after the overflow"))
				return
			}
			got := noticesSince(t, c, seq)
			require.Len(t, got, 1)
			assert.Equal(t, schema.Notice{Severity: schema.NoticeInfo, Title: title, Description: "The request was longer than the model's context: 1 earlier message was summarized and the request is sent again."}, got[0])
		})
	}
}

// TestNotice_FromATool: ToolClient.Notice sends a tool's notice (an MCP
// server that failed, say): given while the session opens, right after the
// response that opens it; given from a running tool, in order with the
// call's updates. An invalid notice is refused and sends nothing.
func TestNotice_FromATool(t *testing.T) {
	for _, cl := range noticeClients {
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			var invalid error
			opts := acp.ServerOptions{SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
				invalid = ts.Client.Notice(context.Background(), schema.Notice{Severity: schema.NoticeError})
				if err := ts.Client.Notice(context.Background(), schema.Notice{Severity: schema.NoticeError, Title: "MCP server github failed", Description: "exit status 1"}); err != nil {
					return acp.Toolset{}, err
				}
				return acp.Toolset{Tools: []session.Tool{{Name: "probe", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
					return "probed", ts.Client.Notice(ctx, schema.Notice{Severity: schema.NoticeInfo, Title: "probing"})
				}}}}, nil
			}}
			c := hostileServe(t, fake, memstore.New(), opts)
			require.Nil(t, c.call("initialize", cl.init).Error)
			seq := c.lastSeq()
			params := `{"cwd":"/project","mcpServers":[]}`
			if cl.v2 {
				params = `{"cwd":"/project"}`
			}
			opened := c.call("session/new", params)
			require.Nil(t, opened.Error)
			require.Error(t, invalid, "a notice without a title")
			var r struct{ SessionID string }
			require.NoError(t, json.Unmarshal(opened.Result, &r))
			first := c.waitNote(seq, "the early notice", func(n hostileNote) bool {
				return n.kind == "notice" || (n.kind == "agent_message_chunk" && strings.Contains(n.text, "MCP server github failed"))
			})
			assert.Greater(t, first.seq, opened.seq, "after the response that opens the session")
			assert.Equal(t, r.SessionID, first.sid)
			if cl.notices {
				assert.JSONEq(t, `{"sessionUpdate":"notice","severity":"error","title":"MCP server github failed","description":"exit status 1"}`, string(first.update))
			} else {
				assert.Equal(t, "MCP server github failed: exit status 1\n\n", first.text)
			}

			fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "call_p", Name: "probe", Arguments: json.RawMessage(`{}`)}}}, providertest.Reply{Text: "done"})
			seq = c.lastSeq()
			promptDone(t, c, cl.v2, r.SessionID, "probe it")
			var callAt, noticeAt, resultAt int
			for _, n := range c.notesSince(seq) {
				s := string(n.update)
				switch {
				case (n.kind == "tool_call" || n.kind == "tool_call_update") && callAt == 0:
					callAt = n.seq
				case n.kind == "notice" || (n.kind == "agent_message_chunk" && strings.Contains(n.text, "probing")):
					noticeAt = n.seq
				case n.kind == "tool_call_update" && strings.Contains(s, `"completed"`):
					resultAt = n.seq
				}
			}
			require.NotZero(t, noticeAt, "the tool's notice")
			assert.Less(t, callAt, noticeAt, "after the call it comes from")
			assert.Less(t, noticeAt, resultAt, "before the call's result")
		})
	}
}

// TestNotice_Wire: the notice update's shape, as the schema has it, and
// what decoding refuses.
func TestNotice_Wire(t *testing.T) {
	raw, err := json.Marshal(&schema.Notice{Severity: schema.NoticeWarning, Title: "t"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sessionUpdate":"notice","severity":"warning","title":"t"}`, string(raw))
	_, err = json.Marshal(&schema.Notice{Severity: schema.NoticeWarning})
	assert.Error(t, err, "the title is required and not empty")
	for _, bad := range []string{
		`{"sessionUpdate":"notice","severity":"info"}`,
		`{"sessionUpdate":"notice","severity":"info","title":""}`,
		`{"sessionUpdate":"notice","title":"x"}`,
		`{"sessionUpdate":"notice","severity":"info","title":5}`,
	} {
		var n schema.Notice
		assert.ErrorIs(t, json.Unmarshal([]byte(bad), &n), schema.ErrMalformed, bad)
	}
	var n schema.Notice
	require.NoError(t, json.Unmarshal([]byte(`{"sessionUpdate":"notice","severity":"_custom","title":"x","description":null}`), &n))
	assert.Equal(t, schema.Notice{Severity: "_custom", Title: "x"}, n)
	for caps, want := range map[string]bool{`{"notices":{}}`: true, `{"notices":null}`: false, `{}`: false, `{"notices":[]}`: false, `null`: false} {
		assert.Equal(t, want, schema.ClientCapabilities{Session: json.RawMessage(caps)}.SupportsNotices(), caps)
	}
}

// summaryRetrying reports one rate-limited retry before each summary.
type summaryRetrying struct{ *providertest.Fake }

func (p summaryRetrying) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose == provider.PurposeSummary {
		provider.ReportRetry(ctx, provider.Retry{Retry: 2, MaxRetries: 3, Wait: 4 * time.Second, RateLimited: true, Err: errors.New("HTTP 429: busy")})
	}
	return p.Fake.Complete(ctx, req, onDelta)
}

// TestNotice_SummaryCallRetry: a retry of a compaction's summary call is
// told as a retry of that call.
func TestNotice_SummaryCallRetry(t *testing.T) {
	for _, cl := range noticeClients {
		if !cl.notices {
			continue
		}
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "an answer"} })
			c := hostileServe(t, summaryRetrying{fake}, memstore.New(), acp.ServerOptions{})
			sid := openFor(t, c, cl.init, cl.v2)
			promptDone(t, c, cl.v2, sid, "one")
			promptDone(t, c, cl.v2, sid, "two")
			seq := c.lastSeq()
			promptDone(t, c, cl.v2, sid, "/compact")
			got := noticesSince(t, c, seq)
			require.Len(t, got, 1)
			assert.Equal(t, schema.Notice{Severity: schema.NoticeWarning, Title: "Rate limited by the model provider: retrying the compaction's summary call in 4s", Description: "Retry 2 of 3 after: HTTP 429: busy"}, got[0])
		})
	}
}

// TestNotice_AutoCompactionHeld: an automatic compaction that leaves the
// context above the threshold (the model reports 500 tokens whatever the
// history holds; the threshold is 100) holds automatic compaction, and the
// user is told once what is happening and what to change: a notice where
// the client takes notices, agent text otherwise. The steps after it run
// no compaction and tell nothing more.
func TestNotice_AutoCompactionHeld(t *testing.T) {
	for _, cl := range noticeClients {
		t.Run(cl.name, func(t *testing.T) {
			fake := providertest.New()
			fake.SetDefault(func(req *provider.Request) providertest.Reply {
				if req.Purpose == provider.PurposeSummary {
					return providertest.Reply{Text: "a summary"}
				}
				return providertest.Reply{Text: "noted", Usage: provider.Usage{InputTokens: 500}}
			})
			c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{Session: session.Config{AutoCompactTokens: 100}})
			sid := openFor(t, c, cl.init, cl.v2)
			start := c.lastSeq()
			for i := range 6 {
				promptDone(t, c, cl.v2, sid, fmt.Sprintf("prompt %d", i))
			}
			assert.Equal(t, 1, fake.Calls(provider.PurposeSummary), "one automatic compaction, then the hold")
			const title = "Automatic compaction held: it cannot get the context under the threshold"
			const desc = "The last automatic compaction grew the context from 500 to 500 tokens, at or above the threshold of 100. Compacting again would not help, so the conversation is not compacted automatically until the context reaches 525 tokens. " +
				"To change this: raise the threshold (or the context window), shorten the system prompt or the tools, or run /compact with instructions for a shorter summary."
			if cl.notices {
				got := noticesSince(t, c, start)
				require.Len(t, got, 1, "told once")
				assert.Equal(t, schema.Notice{Severity: schema.NoticeWarning, Title: title, Description: desc}, got[0])
				assert.NotContains(t, agentText(c, start), title, "not also as text")
			} else {
				assert.Empty(t, noticesSince(t, c, start))
				text := agentText(c, start)
				assert.Equal(t, 1, strings.Count(text, title+": "+desc), "told once, as text")
			}
		})
	}
}

// TestNotice_Embedder: an agent whose session's embedder fails tells a
// client that takes notices once, over the wire, when failing starts (not
// again when the retry after the backoff fails too), and once when it
// works again; no turn fails meanwhile.
func TestNotice_Embedder(t *testing.T) {
	for _, cl := range noticeClients {
		if !cl.notices {
			continue
		}
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			var failing atomic.Bool
			failing.Store(true)
			var failures atomic.Int32
			works := providertest.NewEmbedder(8)
			emb := &providertest.Embedder{Answer: func(ctx context.Context, texts []string) ([][]float32, error) {
				if failing.Load() {
					failures.Add(1)
					return nil, errors.New("embedding service unavailable\nsecond line")
				}
				return works.Embed(ctx, texts)
			}}
			fake := providertest.New()
			fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "the answer"} })
			c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{Session: session.Config{Embedder: emb}})
			sid := openFor(t, c, cl.init, cl.v2)
			seq := c.lastSeq()
			isNotice := func(title string) func(n hostileNote) bool {
				return func(n hostileNote) bool { return n.kind == "notice" && strings.Contains(string(n.update), title) }
			}
			promptDone(t, c, cl.v2, sid, "the linker step failed")
			c.waitNote(seq, "the failure's notice", isNotice("The embedding model failed"))
			promptDone(t, c, cl.v2, sid, "the queue package test is flaky")
			poll.Until(t, 30*time.Second, func() bool { return failures.Load() >= 2 }, "the retry after the backoff")
			failing.Store(false)
			c.waitNote(seq, "the recovery's notice", isNotice("works again"))

			got := noticesSince(t, c, seq)
			require.Len(t, got, 2, "one notice when failing starts, one when it works again: %v", got)
			assert.Equal(t, schema.NoticeWarning, got[0].Severity)
			assert.Equal(t, "The embedding model failed: search finds messages by their words only", got[0].Title)
			assert.Contains(t, got[0].Description, "embedding service unavailable")
			assert.NotContains(t, got[0].Description, "second line")
			assert.Equal(t, schema.Notice{Severity: schema.NoticeInfo, Title: "The embedding model works again",
				Description: "Messages are found by their meaning as well as their words."}, got[1])
		})
	}
}
