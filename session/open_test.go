package session_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// stores returns a fresh memstore and a fresh SQLite store.
func stores(t *testing.T) map[string]func() history.Store {
	return map[string]func() history.Store{
		"memstore": func() history.Store { return memstore.New() },
		"sqlite": func() history.Store {
			s, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

// TestOpen_UnknownIDCreatesNothing: Open of an ID the store does not hold
// fails with history.ErrNotFound and creates nothing; New of the same ID
// creates it; Open then resumes it.
func TestOpen_UnknownIDCreatesNothing(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore()
			fake := providertest.New()
			_, err := session.Open(context.Background(), session.Config{ID: "does-not-exist-typo", Provider: fake, Store: store})
			require.ErrorIs(t, err, history.ErrNotFound)
			_, err = store.Load(context.Background(), "does-not-exist-typo")
			require.ErrorIs(t, err, history.ErrNotFound, "Open created nothing")
			page, err := store.(history.Lister).ListSessions(context.Background(), history.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, page.Sessions)

			_, err = session.Open(context.Background(), session.Config{Provider: fake, Store: store})
			require.ErrorIs(t, err, session.ErrInvalid, "Open needs an ID")

			s := newSession(t, fake, session.Config{ID: "real", Store: store})
			converse(t, s, fake, 1)
			require.NoError(t, s.Close())
			s2, err := session.Open(context.Background(), session.Config{ID: "real", Provider: fake, Store: store})
			require.NoError(t, err)
			defer s2.Close()
			active, err := s2.Active(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, []string{"user:prompt a", "assistant:reply a"}, texts(active))
		})
	}
}

// TestSettings_ReopenRule: on reopen, the settings Configure changed keep
// their stored values and the others take Config's; Settings reports the
// effective ones, the next request uses them, New logs the difference at
// info level, and the effective settings are stored.
func TestSettings_ReopenRule(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "s", Store: store, SystemPrompt: "v1", AutoCompactTokens: 100, CompactInstructions: "code v1", MaxSteps: 5})
	instr, steps := "from the editor", 7
	h, err := s.Configure(context.Background(), session.ConfigureRequest{CompactInstructions: &instr, MaxSteps: &steps})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	assert.Equal(t, []string{"CompactInstructions", "MaxSteps"}, s.Settings().Configured)
	require.NoError(t, s.Close())

	core, logs := observer.New(zapcore.InfoLevel)
	cfg := session.Config{ID: "s", Store: store, Logger: zap.New(core), SystemPrompt: "v2", AutoCompactTokens: 200, CompactInstructions: "code v2", MaxSteps: 9}
	s2 := newSession(t, fake, cfg)
	got := s2.Settings()
	assert.Equal(t, "v2", got.SystemPrompt, "the application's new system prompt takes effect")
	assert.Equal(t, 200, got.AutoCompactTokens)
	assert.Equal(t, "from the editor", got.CompactInstructions, "a run-time change survives the reload")
	assert.Equal(t, 7, got.MaxSteps)
	assert.Equal(t, []string{"CompactInstructions", "MaxSteps"}, got.Configured)
	differ := logs.FilterMessage("the stored settings differ from Config").All()
	require.Len(t, differ, 1)
	assert.Equal(t, zapcore.InfoLevel, differ[0].Level)
	keys := map[string]bool{}
	for _, f := range differ[0].Context {
		keys[f.Key] = true
	}
	for _, name := range []string{"SystemPrompt", "AutoCompactTokens", "CompactInstructions", "MaxSteps"} {
		assert.True(t, keys[name], "the log names %s", name)
	}

	fake.QueueTurn(providertest.Reply{Text: "ok"})
	require.NoError(t, wait(t, mustPrompt(t, s2, "hi")).Err)
	assert.Equal(t, "v2", fake.Requests()[0].System)
	require.NoError(t, s2.Close())

	// The effective settings were stored: the same Config again differs
	// only where Configure's values win.
	core, logs = observer.New(zapcore.InfoLevel)
	cfg.Logger = zap.New(core)
	s3 := newSession(t, fake, cfg)
	want := got
	want.Title = "hi"
	assert.Equal(t, want, s3.Settings())
	differ = logs.FilterMessage("the stored settings differ from Config").All()
	require.Len(t, differ, 1)
	var names []string
	for _, f := range differ[0].Context {
		if f.Key != "session" {
			names = append(names, f.Key)
		}
	}
	assert.Equal(t, []string{"CompactInstructions", "MaxSteps"}, names)
}

