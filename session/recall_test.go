package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// searchStore is a memstore with a naive search: a hit is a message
// holding one of the query's words (of three letters or more), ranked by
// how many, with its Segment and compaction number; enough for the
// session's side of search. It also
// records the commits it is given.
type searchStore struct {
	*memstore.Store
	mu      sync.Mutex
	commits []history.Commit
}

func newSearchStore() *searchStore { return &searchStore{Store: memstore.New()} }

func (s *searchStore) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	s.mu.Lock()
	s.commits = append(s.commits, c)
	s.mu.Unlock()
	return s.Store.CommitCompaction(ctx, id, v, c)
}

func (s *searchStore) Search(ctx context.Context, id string, q history.SearchQuery) (history.SearchPage, error) {
	tl, err := s.Timeline(ctx, id)
	if err != nil {
		return history.SearchPage{}, err
	}
	segs, err := s.Segments(ctx, id)
	if err != nil {
		return history.SearchPage{}, err
	}
	segOf, numOf := map[string]string{}, map[string]int{}
	for i, g := range segs {
		if g.Undone() {
			continue
		}
		for _, m := range g.Messages {
			segOf[m.ID], numOf[m.ID] = g.ID, i+1
		}
	}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q.Text), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		if len(w) >= 3 && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	names := map[string]string{}
	var hits []history.SearchHit
	for _, e := range tl {
		m := e.Message
		if m == nil {
			continue
		}
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
		n, snippet := 0, m.Text
		for _, w := range words {
			if strings.Contains(strings.ToLower(m.Text), w) {
				n++
				snippet = strings.ReplaceAll(snippet, w, "«"+w+"»")
			}
		}
		if n > 0 {
			hits = append(hits, history.SearchHit{MessageID: m.ID, SegmentID: segOf[m.ID], Compaction: numOf[m.ID], Position: e.Position, Role: m.Role,
				ToolName: names[m.ToolCallID], Snippet: snippet, Score: float64(n)})
		}
	}
	slices.SortStableFunc(hits, func(a, b history.SearchHit) int { return int(b.Score - a.Score) })
	limit := q.Limit
	if limit == 0 {
		limit = history.DefaultSearchLimit
	}
	return history.SearchPage{Hits: hits[:min(limit, len(hits))]}, nil
}

func (s *searchStore) lastCommit() history.Commit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits[len(s.commits)-1]
}

// archivedConversation runs four turns about a project, then compacts:
// the first two turns (four messages) are archived.
func archivedConversation(t *testing.T, cfg session.Config) (*session.Session, *providertest.Fake, *searchStore) {
	t.Helper()
	fake := providertest.New()
	st := newSearchStore()
	if cfg.Store == nil {
		cfg.Store = st
	}
	s := newSession(t, fake, cfg)
	for _, turn := range [][2]string{
		{"We use the standard flag package, never cobra.", "Noted: flag, no cobra."},
		{"The release binary is built with -trimpath.", "Noted: -trimpath."},
		{"Add a -version flag.", "Added it."},
		{"Now the tests.", "Tests pass."},
	} {
		fake.QueueTurn(providertest.Reply{Text: turn[1]})
		require.NoError(t, wait(t, mustPrompt(t, s, turn[0])).Err)
	}
	fake.QueueSummary(providertest.Reply{Text: "- building falcon"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	return s, fake, st
}

func TestSearch_ArchivedAndActiveWithTheirCompaction(t *testing.T) {
	s, _, _ := archivedConversation(t, session.Config{})
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	require.Len(t, segs, 1)

	hits, err := s.Search(ctxT(t), session.SearchRequest{Query: "why no cobra"})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, segs[0].Messages[0].ID, hits[0].MessageID)
	assert.Equal(t, segs[0].ID, hits[0].SegmentID)
	assert.Equal(t, 1, hits[0].Compaction, "the first compaction archived it")
	assert.Contains(t, hits[0].Snippet, "«cobra»")

	hits, err = s.Search(ctxT(t), session.SearchRequest{Query: "tests"})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Empty(t, hits[0].SegmentID)
	assert.Equal(t, 0, hits[0].Compaction, "a message in Active")
}

func TestSearch_SecondCompactionNumberedTwo(t *testing.T) {
	s, fake, _ := archivedConversation(t, session.Config{})
	_, err := s.Search(ctxT(t), session.SearchRequest{Query: "cobra"}) // a search before the second compaction
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "- building falcon, with tests"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	hits, err := s.Search(ctxT(t), session.SearchRequest{Query: "version"})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, 2, hits[0].Compaction)
	hits, err = s.Search(ctxT(t), session.SearchRequest{Query: "cobra"})
	require.NoError(t, err)
	assert.Equal(t, 1, hits[0].Compaction)
}

