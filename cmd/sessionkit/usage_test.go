package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShowUsage: show prints the session's usage ledger added up, in all,
// by purpose, per turn and per compaction (its summary call), and --json
// carries the same figures; the inspector's session page has the same
// table.
func TestShowUsage(t *testing.T) {
	path, ids := writeSessions(t)
	st := openForTest(t, path)
	recs, err := st.Usage(t.Context(), ids[0])
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	var in, out, summaries int
	turns, compactions := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		in += r.InputTokens
		out += r.OutputTokens
		if r.CompactID != "" {
			compactions[r.CompactID] = true
			summaries++
		} else {
			turns[r.TurnID] = true
		}
	}
	require.NotZero(t, summaries, "the conversation compacted")

	res := sk(t, "--store", path, "show", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "usage (every provider response, compactions included)")
	assert.Regexp(t, fmt.Sprintf(`total +%d +%d +\d+ +\d+ +%d +-`, len(recs), in, out), res.stdout)
	assert.Regexp(t, fmt.Sprintf(`summary +%d `, summaries), res.stdout)
	for c := range compactions {
		assert.Contains(t, res.stdout, "compaction "+c)
	}
	for tid := range turns {
		assert.Contains(t, res.stdout, "turn "+tid)
	}

	res = sk(t, "--store", path, "show", ids[0], "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var got showJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.NotNil(t, got.Usage)
	assert.Equal(t, len(recs), got.Usage.Total.Requests)
	assert.Equal(t, in, got.Usage.Total.InputTokens)
	assert.Equal(t, out, got.Usage.Total.OutputTokens)
	assert.Nil(t, got.Usage.Total.Cost, "nothing was priced")
	assert.Equal(t, summaries, got.Usage.ByPurpose["summary"].Requests)
	assert.Len(t, got.Usage.Compactions, len(compactions))
	assert.Len(t, got.Usage.Turns, len(turns))

	srv, _ := serveStore(t, path)
	status, body := get(t, srv.URL+"/s/"+ids[0])
	require.Equal(t, 200, status, body)
	i := strings.Index(body, `id="usage"`)
	require.Positive(t, i, "the usage table")
	assert.Contains(t, body[i:], fmt.Sprintf("<th>total</th><td>%d</td><td>%d</td>", len(recs), in))
	for c := range compactions {
		assert.Contains(t, body[i:], "compaction "+c)
	}
}
