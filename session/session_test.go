package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

func TestNew_InvalidConfig(t *testing.T) {
	fake := providertest.New()
	run := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	bad := map[string]session.Config{
		"no provider":       {},
		"negative auto":     {Provider: fake, AutoCompactTokens: -1},
		"ratio above one":   {Provider: fake, AutoCompactRatio: 1.5},
		"negative steps":    {Provider: fake, MaxSteps: -1},
		"negative queue":    {Provider: fake, MaxQueue: -1},
		"tool without name": {Provider: fake, Tools: []session.Tool{{Run: run}}},
		"tool without run":  {Provider: fake, Tools: []session.Tool{{Name: "x"}}},
		"tool bad schema":   {Provider: fake, Tools: []session.Tool{{Name: "x", Run: run, Parameters: json.RawMessage(`{`)}}},
		"duplicate tool":    {Provider: fake, Tools: []session.Tool{{Name: "x", Run: run}, {Name: "x", Run: run}}},
	}
	for name, cfg := range bad {
		t.Run(name, func(t *testing.T) {
			s, err := session.New(context.Background(), cfg)
			assert.ErrorIs(t, err, session.ErrInvalid)
			assert.Nil(t, s)
		})
	}
}

func TestInvalidInputQueuesNothing(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	ctx := context.Background()
	_, err := s.Prompt(ctx, session.PromptRequest{Text: "  \n"})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Steer(ctx, session.SteerRequest{})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Configure(ctx, session.ConfigureRequest{})
	assert.ErrorIs(t, err, session.ErrInvalid)
	neg := -5
	_, err = s.Configure(ctx, session.ConfigureRequest{AutoCompactTokens: &neg})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Subscribe(ctx, session.SubscribeOptions{Buffer: -1})
	assert.ErrorIs(t, err, session.ErrInvalid)

	// Nothing was queued: a compaction now finds an idle, empty session and
	// the provider saw no request.
	res := wait(t, mustCompact(t, s, ""))
	assert.Equal(t, session.ReasonNothingToCompact, res.Reason)
	assert.Empty(t, fake.Requests())
	active, err := s.Active(ctx)
	require.NoError(t, err)
	assert.Empty(t, active)

	require.NoError(t, s.Close())
	_, err = s.Prompt(ctx, session.PromptRequest{Text: "late"})
	assert.ErrorIs(t, err, session.ErrClosed)
	_, err = s.Compact(ctx, session.CompactRequest{})
	assert.ErrorIs(t, err, session.ErrClosed)
	_, err = s.Subscribe(ctx, session.SubscribeOptions{})
	assert.ErrorIs(t, err, session.ErrClosed)
}

func TestQueueFull(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "slow", Gate: gate})
	s := newSession(t, fake, session.Config{MaxQueue: 2})
	first := mustPrompt(t, s, "one")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	// The running turn has left the queue; two more fit.
	mustPrompt(t, s, "two")
	mustCompact(t, s, "")
	_, err := s.Prompt(context.Background(), session.PromptRequest{Text: "three"})
	assert.ErrorIs(t, err, session.ErrQueueFull)
	close(gate)
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	assert.NoError(t, wait(t, first).Err)
}

func TestHandle_ResultNilWhilePendingFinishedOnce(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "hello", Gate: gate, Usage: provider.Usage{InputTokens: 3, OutputTokens: 1}})
	s := newSession(t, fake, session.Config{})
	h := mustPrompt(t, s, "hi")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	assert.Nil(t, h.Result())
	select {
	case <-h.Finished():
		t.Fatal("finished while the provider is blocked")
	default:
	}
	close(gate)
	<-h.Finished()
	<-h.Finished() // a closed channel serves every waiter
	res := h.Result()
	require.NotNil(t, res)
	require.NoError(t, res.Err)
	assert.Equal(t, []string{"user:hi", "assistant:hello"}, texts(res.Messages))
	assert.Equal(t, provider.Usage{InputTokens: 3, OutputTokens: 1}, res.Usage)
	h.Cancel() // no effect once done
	assert.Same(t, res, h.Result())
}

func TestWait_ContextEndsFirst(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "x", Gate: gate})
	s := newSession(t, fake, session.Config{})
	h := mustPrompt(t, s, "hi")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := h.Wait(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	close(gate)
	assert.NoError(t, wait(t, h).Err, "the command went on after Wait gave up")
}

