package providertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func turn(text string) *provider.Request {
	return &provider.Request{
		Purpose:  provider.PurposeTurn,
		Messages: []history.Message{{ID: "u", Role: history.RoleUser, Text: text}},
	}
}

func summary(text string) *provider.Request {
	return &provider.Request{
		Purpose:  provider.PurposeSummary,
		Messages: []history.Message{{ID: "s", Role: history.RoleUser, Text: text}},
	}
}

func TestQueueOrder(t *testing.T) {
	fake := providertest.New()
	fake.Queue(
		providertest.Reply{Text: "one", Usage: provider.Usage{InputTokens: 1, OutputTokens: 2}},
		providertest.Reply{Text: "two", ToolCalls: []history.ToolCall{{ID: "c1", Name: "ls", Arguments: json.RawMessage(`{}`)}}},
	)
	fake.Queue(providertest.Reply{Text: "three"})
	assert.Equal(t, 3, fake.Pending())

	var got []string
	for _, req := range []*provider.Request{turn("a"), summary("b"), turn("c")} {
		resp, err := fake.Complete(t.Context(), req, nil)
		require.NoError(t, err)
		assert.Equal(t, history.RoleAssistant, resp.Message.Role)
		got = append(got, resp.Message.Text)
		if resp.Message.Text == "one" {
			assert.Equal(t, provider.Usage{InputTokens: 1, OutputTokens: 2}, resp.Usage)
		}
		if resp.Message.Text == "two" {
			assert.Equal(t, []history.ToolCall{{ID: "c1", Name: "ls", Arguments: json.RawMessage(`{}`)}}, resp.Message.ToolCalls)
		}
	}
	assert.Equal(t, []string{"one", "two", "three"}, got)
	assert.Zero(t, fake.Pending())
	assert.Equal(t, 2, fake.Calls(provider.PurposeTurn))
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary))

	reqs := fake.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "a", reqs[0].Messages[0].Text)
	assert.Equal(t, provider.PurposeSummary, reqs[1].Purpose)
	assert.Equal(t, "c", reqs[2].Messages[0].Text)
}

func TestPurposeRouting(t *testing.T) {
	fake := providertest.New()
	fake.QueueSummary(providertest.Reply{Text: "s1"})
	fake.QueueTurn(providertest.Reply{Text: "t1"}, providertest.Reply{Text: "t2", Purpose: provider.PurposeSummary})
	fake.Queue(providertest.Reply{Text: "any"})
	fake.Queue(providertest.Reply{Text: "s2", Purpose: provider.PurposeSummary})

	steps := []struct {
		req  *provider.Request
		want string
	}{
		{turn("1"), "t1"},    // skips the summary reply s1
		{summary("2"), "s1"}, // s1 was left in place
		{turn("3"), "t2"},    // QueueTurn overrides the Purpose of its replies
		{summary("4"), "any"},
		{turn("5"), ""}, // only s2 is left, reserved for summaries
		{summary("6"), "s2"},
	}
	for i, s := range steps {
		resp, err := fake.Complete(t.Context(), s.req, nil)
		if s.want == "" {
			require.ErrorIs(t, err, providertest.ErrNoReply, "step %d", i)
			assert.Equal(t, 1, fake.Pending())
			continue
		}
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.want, resp.Message.Text, "step %d", i)
	}
	assert.Zero(t, fake.Pending())
}

