package main

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// slowProvider answers when release is closed.
type slowProvider struct{ release chan struct{} }

func (p slowProvider) Complete(ctx context.Context, _ *provider.Request, _ func(string)) (*provider.Response, error) {
	select {
	case <-p.release:
		return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: "late"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLogWaits: a call that waits on the model is logged once every
// interval (fake time: synctest) until it returns, and the logging ends
// with it; the answer is the provider's.
func TestLogWaits(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		sp := slowProvider{release: make(chan struct{})}
		p := logWaits(sp, zap.New(core), 30*time.Second)
		done := make(chan *provider.Response)
		go func() {
			resp, err := p.Complete(t.Context(), &provider.Request{Purpose: provider.PurposeTurn}, nil)
			assert.NoError(t, err)
			done <- resp
		}()
		time.Sleep(95 * time.Second)
		synctest.Wait()
		waits := logs.FilterMessage("still waiting for the model").All()
		require.Len(t, waits, 3, "at 30 s, 60 s and 90 s")
		assert.Equal(t, "turn", waits[0].ContextMap()["purpose"])
		assert.Equal(t, 90*time.Second, waits[2].ContextMap()["waited"])
		close(sp.release)
		resp := <-done
		assert.Equal(t, "late", resp.Message.Text)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 3, logs.FilterMessage("still waiting for the model").Len(), "no line after the answer")
	})
	assert.Equal(t, provider.Provider(slowProvider{}), logWaits(slowProvider{}, zap.NewNop(), 0), "no interval: the provider itself")
}

func TestDefaultStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	assert.Equal(t, filepath.Join("/data", "sessionkit", "sessions.db"), defaultStore())
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	assert.Equal(t, filepath.Join("/home/u", ".local", "share", "sessionkit", "sessions.db"), defaultStore())
}

func TestIsPostgresURL(t *testing.T) {
	for spec, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://h/db": true, "PostgreSQL://h/db": true,
		"sessions.db": false, "/var/lib/postgres/s.db": false, "postgres.db": false,
	} {
		assert.Equal(t, want, isPostgresURL(spec), spec)
	}
}