func TestTurn_ToolCallsAndEvents(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{Text: "Calling.", ToolCalls: []history.ToolCall{call("c1", "echo", `{"text":"hi"}`), call("c2", "nope", `{}`)}},
		providertest.Reply{Text: "Done.", Deltas: []string{"Do", "ne."}},
	)
	s := newSession(t, fake, session.Config{SystemPrompt: "be brief", Tools: []session.Tool{echoTool()}})
	rec := record(t, s)
	res := wait(t, mustPrompt(t, s, "use echo"))
	require.NoError(t, res.Err)
	assert.Equal(t, []string{
		"user:use echo",
		"assistant:Calling.",
		`tool:echo {"text":"hi"}`,
		`tool:error: unknown tool "nope"`,
		"assistant:Done.",
	}, texts(res.Messages))
	assert.Equal(t, "c1", res.Messages[2].ToolCallID)
	assert.Equal(t, "c2", res.Messages[3].ToolCallID)

	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "be brief", reqs[0].System)
	require.Len(t, reqs[0].Tools, 1)
	assert.Equal(t, "echo", reqs[0].Tools[0].Name)
	assert.Equal(t, texts(res.Messages[:4]), texts(reqs[1].Messages), "the second step sees the tool results")

	// Every message is in the store, and events came in commit order.
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(res.Messages), texts(active))
	evs := rec.until(t, func(evs []session.Event) bool {
		if len(evs) == 0 {
			return false
		}
		last, ok := evs[len(evs)-1].Payload.(*session.TurnEvent)
		return ok && last.Phase == session.TurnFinished
	})
	var kinds []string
	var seq uint64
	for _, ev := range evs {
		require.Greater(t, ev.Seq, seq)
		seq = ev.Seq
		switch p := ev.Payload.(type) {
		case *session.MessageEvent:
			kinds = append(kinds, "msg:"+string(p.Message.Role))
		case *session.DeltaEvent:
			kinds = append(kinds, "delta:"+p.Text)
		case *session.UsageEvent:
			kinds = append(kinds, "usage")
		case *session.TurnEvent:
			kinds = append(kinds, "turn:"+string(p.Phase))
		}
	}
	assert.Equal(t, []string{"turn:started", "msg:user", "delta:Calling.", "msg:assistant", "usage", "msg:tool", "msg:tool",
		"delta:Do", "delta:ne.", "msg:assistant", "usage", "turn:finished"}, kinds)
}

func TestTurn_ToolErrorAndPanicBecomeResults(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "fail", `{}`), call("c2", "panic", ``)}},
		providertest.Reply{Text: "ok"},
	)
	s := newSession(t, fake, session.Config{Tools: []session.Tool{
		{Name: "fail", Run: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("no such file") }},
		{Name: "panic", Run: func(_ context.Context, args json.RawMessage) (string, error) { panic("boom " + string(args)) }},
	}})
	res := wait(t, mustPrompt(t, s, "go"))
	require.NoError(t, res.Err)
	assert.Equal(t, "error: tool fail failed: no such file", res.Messages[2].Text)
	assert.Equal(t, "error: tool panic failed: panic: boom {}", res.Messages[3].Text)
}

// A tool's Run is given the ID of the call it runs (session.ToolCallID),
// the ID its result answers.
func TestTurn_ToolSeesItsCallID(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "who", `{}`), call("c2", "who", `{}`)}},
		providertest.Reply{Text: "ok"},
	)
	s := newSession(t, fake, session.Config{Tools: []session.Tool{
		{Name: "who", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			return "I am " + session.ToolCallID(ctx), nil
		}},
	}})
	res := wait(t, mustPrompt(t, s, "go"))
	require.NoError(t, res.Err)
	assert.Equal(t, "I am c1", res.Messages[2].Text)
	assert.Equal(t, "c1", res.Messages[2].ToolCallID)
	assert.Equal(t, "I am c2", res.Messages[3].Text)
	assert.Empty(t, session.ToolCallID(context.Background()))
}

func TestTurn_ProviderErrorKeepsCommitted(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(providertest.Reply{Err: errors.New("model overloaded")})
	s := newSession(t, fake, session.Config{})
	res := wait(t, mustPrompt(t, s, "hello"))
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "model overloaded")
	assert.Equal(t, []string{"user:hello"}, texts(res.Messages))
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"user:hello"}, texts(active))
}

