package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
)

// TestPricesFlag: --prices reads a JSON price table; a file that is
// missing or malformed, or an entry with a negative price, is a startup
// error naming the flag, the file and the entry; the models offered that
// the table has no price for are named at startup.
func TestPricesFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	good := write("good.json", `{"gpt-4o": {"input": 2.5, "output": 10, "cache_read": 1.25}}`)
	c, err := parseFlags([]string{"--prices", good})
	require.NoError(t, err)
	require.True(t, c.prices.Has("gpt-4o"))
	var notice strings.Builder
	unpriced(c, []acp.Model{{ID: "gpt-4o"}, {ID: "o3"}, {ID: "gpt-4o-2024-08-06"}}, &notice)
	assert.Equal(t, "--prices "+good+" has no price for o3: its responses are counted but not priced.\n", notice.String())
	assert.NotNil(t, pricing(c.prices))

	c, err = parseFlags(nil)
	require.NoError(t, err)
	assert.Nil(t, pricing(c.prices), "no table: no Pricing")

	for name, tc := range map[string]struct{ body, want string }{
		"malformed": {`{"gpt-4o": {"input": 2.5,`, "bad.json"},
		"negative":  {`{"gpt-4o": {"input": 2.5, "output": -10}}`, `model "gpt-4o": output price -10`},
		"unknown":   {`{"gpt-4o": {"input": 2.5, "output": 10, "cached": 1}}`, `model "gpt-4o": json: unknown field "cached"`},
	} {
		t.Run(name, func(t *testing.T) {
			p := write("bad.json", tc.body)
			_, err := parseFlags([]string{"--prices", p})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--prices "+p)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = parseFlags([]string{"--prices", filepath.Join(dir, "none.json")})
	assert.ErrorContains(t, err, "none.json")
	assert.ErrorContains(t, err, "--prices")
}