func TestSearch_Errors(t *testing.T) {
	s, _, _ := archivedConversation(t, session.Config{})
	_, err := s.Search(ctxT(t), session.SearchRequest{Query: "  "})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Search(ctxT(t), session.SearchRequest{Query: "cobra", Limit: -1})
	assert.ErrorIs(t, err, session.ErrInvalid)
}

func TestMessages_AroundAnArchivedMessageAcrossTheBoundary(t *testing.T) {
	s, _, _ := archivedConversation(t, session.Config{})
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	last := segs[0].Messages[len(segs[0].Messages)-1]

	msgs, err := s.Messages(ctxT(t), session.MessagesRequest{Around: last.ID, Before: 1, After: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"user:The release binary is built with -trimpath.",
		"assistant:Noted: -trimpath.",
		"user:Add a -version flag.", // Active from here
		"assistant:Added it.",
	}, texts(msgs))

	msgs, err = s.Messages(ctxT(t), session.MessagesRequest{Around: segs[0].Messages[0].ID, Before: 5})
	require.NoError(t, err)
	assert.Equal(t, []string{"user:We use the standard flag package, never cobra."}, texts(msgs), "fewer at the start")

	_, err = s.Messages(ctxT(t), session.MessagesRequest{Around: "no-such-message"})
	assert.ErrorIs(t, err, session.ErrUnknownMessage)
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Messages(ctxT(t), session.MessagesRequest{Around: last.ID, Before: -1})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Messages(ctxT(t), session.MessagesRequest{})
	assert.ErrorIs(t, err, session.ErrInvalid)
}

// toolResults returns the texts of the tool results in msgs.
func toolResults(msgs []history.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == history.RoleTool {
			out = append(out, m.Text)
		}
	}
	return out
}

func TestRecall_ToolSearchesAndReadsTheArchive(t *testing.T) {
	s, fake, _ := archivedConversation(t, session.Config{Recall: true})
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	archivedID := segs[0].Messages[0].ID

	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, `{"query":"what about cobra?"}`)}},
		providertest.Reply{ToolCalls: []history.ToolCall{call("c2", session.RecallTool, fmt.Sprintf(`{"message_id":%q,"after":1}`, archivedID))}},
		providertest.Reply{Text: "We never use cobra."},
	)
	before := len(fake.Requests())
	res := wait(t, mustPrompt(t, s, "Did we pick cobra?"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)
	require.Len(t, out, 2)
	assert.Contains(t, out[0], "message "+archivedID+" [user], archived by compaction 1:")
	assert.Contains(t, out[0], "«cobra»")
	assert.NotContains(t, out[0], res.Messages[0].ID, "the turn's own question is in view, not a hit")
	assert.NotContains(t, out[0], "pick «cobra»")
	assert.Contains(t, out[1], "[message "+archivedID+", user]\nWe use the standard flag package, never cobra.\n")
	assert.Contains(t, out[1], "Noted: flag, no cobra.")

	req := fake.Requests()[before]
	assert.True(t, slices.ContainsFunc(req.Tools, func(ts provider.ToolSpec) bool { return ts.Name == session.RecallTool }), "the model is offered recall")
	assert.Equal(t, "- building falcon\n\n(4 earlier messages are archived and searchable with recall.)", req.Summary)
	stored, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "- building falcon", stored, "the note is in the request only")
}