// TestSettings_Title: Config.Title and Config.Cwd are stored when the
// session is created and listed; an untitled session takes a default title
// from its first prompt, in Settings, in the listing and after a reopen.
func TestSettings_Title(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "titled", Store: store, Title: "Fix the build", Cwd: "/src/app"})
	assert.Equal(t, "Fix the build", s.Settings().Title)
	assert.Equal(t, "/src/app", s.Settings().Cwd)

	u := newSession(t, fake, session.Config{ID: "untitled", Store: store, Cwd: "/src/app"})
	assert.Empty(t, u.Settings().Title)
	fake.QueueTurn(providertest.Reply{Text: "sure"})
	require.NoError(t, wait(t, mustPrompt(t, u, "  Rename the package\nand update every import")).Err)
	assert.Equal(t, "Rename the package", u.Settings().Title)
	require.NoError(t, u.Close())

	page, err := store.ListSessions(context.Background(), history.ListOptions{Cwd: "/src/app"})
	require.NoError(t, err)
	titles := map[string]string{}
	for _, info := range page.Sessions {
		titles[info.ID] = info.Title
	}
	assert.Equal(t, map[string]string{"titled": "Fix the build", "untitled": "Rename the package"}, titles)

	u2 := newSession(t, fake, session.Config{ID: "untitled", Store: store, Title: "ignored: titles are set at creation"})
	assert.Equal(t, "Rename the package", u2.Settings().Title)
	assert.Equal(t, "/src/app", u2.Settings().Cwd)
}

// TestLease_TwoSQLiteStoresOneSession: two stores on one SQLite file, as two
// agent processes: the second cannot open a session the first serves (an
// error that names the holder, history.ErrLeased) and the first keeps
// working; once the first closes, the second takes the session over.
func TestLease_TwoSQLiteStoresOneSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	a, err := sqlite.Open(path, sqlite.WithHolder("agent-a"))
	require.NoError(t, err)
	defer a.Close()
	b, err := sqlite.Open(path, sqlite.WithHolder("agent-b"))
	require.NoError(t, err)
	defer b.Close()

	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "shared", Store: a})
	converse(t, s, fake, 1)
	for range 3 {
		_, err = session.New(context.Background(), session.Config{ID: "shared", Provider: fake, Store: b})
		require.ErrorIs(t, err, history.ErrLeased)
		var le *history.LeaseError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "agent-a", le.Holder)
		fake.QueueTurn(providertest.Reply{Text: "still mine"})
		require.NoError(t, wait(t, mustPrompt(t, s, "go on")).Err, "the holder never fails")
	}
	require.NoError(t, s.Close())
	s2, err := session.Open(context.Background(), session.Config{ID: "shared", Provider: fake, Store: b})
	require.NoError(t, err)
	defer s2.Close()
	active, err := s2.Active(ctxT(t))
	require.NoError(t, err)
	assert.Len(t, active, 8)
}

// TestSettings_SystemPromptParts: the system prompt of a request is
// SystemPrompt, Instructions and an appended ClientPrompt in that order (an
// overriding one takes SystemPrompt's place); a reopen with a zero
// ClientPrompt keeps the stored one, Instructions are Config's at every
// open and never stored.
func TestSettings_SystemPromptParts(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore()
			fake := providertest.New()
			cfg := session.Config{ID: "s", Store: store, SystemPrompt: "agent", Instructions: "project v1",
				ClientPrompt: session.ClientPrompt{Text: "client"}}
			s := newSession(t, fake, cfg)
			assert.Equal(t, "agent\n\nproject v1\n\nclient", s.Settings().System)
			fake.QueueTurn(providertest.Reply{Text: "ok"})
			require.NoError(t, wait(t, mustPrompt(t, s, "hi")).Err)
			assert.Equal(t, "agent\n\nproject v1\n\nclient", fake.Requests()[0].System)
			require.NoError(t, s.Close())

			// Reopened without the client's prompt: it is kept; the new
			// instructions take effect.
			s2 := newSession(t, fake, session.Config{ID: "s", Store: store, SystemPrompt: "agent", Instructions: "project v2"})
			assert.Equal(t, session.ClientPrompt{Text: "client"}, s2.Settings().ClientPrompt)
			assert.Equal(t, "agent\n\nproject v2\n\nclient", s2.Settings().System)
			require.NoError(t, s2.Close())

			// Reopened with an overriding prompt and no instructions.
			s3 := newSession(t, fake, session.Config{ID: "s", Store: store, SystemPrompt: "agent",
				ClientPrompt: session.ClientPrompt{Text: "only me", Override: true}})
			assert.Equal(t, "only me", s3.Settings().System)
			fake.QueueTurn(providertest.Reply{Text: "ok"})
			require.NoError(t, wait(t, mustPrompt(t, s3, "again")).Err)
			reqs := fake.Requests()
			assert.Equal(t, "only me", reqs[len(reqs)-1].System)
			require.NoError(t, s3.Close())

			snap, err := store.Load(context.Background(), "s")
			require.NoError(t, err)
			assert.NotContains(t, string(snap.Config), "project v", "instructions are never stored")
			assert.Contains(t, string(snap.Config), "only me")

			_, err = session.New(context.Background(), session.Config{Provider: fake, ClientPrompt: session.ClientPrompt{Override: true, Text: " "}})
			require.ErrorIs(t, err, session.ErrInvalid, "an override with no text")
		})
	}
}