func TestDefaultReply(t *testing.T) {
	fake := providertest.New()
	_, err := fake.Complete(t.Context(), summary("x"), nil)
	require.ErrorIs(t, err, providertest.ErrNoReply)
	assert.Contains(t, err.Error(), `"summary"`)
	_, err = fake.Complete(t.Context(), turn("x"), nil)
	require.ErrorIs(t, err, providertest.ErrNoReply)
	assert.Contains(t, err.Error(), `"turn"`)

	fake.SetDefault(func(req *provider.Request) providertest.Reply {
		assert.Equal(t, 2, fake.Calls(provider.PurposeTurn), "the default may call the fake")
		req.Messages[0].Text = "changed" // a copy: the fake's record is unaffected
		return providertest.Reply{Text: "default", Purpose: provider.PurposeSummary}
	})
	resp, err := fake.Complete(t.Context(), turn("y"), nil)
	require.NoError(t, err)
	assert.Equal(t, "default", resp.Message.Text, "the default reply's Purpose is ignored")
	assert.Equal(t, "y", fake.Requests()[2].Messages[0].Text)

	fake.Queue(providertest.Reply{Text: "queued"})
	resp, err = fake.Complete(t.Context(), turn("z"), nil)
	require.NoError(t, err)
	assert.Equal(t, "queued", resp.Message.Text, "queued replies come before the default")

	fake.SetDefault(nil)
	_, err = fake.Complete(t.Context(), turn("w"), nil)
	require.ErrorIs(t, err, providertest.ErrNoReply)
}

func TestDeltas(t *testing.T) {
	tests := []struct {
		name       string
		reply      providertest.Reply
		wantDeltas []string
		wantText   string
	}{
		{"text as one delta", providertest.Reply{Text: "hello world"}, []string{"hello world"}, "hello world"},
		{"explicit deltas", providertest.Reply{Text: "hello world", Deltas: []string{"hel", "lo ", "world"}}, []string{"hel", "lo ", "world"}, "hello world"},
		{"text from deltas", providertest.Reply{Deltas: []string{"a", "b"}}, []string{"a", "b"}, "ab"},
		{"deltas as given", providertest.Reply{Text: "final", Deltas: []string{"draft"}}, []string{"draft"}, "final"},
		{"empty deltas", providertest.Reply{Text: "x", Deltas: []string{}}, nil, "x"},
		{"empty text", providertest.Reply{ToolCalls: []history.ToolCall{{ID: "c", Name: "n"}}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New()
			fake.Queue(tt.reply, tt.reply)
			var deltas []string
			resp, err := fake.Complete(t.Context(), turn("q"), func(d string) { deltas = append(deltas, d) })
			require.NoError(t, err)
			assert.Equal(t, tt.wantDeltas, deltas)
			assert.Equal(t, tt.wantText, resp.Message.Text)

			// Without onDelta the response is the same.
			again, err := fake.Complete(t.Context(), turn("q"), nil)
			require.NoError(t, err)
			assert.Equal(t, resp, again)
		})
	}
}

func TestReplyError(t *testing.T) {
	boom := errors.New("boom")
	fake := providertest.New()
	fake.QueueSummary(providertest.Reply{Deltas: []string{"partial ", "summary"}, Err: boom})
	var deltas []string
	resp, err := fake.Complete(t.Context(), summary("x"), func(d string) { deltas = append(deltas, d) })
	require.ErrorIs(t, err, boom)
	assert.Nil(t, resp)
	assert.Equal(t, []string{"partial ", "summary"}, deltas, "deltas come before the error")
}

func TestCancelBetweenDeltas(t *testing.T) {
	fake := providertest.New()
	fake.Queue(providertest.Reply{Deltas: []string{"a", "b", "c"}})
	ctx, cancel := context.WithCancel(t.Context())
	var deltas []string
	_, err := fake.Complete(ctx, turn("x"), func(d string) {
		deltas = append(deltas, d)
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"a"}, deltas)
}

func TestCancelledBeforeCall(t *testing.T) {
	fake := providertest.New()
	fake.Queue(providertest.Reply{Text: "unused"}, providertest.Reply{Text: "next"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := fake.Complete(ctx, turn("x"), nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, fake.Calls(provider.PurposeTurn), "the request is recorded")
	assert.Equal(t, 1, fake.Pending(), "and its reply taken")
}

func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		gate := make(chan struct{})
		fake.Queue(providertest.Reply{Text: "released", Gate: gate})

		var resp *provider.Response
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = fake.Complete(t.Context(), turn("x"), nil)
		}()
		require.NoError(t, fake.WaitCalls(t.Context(), 1))
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Complete returned before the gate opened")
		default:
		}
		close(gate)
		<-done
		require.NoError(t, err)
		assert.Equal(t, "released", resp.Message.Text)
	})
}

func TestGateCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		fake.Queue(providertest.Reply{Text: "never", Gate: make(chan struct{})})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := fake.Complete(ctx, turn("x"), nil)
			done <- err
		}()
		req, err := fake.Next(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "x", req.Messages[0].Text)
		cancel()
		err = <-done
		require.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "gate")
	})
}

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		fake.Queue(providertest.Reply{Text: "slow", Delay: time.Hour})
		start := time.Now()
		resp, err := fake.Complete(t.Context(), turn("x"), nil)
		require.NoError(t, err)
		assert.Equal(t, "slow", resp.Message.Text)
		assert.Equal(t, time.Hour, time.Since(start))
	})
}

func TestDelayCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		fake.Queue(providertest.Reply{Text: "slow", Delay: time.Hour})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		var deltas []string
		_, err := fake.Complete(ctx, turn("x"), func(d string) { deltas = append(deltas, d) })
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
		assert.Empty(t, deltas)
	})
}

func TestGateThenDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		gate := make(chan struct{})
		fake.Queue(providertest.Reply{Text: "x", Gate: gate, Delay: time.Minute})
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := fake.Complete(t.Context(), turn("x"), nil)
			assert.NoError(t, err)
		}()
		time.Sleep(time.Hour) // fake time: the call still waits for the gate
		synctest.Wait()
		close(gate)
		<-done
		assert.Equal(t, time.Hour+time.Minute, time.Since(start))
	})
}

func TestWaitCallsAndNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
		require.NoError(t, fake.WaitCalls(t.Context(), 0))

		// Nothing received yet: both wait until ctx is done.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := fake.WaitCalls(ctx, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "got 0")
		_, err = fake.Next(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		go func() {
			for i := range 3 {
				time.Sleep(time.Second)
				_, err := fake.Complete(context.Background(), turn(fmt.Sprint(i)), nil)
				assert.NoError(t, err)
			}
		}()
		require.NoError(t, fake.WaitCalls(t.Context(), 2))
		assert.GreaterOrEqual(t, len(fake.Requests()), 2)
		for i := range 3 {
			req, err := fake.Next(t.Context())
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(i), req.Messages[0].Text)
		}
		synctest.Wait()
		assert.Len(t, fake.Requests(), 3)
	})
}

func TestRequestsAreDeepCopies(t *testing.T) {
	fake := providertest.New()
	fake.Queue(providertest.Reply{Text: "ok"})
	req := &provider.Request{
		Purpose: provider.PurposeTurn,
		Messages: []history.Message{{ID: "a", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
			{ID: "c", Name: "ls", Arguments: json.RawMessage(`{"a":1}`)},
		}}},
		Tools: []provider.ToolSpec{{Name: "ls", Parameters: json.RawMessage(`{}`)}},
	}
	_, err := fake.Complete(t.Context(), req, nil)
	require.NoError(t, err)

	req.Messages[0].ToolCalls[0].Arguments[2] = 'X'
	req.Messages[0].ID = "changed"
	req.Tools[0].Parameters[0] = '['
	got := fake.Requests()
	require.Len(t, got, 1)
	assert.Equal(t, "a", got[0].Messages[0].ID)
	assert.Equal(t, `{"a":1}`, string(got[0].Messages[0].ToolCalls[0].Arguments))
	assert.Equal(t, `{}`, string(got[0].Tools[0].Parameters))

	got[0].Messages[0].ToolCalls[0].Arguments[2] = 'Y'
	assert.Equal(t, `{"a":1}`, string(fake.Requests()[0].Messages[0].ToolCalls[0].Arguments))
}