func TestRecall_OffByDefault_RequestsAsBefore(t *testing.T) {
	s, fake, _ := archivedConversation(t, session.Config{Tools: []session.Tool{echoTool()}})
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	before := len(fake.Requests())
	require.NoError(t, wait(t, mustPrompt(t, s, "Did we pick cobra?")).Err)
	req := fake.Requests()[before]
	assert.Equal(t, "- building falcon", req.Summary)
	require.Len(t, req.Tools, 1)
	assert.Equal(t, "echo", req.Tools[0].Name)

	// The summary instructions do not mention recall either.
	summaries := 0
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			summaries++
			assert.NotContains(t, r.Messages[0].Text, compact.RecallInstructions)
		}
	}
	require.Positive(t, summaries, "the conversation was compacted: a summary request was made")
}

func TestRecall_SummaryInstructionsSaySo(t *testing.T) {
	_, fake, _ := archivedConversation(t, session.Config{Recall: true})
	var sum *provider.Request
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			sum = &r
		}
	}
	require.NotNil(t, sum)
	assert.Contains(t, sum.Messages[0].Text, "<instructions>\n"+compact.RecallInstructions)
}

func TestRecall_ConfigureTurnsItOnAndOff(t *testing.T) {
	st := newSearchStore()
	s, fake, _ := archivedConversation(t, session.Config{Store: st})
	on, off := true, false
	require.NoError(t, wait(t, must(s.Configure(ctxT(t), session.ConfigureRequest{Recall: &on}))).Err)
	assert.True(t, s.Settings().Recall)
	assert.Contains(t, s.Settings().Configured, "Recall")

	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, `{"query":"trimpath"}`)}}, providertest.Reply{Text: "ok"})
	res := wait(t, mustPrompt(t, s, "How is the release built?"))
	require.NoError(t, res.Err)
	assert.Contains(t, toolResults(res.Messages)[0], "archived by compaction 1")

	require.NoError(t, wait(t, must(s.Configure(ctxT(t), session.ConfigureRequest{Recall: &off}))).Err)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c2", session.RecallTool, `{"query":"trimpath"}`)}}, providertest.Reply{Text: "ok"})
	before := len(fake.Requests())
	res = wait(t, mustPrompt(t, s, "And again?"))
	require.NoError(t, res.Err)
	assert.Equal(t, `error: unknown tool "recall"`, toolResults(res.Messages)[0])
	assert.Empty(t, fake.Requests()[before].Tools)

	// Configure stored it: a reopen keeps it whatever Config says.
	require.NoError(t, wait(t, must(s.Configure(ctxT(t), session.ConfigureRequest{Recall: &on}))).Err)
	require.NoError(t, s.Close())
	again := newSession(t, providertest.New(), session.Config{ID: s.ID(), Store: st})
	assert.True(t, again.Settings().Recall)
}

func must[R any](h *session.Handle[R], err error) *session.Handle[R] {
	if err != nil {
		panic(err)
	}
	return h
}

func TestRecall_ToolNameTaken(t *testing.T) {
	mine := session.Tool{Name: session.RecallTool, Run: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
	_, err := session.New(ctxT(t), session.Config{Provider: providertest.New(), Recall: true, Tools: []session.Tool{mine}})
	assert.ErrorIs(t, err, session.ErrInvalid)

	s := newSession(t, providertest.New(), session.Config{Tools: []session.Tool{mine}})
	on := true
	res := wait(t, must(s.Configure(ctxT(t), session.ConfigureRequest{Recall: &on})))
	assert.ErrorIs(t, res.Err, session.ErrInvalid)
	assert.False(t, s.Settings().Recall)
}

func TestRecall_BadArguments(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Recall: true, Store: newSearchStore()})
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{
		call("c1", session.RecallTool, `{"query":5}`),
		call("c2", session.RecallTool, `{}`),
		call("c3", session.RecallTool, `{"query":"x","message_id":"m"}`),
		call("c4", session.RecallTool, `{"message_id":"nope"}`),
		call("c5", session.RecallTool, `{"message_id":"nope","before":-1}`),
	}}, providertest.Reply{Text: "ok"})
	res := wait(t, mustPrompt(t, s, "go"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)
	require.Len(t, out, 5)
	assert.Contains(t, out[0], "arguments: json: cannot unmarshal number")
	assert.Contains(t, out[1], `give "query"`)
	assert.Contains(t, out[2], "not both")
	assert.Contains(t, out[3], "no such message")
	assert.Contains(t, out[4], "must not be negative")
	for _, o := range out {
		assert.True(t, strings.HasPrefix(o, "error: tool recall failed: "), o)
	}
}