func TestTurn_StepLimit(t *testing.T) {
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply {
		return providertest.Reply{ToolCalls: []history.ToolCall{call("", "echo", `{}`)}}
	})
	s := newSession(t, fake, session.Config{MaxSteps: 3, Tools: []session.Tool{echoTool()}})
	res := wait(t, mustPrompt(t, s, "loop forever"))
	assert.ErrorIs(t, res.Err, session.ErrTooManySteps)
	assert.Equal(t, 3, fake.Calls(provider.PurposeTurn))
	// Every call has its answer; the provider-less IDs were filled in.
	for _, m := range res.Messages {
		for _, c := range m.ToolCalls {
			assert.NotEmpty(t, c.ID)
		}
	}
	assert.Len(t, res.Messages, 1+3*2)
}

func TestSteer_DuringToolRunLandsBeforeNextRequest(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "block", `{}`)}},
		providertest.Reply{Text: "seen"},
	)
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release)}})
	turn := mustPrompt(t, s, "start")
	<-started
	steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "also do X"})
	require.NoError(t, err)
	assert.Nil(t, steer.Result())
	close(release)
	res := wait(t, turn)
	require.NoError(t, res.Err)
	sr := wait(t, steer)
	require.NoError(t, sr.Err)
	assert.True(t, sr.Message.Steer)

	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"user:start", "assistant:", "tool:released", "steer:also do X"}, texts(reqs[1].Messages))
	assert.Equal(t, []string{"user:start", "assistant:", "tool:released", "steer:also do X", "assistant:seen"}, texts(res.Messages))
}

func TestSteer_IdleAppendsWithoutTurn(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	h, err := s.Steer(context.Background(), session.SteerRequest{Text: "note this"})
	require.NoError(t, err)
	res := wait(t, h)
	require.NoError(t, res.Err)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"steer:note this"}, texts(active))
	assert.Empty(t, fake.Requests())
}

func TestConfigure_AppliesFromNextRequest(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "block", `{}`)}},
		providertest.Reply{Text: "done"},
		providertest.Reply{Text: "again"},
	)
	s := newSession(t, fake, session.Config{SystemPrompt: "old", Tools: []session.Tool{blockTool(started, release)}})
	turn := mustPrompt(t, s, "start")
	<-started
	sys := "new"
	h, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys})
	require.NoError(t, err)
	close(release)
	require.NoError(t, wait(t, turn).Err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "next")).Err)
	reqs := fake.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"old", "new", "new"}, []string{reqs[0].System, reqs[1].System, reqs[2].System})
}

func TestPrompts_QueuedDuringTurnRunInOrder(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "r1", Gate: gate}, providertest.Reply{Text: "r2"}, providertest.Reply{Text: "r3"})
	s := newSession(t, fake, session.Config{})
	h1 := mustPrompt(t, s, "p1")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	h2 := mustPrompt(t, s, "p2")
	h3 := mustPrompt(t, s, "p3")
	assert.Nil(t, h2.Result())
	close(gate)
	assert.Equal(t, []string{"user:p3", "assistant:r3"}, texts(wait(t, h3).Messages))
	assert.Equal(t, []string{"user:p1", "assistant:r1"}, texts(wait(t, h1).Messages))
	assert.Equal(t, []string{"user:p2", "assistant:r2"}, texts(wait(t, h2).Messages))
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"user:p1", "assistant:r1", "user:p2", "assistant:r2", "user:p3", "assistant:r3"}, texts(active))
}

func TestCancel_QueuedAndRunning(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	s := newSession(t, fake, session.Config{})
	running := mustPrompt(t, s, "p1")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	queued := mustPrompt(t, s, "p2")
	queued.Cancel()
	queued.Cancel()
	assert.ErrorIs(t, wait(t, queued).Err, session.ErrCancelled)
	running.Cancel()
	res := wait(t, running)
	assert.ErrorIs(t, res.Err, session.ErrCancelled)
	assert.Equal(t, []string{"user:p1"}, texts(res.Messages))
	assert.Equal(t, 1, fake.Calls(provider.PurposeTurn), "the cancelled prompt never ran")
}

