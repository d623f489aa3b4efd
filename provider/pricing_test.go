package provider_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
)

// TestPriceTable_Price: input that is neither read from nor written to the
// cache at the input price, the cache figures at theirs, output at its
// own, per million tokens; a dated model name finds its base entry; an
// unknown model has no price.
func TestPriceTable_Price(t *testing.T) {
	tab := provider.PriceTable{
		"gpt-4o":       {Input: 2.5, Output: 10, CacheRead: 1.25, CacheWrite: 3},
		"gpt-4o-mini":  {Input: 0.15, Output: 0.6, CacheRead: 0.075, CacheWrite: 0.15, Currency: "EUR"},
		"claude-haiku": {Input: 1, Output: 5},
	}
	u := provider.Usage{InputTokens: 1_000_000, OutputTokens: 200_000, CacheReadTokens: 400_000, CacheWriteTokens: 100_000}
	c, ok := tab.Price("gpt-4o", u)
	require.True(t, ok)
	assert.InDelta(t, 0.5*2.5+0.2*10+0.4*1.25+0.1*3, c.Amount, 1e-12)
	assert.Equal(t, "USD", c.Currency)
	c, ok = tab.Price("gpt-4o-2024-08-06", u)
	require.True(t, ok, "a dated name")
	assert.InDelta(t, 0.5*2.5+0.2*10+0.4*1.25+0.1*3, c.Amount, 1e-12)
	c, ok = tab.Price("gpt-4o-mini-2024-07-18", u)
	require.True(t, ok)
	assert.Equal(t, "EUR", c.Currency, "the longest name that begins it")
	_, ok = tab.Price("gpt-4", u)
	assert.False(t, ok)
	_, ok = tab.Price("gpt-4ox", u)
	assert.False(t, ok)
	assert.False(t, tab.Has("o3"))
	// Cache figures above the input do not make the price negative.
	c, _ = tab.Price("claude-haiku", provider.Usage{InputTokens: 10, CacheReadTokens: 20})
	assert.GreaterOrEqual(t, c.Amount, 0.0)
}

// TestParsePriceTable: the file format, and every malformed entry refused
// with an error that names the model and the member.
func TestParsePriceTable(t *testing.T) {
	tab, err := provider.ParsePriceTable([]byte(`{"m": {"input": 3, "output": 15, "cache_read": 0.3}, "n": {"input": 1, "output": 2, "currency": "EUR"}}`))
	require.NoError(t, err)
	assert.Equal(t, provider.ModelPrice{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3}, tab["m"], "cache_write left out: the input price")
	assert.Equal(t, "EUR", tab["n"].Currency)

	bad := map[string]struct{ json, want string }{
		"not JSON":       {`{"m": `, "price table"},
		"not an object":  {`[1]`, "price table"},
		"null":           {`null`, "not a JSON object"},
		"no input":       {`{"m": {"output": 1}}`, `model "m" has no "input"`},
		"no output":      {`{"m": {"input": 1}}`, `model "m" has no "output"`},
		"negative":       {`{"m": {"input": 1, "output": -2}}`, `model "m": output price -2`},
		"negative cache": {`{"m": {"input": 1, "output": 2, "cache_read": -1}}`, `model "m": cache_read price`},
		"absurd":         {`{"m": {"input": 1e9, "output": 2}}`, `model "m": input price`},
		"unknown member": {`{"m": {"input": 1, "output": 2, "inptu": 3}}`, `model "m": json: unknown field "inptu"`},
		"wrong type":     {`{"m": {"input": "cheap", "output": 2}}`, `model "m"`},
		"empty name":     {`{"": {"input": 1, "output": 2}}`, `empty model name`},
		"entry not obj":  {`{"m": 3}`, `model "m"`},
		"entry null":     {`{"m": null}`, `model "m" has no "input"`},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := provider.ParsePriceTable([]byte(tc.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Error(t, provider.PriceTable{"m": {Input: math.NaN()}}.Validate())
	assert.Error(t, provider.PriceTable{"m": {Output: math.Inf(1)}}.Validate())
}

// TestCost_Add: unknown costs add nothing; currencies do not mix.
func TestCost_Add(t *testing.T) {
	usd := provider.Cost{Amount: 1.5, Currency: "USD"}
	assert.Equal(t, usd, provider.Cost{}.Add(usd))
	assert.Equal(t, usd, usd.Add(provider.Cost{}))
	assert.Equal(t, provider.Cost{Amount: 3, Currency: "USD"}, usd.Add(usd))
	mixed := usd.Add(provider.Cost{Amount: 1, Currency: "EUR"})
	assert.Equal(t, provider.Cost{Currency: provider.MixedCurrency}, mixed)
	assert.Equal(t, mixed, mixed.Add(usd), "mixed stays mixed")
}
