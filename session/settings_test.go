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
