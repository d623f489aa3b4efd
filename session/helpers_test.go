package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestMain stops the PostgreSQL server the tests of all three stores start
// (allStores) and checks for leaked goroutines.
func TestMain(m *testing.M) { pgtest.Main(m) }

const waitLimit = 10 * time.Second

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// newSession opens a session on fake with a memstore unless cfg has a store.
func newSession(t *testing.T, fake provider.Provider, cfg session.Config) *session.Session {
	t.Helper()
	cfg.Provider = fake
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	s, err := session.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// wait waits for a handle and returns its result.
func wait[R any](t *testing.T, h *session.Handle[R]) R {
	t.Helper()
	r, err := h.Wait(ctxT(t))
	require.NoError(t, err, "handle %s did not finish", h.ID())
	return r
}

// recorder collects every event of a session from its start.
type recorder struct {
	mu     sync.Mutex
	events []session.Event
	done   chan struct{}
	sub    *session.Subscription
}

func record(t *testing.T, s *session.Session) *recorder {
	t.Helper()
	sub, err := s.Subscribe(context.Background(), session.SubscribeOptions{Buffer: 100000})
	require.NoError(t, err)
	r := &recorder{done: make(chan struct{}), sub: sub}
	go func() {
		defer close(r.done)
		for ev := range sub.Events() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-r.done })
	return r
}

func (r *recorder) all() []session.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]session.Event(nil), r.events...)
}

// until waits until pred holds for the events recorded so far.
func (r *recorder) until(t *testing.T, pred func([]session.Event) bool) []session.Event {
	t.Helper()
	var evs []session.Event
	if poll.Within(waitLimit, func() bool { evs = r.all(); return pred(evs) }) {
		return evs
	}
	t.Fatalf("events never matched; got %d events", len(r.all()))
	return nil
}

func actions(evs []session.Event) []session.ActionStatus {
	var out []session.ActionStatus
	for _, ev := range evs {
		if a, ok := ev.Payload.(*session.ActionEvent); ok {
			out = append(out, a.Status)
		}
	}
	return out
}

func phases(evs []session.Event, compactID string) []session.Phase {
	var out []session.Phase
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && (compactID == "" || c.CompactID == compactID) {
			out = append(out, c.Phase)
		}
	}
	return out
}

// texts returns "role:text" of each message.
func texts(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		s := string(m.Role) + ":" + m.Text
		if m.Steer {
			s = "steer:" + m.Text
		}
		out[i] = s
	}
	return out
}

// converse runs n prompts, each answered by a turn reply, so Active holds
// 2n user and assistant messages.
func converse(t *testing.T, s *session.Session, fake *providertest.Fake, n int) {
	t.Helper()
	for i := range n {
		fake.QueueTurn(providertest.Reply{Text: "reply " + string(rune('a'+i)), Usage: provider.Usage{InputTokens: 10 * (i + 1), OutputTokens: 5}})
		res := wait(t, mustPrompt(t, s, "prompt "+string(rune('a'+i))))
		require.NoError(t, res.Err)
	}
}

func mustPrompt(t *testing.T, s *session.Session, text string) *session.Handle[session.TurnResult] {
	t.Helper()
	h, err := s.Prompt(context.Background(), session.PromptRequest{Text: text})
	require.NoError(t, err)
	return h
}

func mustCompact(t *testing.T, s *session.Session, instructions string) *session.Handle[session.CompactResult] {
	t.Helper()
	h, err := s.Compact(context.Background(), session.CompactRequest{Instructions: instructions})
	require.NoError(t, err)
	return h
}

// faultStore wraps a store and fails chosen writes: before the write
// (nothing lands) or after it (the write lands, the caller sees an error).
type faultStore struct {
	history.Store
	mu         sync.Mutex
	failCommit error
	failAppend error
	failBegin  error
	afterWrite bool // fail after the inner write succeeded
	commits    int
}

func (f *faultStore) fault(which *error) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *which, f.afterWrite
}

func (f *faultStore) set(fn func(f *faultStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultStore) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	f.mu.Lock()
	f.commits++
	f.mu.Unlock()
	err, after := f.fault(&f.failCommit)
	if err != nil && !after {
		return 0, nil, err
	}
	nv, seg, ierr := f.Store.CommitCompaction(ctx, id, v, c)
	if err != nil && ierr == nil {
		return 0, nil, err
	}
	return nv, seg, ierr
}

func (f *faultStore) Append(ctx context.Context, id string, v uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	err, after := f.fault(&f.failAppend)
	if err != nil && !after {
		return 0, err
	}
	nv, ierr := f.Store.Append(ctx, id, v, msgs, usage...)
	if err != nil && ierr == nil {
		return 0, err
	}
	return nv, ierr
}

func (f *faultStore) BeginCompaction(ctx context.Context, id string, v uint64, rec history.CompactionRecord) (uint64, error) {
	err, after := f.fault(&f.failBegin)
	if err != nil && !after {
		return 0, err
	}
	nv, ierr := f.Store.BeginCompaction(ctx, id, v, rec)
	if err != nil && ierr == nil {
		return 0, err
	}
	return nv, ierr
}

// sameAsStore asserts that the session's in-memory state equals the store's.
func sameAsStore(t *testing.T, s *session.Session) {
	t.Helper()
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	snap, err := s.Store().Load(ctxT(t), s.ID())
	require.NoError(t, err)
	assert.Equal(t, texts(snap.Active), texts(active))
	assert.Equal(t, snap.Summary, summary)
}

var errDisk = errors.New("disk on fire")

// echoTool returns its arguments; blockTool waits for release.
func echoTool() session.Tool {
	return session.Tool{
		Name:       "echo",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			return "echo " + string(args), nil
		},
	}
}

func blockTool(started chan<- struct{}, release <-chan struct{}) session.Tool {
	return session.Tool{
		Name: "block",
		Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			started <- struct{}{}
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
	}
}

func call(id, name, args string) history.ToolCall {
	return history.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}