func TestRecall_OutputBoundedByMaxToolOutput(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Recall: true, Store: newSearchStore(), MaxToolOutput: 300})
	long := strings.Repeat("cobra is not used here. ", 50)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	res := wait(t, mustPrompt(t, s, long))
	require.NoError(t, res.Err)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{
		call("c1", session.RecallTool, fmt.Sprintf(`{"message_id":%q}`, res.Messages[0].ID)),
	}}, providertest.Reply{Text: "ok"})
	res = wait(t, mustPrompt(t, s, "read it"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)[0]
	assert.LessOrEqual(t, len(out), 300, "the note included")
	head, tail, cut := strings.Cut(out, "\n… cut at ")
	require.True(t, cut, out)
	assert.LessOrEqual(t, len(head), 300)
	var at, total int
	_, err := fmt.Sscanf(tail, "%d of %d bytes", &at, &total)
	require.NoError(t, err, tail)
	assert.Equal(t, len(head), at)
	assert.Greater(t, total, len(long), "the whole answer holds the message")
}

func TestPrune_OldToolResultsInTheRequestOnly(t *testing.T) {
	fake := providertest.New()
	big := session.Tool{Name: "read_file", Run: func(_ context.Context, args json.RawMessage) (string, error) {
		return "contents of " + string(args) + strings.Repeat(" x", 50), nil
	}}
	tiny := session.Tool{Name: "pwd", Run: func(context.Context, json.RawMessage) (string, error) { return "/project", nil }}
	s := newSession(t, fake, session.Config{Tools: []session.Tool{big, tiny}, PruneToolResults: session.PruneConfig{KeepRecent: 2, MinBytes: 20}})
	// Seven tool results, one per step: r0..r6, r1 a short one.
	var calls []providertest.Reply
	for i := range 7 {
		name, args := "read_file", fmt.Sprintf(`{"n":%d}`, i)
		if i == 1 {
			name, args = "pwd", `{}`
		}
		calls = append(calls, providertest.Reply{ToolCalls: []history.ToolCall{call(fmt.Sprintf("c%d", i), name, args)}})
	}
	fake.QueueTurn(append(calls, providertest.Reply{Text: "done"})...)
	res := wait(t, mustPrompt(t, s, "read them all"))
	require.NoError(t, res.Err)
	results := res.Messages[1:]
	var ids []string
	for _, m := range results {
		if m.Role == history.RoleTool {
			ids = append(ids, m.ID)
		}
	}
	require.Len(t, ids, 7)

	// pruned[i] is which results request i+1 of the turn pruned (request
	// 0 has no result yet): after 1..7 results, 0, 0, 0, 2, 2, 4, 4 of the
	// oldest, the short pwd result never.
	reqs := fake.Requests()
	require.Len(t, reqs, 8)
	want := [][]int{{}, {}, {}, {0}, {0}, {0, 2, 3}, {0, 2, 3}}
	for i, req := range reqs[1:] {
		var got []int
		var n int
		for _, m := range req.Messages {
			if m.Role != history.RoleTool {
				continue
			}
			if strings.HasPrefix(m.Text, "[pruned from this request: ") {
				got = append(got, n)
				assert.Equal(t, fmt.Sprintf("[pruned from this request: the result of read_file, %d bytes, message %s]", len(results[2*n+1].Text), ids[n]), m.Text)
			}
			n++
		}
		assert.Equal(t, want[i], append([]int{}, got...), "request %d", i+1)
	}
	// Between two steps of the same pruned set the earlier messages are
	// the same: a prompt cache stays valid.
	assert.Equal(t, reqs[4].Messages, reqs[5].Messages[:len(reqs[4].Messages)])

	// The store and Active keep every result whole.
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	for _, m := range active {
		assert.NotContains(t, m.Text, "[pruned")
	}
	// The summary input is unchanged: every result there (cut only by
	// MaxToolOutput).
	fake.QueueSummary(providertest.Reply{Text: "- read files"})
	fake.QueueTurn(providertest.Reply{Text: "more"})
	require.NoError(t, wait(t, mustPrompt(t, s, "and one more turn")).Err)
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	var sum provider.Request
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			sum = r
		}
	}
	assert.NotContains(t, sum.Messages[0].Text, "[pruned")
	assert.Contains(t, sum.Messages[0].Text, `contents of {"n":0}`)
}

