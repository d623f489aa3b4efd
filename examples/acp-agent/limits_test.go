package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxSessionsFlag: the agent started with --max-sessions 2 opens two
// sessions on its connection and refuses the third with the error that
// names the limit; closing one frees its slot.
func TestMaxSessionsFlag(t *testing.T) {
	cmd := exec.Command(agentBinary(t), "--store", t.TempDir()+"/sessions.db", "--max-sessions", "2")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	id := 0
	// call sends one request and returns its response, skipping
	// notifications.
	call := func(method, params string) (json.RawMessage, map[string]any) {
		t.Helper()
		id++
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage(params)})
		_, err := stdin.Write(append(line, '\n'))
		require.NoError(t, err)
		for lines.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  map[string]any  `json:"error"`
			}
			require.NoError(t, json.Unmarshal(lines.Bytes(), &m), "%s", lines.Bytes())
			if m.ID != nil && *m.ID == id {
				return m.Result, m.Error
			}
		}
		t.Fatalf("the agent ended before answering %s: %v", method, lines.Err())
		return nil, nil
	}
	newSession := `{"cwd":"` + t.TempDir() + `","mcpServers":[]}`
	_, e := call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	require.Nil(t, e)
	var first struct {
		SessionID string `json:"sessionId"`
	}
	res, e := call("session/new", newSession)
	require.Nil(t, e)
	require.NoError(t, json.Unmarshal(res, &first))
	_, e = call("session/new", newSession)
	require.Nil(t, e)
	_, e = call("session/new", newSession)
	require.NotNil(t, e, "the third session is past --max-sessions 2")
	assert.EqualValues(t, -32603, e["code"])
	assert.Contains(t, e["message"], "too many sessions")
	assert.Equal(t, map[string]any{"sessionkit": map[string]any{"maxSessions": 2.0}}, e["data"])
	_, e = call("session/close", `{"sessionId":"`+first.SessionID+`"}`)
	require.Nil(t, e)
	_, e = call("session/new", newSession)
	assert.Nil(t, e, "a closed session frees its slot")
	require.NoError(t, stdin.Close())
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait())
}
