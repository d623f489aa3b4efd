package fromenv

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clearEnv(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL", "SESSIONKIT_PROVIDER"} {
		t.Setenv(k, "")
	}
}

// TestProvider: the order (Anthropic, OpenAI, offline), and malformed
// variables reported by name.
func TestProvider(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"nothing", nil, Offline, ""},
		{"openai base URL", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "openai:gpt-4o-mini", ""},
		{"anthropic wins", map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic:claude-sonnet-5-5", ""},
		{"bad openai URL", map[string]string{"OPENAI_BASE_URL": "not a url"}, "", "OPENAI_BASE_URL"},
		{"bad anthropic URL", map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "nope"}, "", "ANTHROPIC_BASE_URL"},
		// A model variable that is set but not enough is an error, never
		// the offline provider.
		{"model alone", map[string]string{"SESSIONKIT_MODEL": "gpt-5"}, "", "SESSIONKIT_MODEL is set"},
		{"anthropic base URL without key", map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}, "", "ANTHROPIC_API_KEY is not"},
		{"blank openai key", map[string]string{"OPENAI_API_KEY": "   "}, "", "OPENAI_API_KEY is blank"},
		{"blank anthropic key", map[string]string{"ANTHROPIC_API_KEY": "\t ", "OPENAI_API_KEY": "k"}, "", "ANTHROPIC_API_KEY is blank"},
		{"named openai without its variables", map[string]string{"SESSIONKIT_PROVIDER": "openai"}, "", "SESSIONKIT_PROVIDER is openai but neither OPENAI_API_KEY"},
		{"named anthropic without key", map[string]string{"SESSIONKIT_PROVIDER": "anthropic", "OPENAI_API_KEY": "k"}, "", "SESSIONKIT_PROVIDER is anthropic but ANTHROPIC_API_KEY is not"},
		{"unknown name", map[string]string{"SESSIONKIT_PROVIDER": "gemini"}, "", `SESSIONKIT_PROVIDER "gemini" is not a provider`},
		{"named offline", map[string]string{"SESSIONKIT_PROVIDER": "offline", "OPENAI_API_KEY": "k"}, Offline, ""},
		{"named openai over anthropic", map[string]string{"SESSIONKIT_PROVIDER": "openai", "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "openai:gpt-4o-mini", ""},
		{"model for openai", map[string]string{"SESSIONKIT_MODEL": "gpt-5", "OPENAI_API_KEY": "k"}, "openai:gpt-5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p, name, err := Provider(nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, p)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, p)
			assert.Equal(t, tt.want, name)
		})
	}
}

// TestSelect: a flag's name wins over SESSIONKIT_PROVIDER and is named in
// errors; the offline provider chosen because nothing is set says so in
// one line, and one named is silent; timeouts reach the provider.
func TestSelect(t *testing.T) {
	clearEnv(t)
	var notice bytes.Buffer
	_, name, err := Select(Selection{Notice: &notice})
	require.NoError(t, err)
	assert.Equal(t, Offline, name)
	assert.Equal(t, 1, strings.Count(notice.String(), "\n"), notice.String())
	assert.Contains(t, notice.String(), "no provider variable is set")
	assert.Contains(t, notice.String(), "offline provider")

	notice.Reset()
	_, name, err = Select(Selection{Name: "offline", From: "--provider", Notice: &notice})
	require.NoError(t, err)
	assert.Equal(t, Offline, name)
	assert.Empty(t, notice.String(), "asked for: no notice")

	t.Setenv("SESSIONKIT_PROVIDER", "offline")
	_, _, err = Select(Selection{Name: "openai", From: "--provider"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--provider is openai")

	_, _, err = Select(Selection{Name: "bogus", From: "--provider"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--provider "bogus"`)

	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1")
	p, name, err := Select(Selection{Name: "openai", RequestTimeout: time.Minute, IdleTimeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-4o-mini", name)
	assert.NotNil(t, p)
}

// TestSelect_ThinkingBudget: the budget reaches the anthropic provider,
// whose check refuses one it cannot take; the other providers ignore it.
func TestSelect_ThinkingBudget(t *testing.T) {
	clearEnv(t)
	t.Setenv("ANTHROPIC_API_KEY", "k")
	_, name, err := Select(Selection{ThinkingBudget: 2048})
	require.NoError(t, err)
	assert.Equal(t, "anthropic:claude-sonnet-5-5", name)
	_, _, err = Select(Selection{ThinkingBudget: 10})
	assert.ErrorContains(t, err, "thinking budget 10 is below")
	clearEnv(t)
	_, name, err = Select(Selection{Name: Offline, ThinkingBudget: 10})
	require.NoError(t, err)
	assert.Equal(t, Offline, name)
}