func TestPrune_NegativeIsInvalid(t *testing.T) {
	_, err := session.New(ctxT(t), session.Config{Provider: providertest.New(), PruneToolResults: session.PruneConfig{KeepRecent: -1}})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = session.New(ctxT(t), session.Config{Provider: providertest.New(), PruneToolResults: session.PruneConfig{KeepRecent: 1, MinBytes: -1}})
	assert.ErrorIs(t, err, session.ErrInvalid)
}

func TestFidelity_RecordedWithEveryCommit(t *testing.T) {
	fake := providertest.New()
	st := newSearchStore()
	s := newSession(t, fake, session.Config{Store: st})
	fake.QueueTurn(providertest.Reply{Text: "I will edit `parseConfig` in internal/config/load.go."})
	require.NoError(t, wait(t, mustPrompt(t, s, "Never touch go.sum. The timeout is 30s.")).Err)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	require.NoError(t, wait(t, mustPrompt(t, s, "fine")).Err)
	fake.QueueSummary(providertest.Reply{Text: "- edit `parseConfig` in internal/config/load.go; the timeout is 30s"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)

	want := compact.Fidelity(res.Segment.Messages, "- edit `parseConfig` in internal/config/load.go; the timeout is 30s")
	assert.Equal(t, 5, want.Facts, "go.sum, the instruction, 30s, parseConfig, the path: %v", want.Missing)
	assert.Equal(t, 3, want.Kept)
	assert.Equal(t, want, res.Fidelity, "in the result")
	assert.Equal(t, want, res.Segment.Fidelity, "in the Segment")
	assert.Equal(t, want, st.lastCommit().Fidelity, "passed to the store")
}

func mustActive(t *testing.T, s *session.Session) []history.Message {
	t.Helper()
	a, err := s.Active(ctxT(t))
	require.NoError(t, err)
	return a
}

// A read of a tool result alone names the tool it answers.
func TestRecall_ReadOfAToolResultNamesItsTool(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Recall: true, Store: newSearchStore(), Tools: []session.Tool{echoTool()}})
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("e1", "echo", `{"text":"hi"}`)}}, providertest.Reply{Text: "ok"})
	res := wait(t, mustPrompt(t, s, "echo hi"))
	require.NoError(t, res.Err)
	result := res.Messages[2]
	require.Equal(t, history.RoleTool, result.Role)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("r1", session.RecallTool, fmt.Sprintf(`{"message_id":%q}`, result.ID))}}, providertest.Reply{Text: "ok"})
	res = wait(t, mustPrompt(t, s, "read it"))
	require.NoError(t, res.Err)
	assert.Equal(t, fmt.Sprintf("1 message around message %s, verbatim:\n\n[message %s, result of echo]\necho {\"text\":\"hi\"}\n", result.ID, result.ID), toolResults(res.Messages)[0])
}