func TestCancel_DuringToolRunAnswersEveryCall(t *testing.T) {
	fake := providertest.New()
	started := make(chan struct{})
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "block", `{}`), call("c2", "block", `{}`)}})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, nil)}})
	h := mustPrompt(t, s, "go")
	<-started
	h.Cancel()
	res := wait(t, h)
	assert.ErrorIs(t, res.Err, session.ErrCancelled)
	require.Len(t, res.Messages, 4)
	assert.Equal(t, "error: tool block failed: context canceled", res.Messages[2].Text)
	assert.Equal(t, "c2", res.Messages[3].ToolCallID)
	assert.Contains(t, res.Messages[3].Text, "did not run")
}

func TestClose_FinishesEveryHandle(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	s := newSession(t, fake, session.Config{})
	rec := record(t, s)
	turn := mustPrompt(t, s, "p1")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	p2 := mustPrompt(t, s, "p2")
	st, err := s.Steer(context.Background(), session.SteerRequest{Text: "s"})
	require.NoError(t, err)
	cp := mustCompact(t, s, "")
	sys := "x"
	cf, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys})
	require.NoError(t, err)

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	for _, ch := range []<-chan struct{}{turn.Finished(), p2.Finished(), st.Finished(), cp.Finished(), cf.Finished()} {
		select {
		case <-ch:
		default:
			t.Fatal("a handle is unfinished after Close")
		}
	}
	assert.ErrorIs(t, turn.Result().Err, session.ErrClosed)
	assert.ErrorIs(t, p2.Result().Err, session.ErrClosed)
	assert.ErrorIs(t, st.Result().Err, session.ErrClosed)
	assert.ErrorIs(t, cf.Result().Err, session.ErrClosed)
	assert.Equal(t, session.ReasonCompactFailed, cp.Result().Reason)
	assert.Equal(t, session.ErrClosed.Error(), cp.Result().Error)
	<-rec.done
	assert.ErrorIs(t, rec.sub.Err(), session.ErrClosed)

	// State is still readable from the store after Close.
	active, err := s.Active(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"user:p1"}, texts(active))
}

func TestResume_FromSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "resume-me", Store: store, SystemPrompt: "first", AutoCompactTokens: 1000})
	converse(t, s, fake, 2)
	sys := "configured"
	h, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	fake.QueueSummary(providertest.Reply{Text: "the summary"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	before, err := s.Active(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())

	store, err = sqlite.Open(path)
	require.NoError(t, err)
	defer store.Close()
	fake2 := providertest.New()
	s2 := newSession(t, fake2, session.Config{ID: "resume-me", Store: store, SystemPrompt: "ignored on resume"})
	after, err := s2.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(after))
	sum, err := s2.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "the summary", sum)
	fake2.QueueTurn(providertest.Reply{Text: "resumed"})
	require.NoError(t, wait(t, mustPrompt(t, s2, "continue")).Err)
	req := fake2.Requests()[0]
	assert.Equal(t, "configured", req.System, "the stored settings win")
	assert.Equal(t, "the summary", req.Summary)
	assert.Equal(t, append(texts(before), "user:continue"), texts(req.Messages))
}

func TestResume_AnswersDanglingToolCalls(t *testing.T) {
	store := memstore.New()
	snap, err := store.Create(context.Background(), history.NewSession{ID: "d"})
	require.NoError(t, err)
	_, err = store.Append(context.Background(), "d", snap.Version, []history.Message{
		{ID: "u", Role: history.RoleUser, Text: "go"},
		{ID: "a", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}},
	})
	require.NoError(t, err)
	s := newSession(t, providertest.New(), session.Config{ID: "d", Store: store})
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	require.Len(t, active, 3)
	assert.Equal(t, "c1", active[2].ToolCallID)
	assert.Contains(t, active[2].Text, "did not run")
}

