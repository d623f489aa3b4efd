package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// allStores is stores with PostgreSQL: each entry opens a fresh store and
// returns it with a function that opens it again, as another process would.
func allStores(t *testing.T) map[string]func(t *testing.T) (history.Store, func() history.Store) {
	out := map[string]func(t *testing.T) (history.Store, func() history.Store){}
	for name, newStore := range stores(t) {
		out[name] = func(t *testing.T) (history.Store, func() history.Store) {
			s := newStore()
			return s, func() history.Store { return s }
		}
	}
	out["postgres"] = func(t *testing.T) (history.Store, func() history.Store) {
		url := pgtest.Database(t)
		open := func() history.Store {
			s, err := postgres.Open(context.Background(), url)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		return open(), open
	}
	return out
}

// TestSettings_ModelAndMode: Config.Model is the model of every turn
// request and Config.Mode a label the session reports; Configure changes
// both from the next model request on, and every store keeps them: a
// reopened session keeps the configured ones even when its Config names
// others (the Configured rule), while one never configured takes Config's.
func TestSettings_ModelAndMode(t *testing.T) {
	for name, newStore := range allStores(t) {
		t.Run(name, func(t *testing.T) {
			store, reopen := newStore(t)
			fake := providertest.New()
			cfg := session.Config{ID: "m", Store: store, Model: "model-a", Mode: "ask"}
			s := newSession(t, fake, cfg)
			got := s.Settings()
			assert.Equal(t, "model-a", got.Model)
			assert.Equal(t, "ask", got.Mode)
			fake.QueueTurn(providertest.Reply{Text: "one"})
			require.NoError(t, wait(t, mustPrompt(t, s, "first")).Err)

			model, mode := "model-b", "full-auto"
			h, err := s.Configure(ctxT(t), session.ConfigureRequest{Model: &model, Mode: &mode})
			require.NoError(t, err)
			require.NoError(t, wait(t, h).Err)
			got = s.Settings()
			assert.Equal(t, "model-b", got.Model)
			assert.Equal(t, "full-auto", got.Mode)
			assert.Equal(t, []string{"Model", "Mode"}, got.Configured)
			fake.QueueTurn(providertest.Reply{Text: "two"})
			require.NoError(t, wait(t, mustPrompt(t, s, "second")).Err)
			reqs := fake.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "model-a", reqs[0].Model, "Config.Model is asked for")
			assert.Equal(t, "model-b", reqs[1].Model, "the configured model from the next request on")
			require.NoError(t, s.Close())

			// Reopened with other values in Config: the configured ones win.
			cfg.Store, cfg.Model, cfg.Mode = reopen(), "model-c", "read-only"
			s2 := newSession(t, fake, cfg)
			got = s2.Settings()
			assert.Equal(t, "model-b", got.Model, "%s kept the configured model", name)
			assert.Equal(t, "full-auto", got.Mode, "%s kept the configured mode", name)
			fake.QueueTurn(providertest.Reply{Text: "three"})
			require.NoError(t, wait(t, mustPrompt(t, s2, "third")).Err)
			assert.Equal(t, "model-b", fake.Requests()[2].Model)

			// Back to the provider's configured model: "" is a value too.
			none := ""
			h, err = s2.Configure(ctxT(t), session.ConfigureRequest{Model: &none})
			require.NoError(t, err)
			require.NoError(t, wait(t, h).Err)
			require.NoError(t, s2.Close())
			s3 := newSession(t, fake, session.Config{ID: "m", Store: reopen(), Model: "model-d"})
			assert.Empty(t, s3.Settings().Model, "the configured \"\" survives the reopen")
			assert.Equal(t, "full-auto", s3.Settings().Mode)
			require.NoError(t, s3.Close())

			// A session never configured takes Config's on reopen.
			other := session.Config{ID: "n", Store: reopen(), Model: "model-a", Mode: "ask"}
			require.NoError(t, newSession(t, fake, other).Close())
			other.Store, other.Model, other.Mode = reopen(), "model-e", "auto-edit"
			s4 := newSession(t, fake, other)
			assert.Equal(t, "model-e", s4.Settings().Model)
			assert.Equal(t, "auto-edit", s4.Settings().Mode)
		})
	}
}

// settingsEvents returns the SettingsEvents of evs, and the index in evs
// of each.
func settingsEvents(evs []session.Event) ([]*session.SettingsEvent, []int) {
	var out []*session.SettingsEvent
	var at []int
	for i, ev := range evs {
		if p, ok := ev.Payload.(*session.SettingsEvent); ok {
			out = append(out, p)
			at = append(at, i)
		}
	}
	return out, at
}