// The offline provider asks the archive what its context cannot answer:
// it calls recall with the question and answers from the hit; through the
// naive Searcher of these tests and the stores of sessionkit (memstore, a
// SQLite file). Search numbers the fact's compaction, Messages reads it
// verbatim, and the store keeps the Segment's fidelity.
func TestRecall_OfflineProviderAnswersFromTheArchive(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) history.Store{
		"naive":    func(*testing.T) history.Store { return newSearchStore() },
		"memstore": func(*testing.T) history.Store { return memstore.New() },
		"sqlite": func(t *testing.T) history.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	} {
		t.Run(name, func(t *testing.T) {
			short := func(_ context.Context, p *session.PendingCompaction) error { p.Summary = "- a CLI in Go"; return nil }
			s := newSession(t, offline.New(), session.Config{Recall: true, Store: open(t), BeforeCompact: short})
			for _, p := range []string{
				"Releases are tagged vMAJOR.MINOR.PATCH and built with -trimpath.",
				"We write the CLI in Go, in cmd/falcon/main.go.",
				"Add a -version flag.",
				"Then the tests.",
			} {
				require.NoError(t, wait(t, mustPrompt(t, s, p)).Err)
			}
			h, err := s.Compact(ctxT(t), session.CompactRequest{Through: mustActive(t, s)[3].ID})
			require.NoError(t, err)
			comp := wait(t, h)
			require.True(t, comp.Compacted, comp.Error)

			summary, err := s.Summary(ctxT(t))
			require.NoError(t, err)
			require.NotContains(t, summary, "trimpath", "the question's answer is in the archive only")
			res := wait(t, mustPrompt(t, s, "How are releases tagged and built?"))
			require.NoError(t, res.Err)
			require.Len(t, res.Messages, 4, "question, recall call, its result, answer")
			require.Len(t, res.Messages[1].ToolCalls, 1)
			assert.Equal(t, session.RecallTool, res.Messages[1].ToolCalls[0].Name)
			assert.JSONEq(t, `{"query":"How are releases tagged and built?"}`, string(res.Messages[1].ToolCalls[0].Arguments))
			segs, err := s.Segments(ctxT(t))
			require.NoError(t, err)
			require.Len(t, segs, 1)
			fact := segs[0].Messages[0]
			assert.Equal(t, fmt.Sprintf(`From the archive (message %s, archived by compaction 1): "Releases are tagged vMAJOR.MINOR.PATCH and built with -trimpath."`, fact.ID), res.Messages[3].Text)

			if name != "naive" { // ranks by words of three letters, "the" too
				hits, err := s.Search(ctxT(t), session.SearchRequest{Query: "why is the binary built with trimpath"})
				require.NoError(t, err)
				require.NotEmpty(t, hits)
				assert.Equal(t, fact.ID, hits[0].MessageID)
				assert.Equal(t, segs[0].ID, hits[0].SegmentID)
				assert.Equal(t, 1, hits[0].Compaction)
			}

			msgs, err := s.Messages(ctxT(t), session.MessagesRequest{Around: fact.ID, After: 1})
			require.NoError(t, err)
			assert.Equal(t, []string{"user:" + fact.Text, "assistant:" + segs[0].Messages[1].Text}, texts(msgs))

			assert.Equal(t, comp.Fidelity, segs[0].Fidelity, "the store keeps the fidelity it was given")
			assert.Equal(t, history.Fidelity{Facts: 1, Missing: []string{"path: cmd/falcon/main.go"}}, segs[0].Fidelity)
		})
	}
}

// A read of a user message gives its attachments as text where they stand,
// an image named without its bytes.
func TestRecall_ReadOfAUserMessageShowsItsAttachments(t *testing.T) {
	fake := providertest.New()
	fake.SetImageTypes("image/png")
	s := newSession(t, fake, session.Config{Recall: true, Store: newSearchStore()})
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	h, err := s.Prompt(context.Background(), session.PromptRequest{Text: "see", Attachments: []history.Attachment{
		{Kind: history.AttachLink, At: 3, Name: "a.go", URI: "file:///w/a.go"},
		{Kind: history.AttachImage, At: 3, Name: "x.png", MIMEType: "image/png", Data: []byte("PNGBYTES")},
	}})
	require.NoError(t, err)
	res := wait(t, h)
	require.NoError(t, res.Err)
	user := res.Messages[0]
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("r1", session.RecallTool, fmt.Sprintf(`{"message_id":%q}`, user.ID))}}, providertest.Reply{Text: "ok"})
	res = wait(t, mustPrompt(t, s, "read it"))
	require.NoError(t, res.Err)
	assert.Equal(t, fmt.Sprintf("1 message around message %s, verbatim:\n\n[message %s, user]\nsee\n[a.go](file:///w/a.go)\n[image: x.png, image/png]\n\n", user.ID, user.ID), toolResults(res.Messages)[0])
}

// wholeReads is a store that counts the reads whose cost grows with the
// session's history: Timeline and Segments.
type wholeReads struct {
	history.Store
	n atomic.Int64
}

func (w *wholeReads) Timeline(ctx context.Context, id string) ([]history.Entry, error) {
	w.n.Add(1)
	return w.Store.Timeline(ctx, id)
}

func (w *wholeReads) Segments(ctx context.Context, id string) ([]history.Segment, error) {
	w.n.Add(1)
	return w.Store.Segments(ctx, id)
}