func TestSubscribe_SlowSubscriberEndedAndResumes(t *testing.T) {
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	s := newSession(t, fake, session.Config{})
	slow, err := s.Subscribe(context.Background(), session.SubscribeOptions{Buffer: 4})
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, wait(t, mustPrompt(t, s, "hi")).Err)
	}
	// The subscriber read nothing: it was ended, not waited for.
	var got []session.Event
	for ev := range slow.Events() {
		got = append(got, ev)
	}
	var slowErr *session.SlowSubscriberError
	require.ErrorAs(t, slow.Err(), &slowErr)
	assert.ErrorIs(t, slow.Err(), session.ErrSlowSubscriber)
	require.Len(t, got, 4)
	assert.Equal(t, got[3].Seq, slowErr.LastSeq)

	// It resumes from LastSeq and misses no durable event.
	again, err := s.Subscribe(context.Background(), session.SubscribeOptions{After: slowErr.LastSeq})
	require.NoError(t, err)
	defer again.Close()
	all, err := s.Subscribe(context.Background(), session.SubscribeOptions{After: 0})
	require.NoError(t, err)
	all.Close()
	fromStart, err := s.Subscribe(context.Background(), session.SubscribeOptions{After: 1})
	require.NoError(t, err)
	fromStart.Close()
	var durable []uint64
	for ev := range fromStart.Events() {
		durable = append(durable, ev.Seq)
	}
	var resumed []uint64
	for len(resumed) == 0 || resumed[len(resumed)-1] < durable[len(durable)-1] {
		ev := <-again.Events()
		resumed = append(resumed, ev.Seq)
	}
	var want []uint64
	for _, seq := range durable {
		if seq > slowErr.LastSeq {
			want = append(want, seq)
		}
	}
	assert.Equal(t, want, resumed)
	for _, ev := range got {
		assert.LessOrEqual(t, ev.Seq, slowErr.LastSeq)
	}
}

func TestSubscribe_ContextEndsSubscription(t *testing.T) {
	s := newSession(t, providertest.New(), session.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	require.NoError(t, err)
	cancel()
	for range sub.Events() {
	}
	assert.NoError(t, sub.Err())
}

// TestSteerOrdering_Synctest checks with a fake clock that a steer queued
// while a slow tool runs is applied at the checkpoint, before the next
// request, and that the timeline shows it in that order.
func TestSteerOrdering_Synctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		fake.QueueTurn(
			providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "sleep", `{}`)}},
			providertest.Reply{Text: "after", Delay: time.Minute},
		)
		sleep := session.Tool{Name: "sleep", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			time.Sleep(time.Hour)
			return "slept", nil
		}}
		s, err := session.New(context.Background(), session.Config{Provider: fake, Tools: []session.Tool{sleep}})
		require.NoError(t, err)
		defer s.Close()
		turn, err := s.Prompt(context.Background(), session.PromptRequest{Text: "go"})
		require.NoError(t, err)
		time.Sleep(30 * time.Minute) // the tool is half-way
		synctest.Wait()
		steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "steer"})
		require.NoError(t, err)
		synctest.Wait()
		assert.Nil(t, steer.Result(), "not applied before the checkpoint")
		assert.Equal(t, 1, fake.Calls(provider.PurposeTurn))
		time.Sleep(30*time.Minute + 30*time.Second) // tool done, second request in flight
		synctest.Wait()
		require.NotNil(t, steer.Result())
		assert.Nil(t, turn.Result())
		reqs := fake.Requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "steer:steer", texts(reqs[1].Messages)[3])
		res, err := turn.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, "assistant:after", texts(res.Messages)[len(res.Messages)-1])
	})
}

func TestInterrupt_CancelsTurnAndCompactionsKeepsPrompts(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	turn := mustPrompt(t, s, "long")
	require.NoError(t, fake.WaitCalls(ctxT(t), 3))
	comp := mustCompact(t, s, "")
	next := mustPrompt(t, s, "after")
	fake.QueueTurn(providertest.Reply{Text: "ok"}) // for "after"
	s.Interrupt()
	assert.ErrorIs(t, wait(t, turn).Err, session.ErrCancelled)
	res := wait(t, comp)
	assert.True(t, res.Cancelled)
	assert.Zero(t, fake.Calls(provider.PurposeSummary))
	assert.NoError(t, wait(t, next).Err, "queued prompts stay queued")

	// A running compaction is cancelled too.
	sgate := make(chan struct{})
	defer close(sgate)
	fake.QueueSummary(providertest.Reply{Text: "never", Gate: sgate})
	comp = mustCompact(t, s, "")
	require.NoError(t, fake.WaitCalls(ctxT(t), 5))
	s.Interrupt()
	res = wait(t, comp)
	assert.True(t, res.Cancelled)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
}