// TestRequestsAreWhatTheProviderWasGiven: the fake records every request
// exactly as a real provider receives it, adding nothing and moving nothing,
// so that a test sees a summary request without its transcript in Messages
// as exactly that.
func TestRequestsAreWhatTheProviderWasGiven(t *testing.T) {
	reqs := []*provider.Request{
		{Purpose: provider.PurposeSummary, System: "summarize", MaxTokens: 7,
			Messages: []history.Message{{ID: "summary-input", Role: history.RoleUser, Text: "<transcript>\n[user] hi\n</transcript>"}}},
		{Purpose: provider.PurposeSummary, System: "summarize"},
		{Purpose: provider.PurposeTurn, System: "sys", Summary: "earlier", Messages: []history.Message{}},
	}
	fake := providertest.New()
	for _, req := range reqs {
		fake.Queue(providertest.Reply{Text: "ok", Purpose: req.Purpose})
		_, err := fake.Complete(t.Context(), req, nil)
		require.NoError(t, err)
	}
	got := fake.Requests()
	require.Len(t, got, len(reqs))
	for i, req := range reqs {
		assert.Equal(t, *req, got[i], "request %d", i)
	}
}

func TestQueuedRepliesAreCopies(t *testing.T) {
	fake := providertest.New()
	calls := []history.ToolCall{{ID: "c", Name: "ls", Arguments: json.RawMessage(`{}`)}}
	fake.Queue(providertest.Reply{ToolCalls: calls})
	calls[0].Name = "changed"
	resp, err := fake.Complete(t.Context(), turn("x"), nil)
	require.NoError(t, err)
	assert.Equal(t, "ls", resp.Message.ToolCalls[0].Name)
}

func TestNilRequest(t *testing.T) {
	_, err := providertest.New().Complete(t.Context(), nil, nil)
	require.Error(t, err)
}

func TestConcurrentUse(t *testing.T) {
	fake := providertest.New()
	const n = 50
	for i := range n {
		fake.Queue(providertest.Reply{Text: fmt.Sprint(i)})
	}
	var wg sync.WaitGroup
	seen := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			req := turn("x")
			if i%2 == 1 {
				req = summary("x")
			}
			resp, err := fake.Complete(t.Context(), req, func(string) {})
			if assert.NoError(t, err) {
				seen <- resp.Message.Text
			}
			_ = fake.Requests()
			_ = fake.Pending()
		})
	}
	wg.Wait()
	close(seen)
	got := map[string]bool{}
	for s := range seen {
		got[s] = true
	}
	assert.Len(t, got, n, "every reply used exactly once")
	assert.Equal(t, n/2, fake.Calls(provider.PurposeTurn))
	assert.Equal(t, n/2, fake.Calls(provider.PurposeSummary))
	assert.Len(t, fake.Requests(), n)
}

func Example() {
	fake := providertest.New()
	fake.QueueSummary(providertest.Reply{Deltas: []string{"- the user ", "said hi"}})
	fake.QueueTurn(providertest.Reply{Text: "hello", Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}})

	ctx := context.Background()
	resp, _ := fake.Complete(ctx, turn("hi"), nil)
	fmt.Println(resp.Message.Text, resp.Usage.Total())

	resp, _ = fake.Complete(ctx, summary("[user] hi"), func(d string) { fmt.Printf("%q ", d) })
	fmt.Println(resp.Message.Text)

	_, err := fake.Complete(ctx, turn("again"), nil)
	fmt.Println(err)
	fmt.Println(fake.Calls(provider.PurposeTurn), fake.Calls(provider.PurposeSummary), strings.Count(fmt.Sprint(fake.Requests()), "again"))
	// Output:
	// hello 12
	// "- the user " "said hi" - the user said hi
	// providertest: no scripted reply for a "turn" request
	// 2 1 1
}