// Search, Messages and the recall tool read what they show, never the
// whole history: a hit's compaction comes with the hit, and a read of a
// message's neighbours reads just the window (history.Reader.Window).
func TestRecall_ReadsNeitherTimelineNorArchive(t *testing.T) {
	st := &wholeReads{Store: memstore.New()}
	s, fake, _ := archivedConversation(t, session.Config{Recall: true, Store: st})
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	archived := segs[0].Messages[1]
	before := st.n.Load()

	hits, err := s.Search(ctxT(t), session.SearchRequest{Query: "cobra"})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, 1, hits[0].Compaction)
	msgs, err := s.Messages(ctxT(t), session.MessagesRequest{Around: archived.ID, Before: 1, After: 1})
	require.NoError(t, err)
	assert.Len(t, msgs, 3)
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, `{"query":"cobra"}`)}},
		providertest.Reply{ToolCalls: []history.ToolCall{call("c2", session.RecallTool, fmt.Sprintf(`{"message_id":%q,"before":1}`, archived.ID))}},
		providertest.Reply{Text: "flag"},
	)
	res := wait(t, mustPrompt(t, s, "Which flag package?"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)
	require.Len(t, out, 2)
	assert.Contains(t, out[0], "archived by compaction 1")
	assert.Contains(t, out[1], "2 messages around message "+archived.ID)
	assert.Equal(t, before, st.n.Load(), "no Timeline or Segments read")
}

// Messages takes at most history.MaxWindow messages on each side: a larger
// bound reads as far as that.
func TestMessages_BoundsAboveMaxWindow(t *testing.T) {
	s, _, _ := archivedConversation(t, session.Config{})
	active := mustActive(t, s)
	last := active[len(active)-1]
	msgs, err := s.Messages(ctxT(t), session.MessagesRequest{Around: last.ID, Before: history.MaxWindow + 1000, After: 1 << 40})
	require.NoError(t, err)
	assert.Len(t, msgs, 8, "the whole history, fewer than MaxWindow")
	assert.Equal(t, last.ID, msgs[7].ID)
}

func TestSearch_NeighborsCarryTheAnswer(t *testing.T) {
	s, _, _ := archivedConversation(t, session.Config{Store: memstore.New()})
	hits, err := s.Search(ctxT(t), session.SearchRequest{Query: "release binary", Neighbors: 1})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Equal(t, []string{"assistant:Noted: flag, no cobra.", "assistant:Noted: -trimpath."}, texts(hits[0].Neighbors),
		"the message before and the answer after, in timeline order")
	assert.Equal(t, 1, hits[0].NeighborsBefore)
	hits, err = s.Search(ctxT(t), session.SearchRequest{Query: "release binary"})
	require.NoError(t, err)
	assert.Empty(t, hits[0].Neighbors, "none unless asked for")
	for _, n := range []int{-1, history.MaxNeighbors + 1} {
		_, err = s.Search(ctxT(t), session.SearchRequest{Query: "release", Neighbors: n})
		require.ErrorIs(t, err, session.ErrInvalid, "neighbors %d", n)
		assert.Contains(t, err.Error(), "Neighbors")
	}
}

func TestRecall_HitsComeWithTheirNeighbors(t *testing.T) {
	s, fake, _ := archivedConversation(t, session.Config{Recall: true, Store: memstore.New()})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, `{"query":"release binary"}`)}},
		providertest.Reply{ToolCalls: []history.ToolCall{call("c2", session.RecallTool, `{"query":"tests"}`)}},
		providertest.Reply{Text: "done"},
	)
	res := wait(t, mustPrompt(t, s, "And the checks?"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)
	require.Len(t, out, 2)
	assert.Regexp(t, `\[user\], archived by compaction 1: The «release» «binary» is built with -trimpath.\n`+
		`  before it, message \S+ \[assistant\]: Noted: flag, no cobra.\n`+
		`  after it, message \S+ \[assistant\]: Noted: -trimpath.\n`, out[0])
	assert.NotContains(t, out[1], res.Messages[0].ID, "the turn's own question is in view, not a neighbour")
	assert.NotContains(t, out[1], "after it", "the answer's only neighbour after it is the turn's question")
	assert.Contains(t, out[1], "before it, message")
}