// TestSettingsEvent: a Configure that changes a value publishes a
// SettingsEvent with the settings after it and the names changed; one that
// repeats the values publishes none; the title an untitled session takes
// from its first message is one too, right after that message's event.
// Each is durable: a later process replays them from the event log
// (Subscribe) and from the stored timeline (Replay), at their positions,
// with the values as they were then, on every store.
func TestSettingsEvent(t *testing.T) {
	for name, newStore := range allStores(t) {
		t.Run(name, func(t *testing.T) {
			store, reopen := newStore(t)
			fake := providertest.New()
			cfg := session.Config{ID: "e", Store: store, Cwd: "/src", Model: "model-a", Mode: "ask"}
			s := newSession(t, fake, cfg)
			rec := record(t, s)
			configure := func(s *session.Session, req session.ConfigureRequest) {
				t.Helper()
				h, err := s.Configure(ctxT(t), req)
				require.NoError(t, err)
				require.NoError(t, wait(t, h).Err)
			}
			model, mode := "model-b", "full-auto"
			configure(s, session.ConfigureRequest{Model: &model, Mode: &mode})
			configure(s, session.ConfigureRequest{Model: &model}) // the same value: no event
			fake.QueueTurn(providertest.Reply{Text: "done"})
			require.NoError(t, wait(t, mustPrompt(t, s, "Fix the build\nplease")).Err)
			ro := "read-only"
			configure(s, session.ConfigureRequest{Mode: &ro})

			evs := rec.until(t, func(evs []session.Event) bool { got, _ := settingsEvents(evs); return len(got) == 3 })
			live, at := settingsEvents(evs)
			require.Len(t, live, 3)
			assert.Equal(t, []string{"Model", "Mode"}, live[0].Changed)
			assert.Equal(t, "model-b", live[0].Settings.Model)
			assert.Equal(t, "full-auto", live[0].Settings.Mode)
			assert.Empty(t, live[0].Settings.Title)
			assert.Equal(t, "/src", live[0].Settings.Cwd)
			assert.Equal(t, int64(0), live[0].Position, "recorded before any message")

			assert.Equal(t, []string{"Title"}, live[1].Changed)
			assert.Equal(t, "Fix the build", live[1].Settings.Title)
			assert.Equal(t, "full-auto", live[1].Settings.Mode)
			assert.Equal(t, session.NoPosition, live[1].Position)
			require.Positive(t, at[1])
			msg, ok := evs[at[1]-1].Payload.(*session.MessageEvent)
			require.True(t, ok, "the title follows the message that made it, got %T", evs[at[1]-1].Payload)
			assert.Equal(t, "Fix the build\nplease", msg.Message.Text)
			assert.Equal(t, msg.TurnID, live[1].TurnID)

			assert.Equal(t, []string{"Mode"}, live[2].Changed)
			assert.Equal(t, "read-only", live[2].Settings.Mode)
			assert.Equal(t, "Fix the build", live[2].Settings.Title)
			assert.Equal(t, int64(3), live[2].Position, "after the record and the two messages")
			assert.Equal(t, s.Settings(), live[2].Settings)
			firstSeq := evs[at[0]].Seq
			require.NoError(t, s.Close())

			// Another process: the event log replays them.
			cfg.Store = reopen()
			s2 := newSession(t, fake, cfg)
			sub, err := s2.Subscribe(ctxT(t), session.SubscribeOptions{After: firstSeq})
			require.NoError(t, err)
			defer sub.Close()
			var logged []*session.SettingsEvent
			limit := ctxT(t)
			for len(logged) < 2 {
				select {
				case ev := <-sub.Events():
					if p, ok := ev.Payload.(*session.SettingsEvent); ok {
						logged = append(logged, p)
					}
				case <-limit.Done():
					t.Fatalf("the log replayed %d settings events", len(logged))
				}
			}
			assert.Equal(t, live[1:], logged)

			// And the stored timeline, at their places.
			rep, err := s2.Replay(ctxT(t), session.ReplayOptions{})
			require.NoError(t, err)
			defer rep.Sub.Close()
			var kinds []string
			var replayed []*session.SettingsEvent
			for _, ev := range rep.Events {
				switch p := ev.Payload.(type) {
				case *session.MessageEvent:
					kinds = append(kinds, string(p.Message.Role))
				case *session.SettingsEvent:
					kinds = append(kinds, "settings")
					replayed = append(replayed, p)
				}
			}
			assert.Equal(t, []string{"settings", "user", "settings", "assistant", "settings"}, kinds)
			require.Len(t, replayed, 3)
			for i := range live {
				assert.Equal(t, live[i], replayed[i], "settings event %d as it was published", i)
			}

			// After a sequence number: only what came after it.
			rep2, err := s2.Replay(ctxT(t), session.ReplayOptions{After: rep.Events[0].Seq})
			require.NoError(t, err)
			defer rep2.Sub.Close()
			got, _ := settingsEvents(rep2.Events)
			require.Len(t, got, 2)
			assert.Equal(t, []string{"Title"}, got[0].Changed)
		})
	}
}

// TestSettingsEvent_TitledAtCreation: a session given a Title publishes
// no title event, live or replayed.
func TestSettingsEvent_TitledAtCreation(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Title: "Given"})
	rec := record(t, s)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	require.NoError(t, wait(t, mustPrompt(t, s, "hello")).Err)
	mode := "ask"
	h, err := s.Configure(ctxT(t), session.ConfigureRequest{Mode: &mode})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	evs := rec.until(t, func(evs []session.Event) bool { got, _ := settingsEvents(evs); return len(got) > 0 })
	got, _ := settingsEvents(evs)
	require.Len(t, got, 1)
	assert.Equal(t, []string{"Mode"}, got[0].Changed)
	assert.Equal(t, "Given", got[0].Settings.Title)
	rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	replayed, _ := settingsEvents(rep.Events)
	require.Len(t, replayed, 1)
	assert.Equal(t, []string{"Mode"}, replayed[0].Changed)
}
