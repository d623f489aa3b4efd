package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/mcp"
)

// hugeResult is the size of the result the huge tool streams.
const hugeResult = 300 << 20

// hugeServer is an MCP server over HTTP, written by hand so that its
// one big answer is generated as it is sent, never held: its list of
// tools is 300 KiB, tools/call of "huge" answers a text of hugeResult bytes (as one JSON body, or as one
// event of an SSE stream when sse), "small" answers "ok". It returns the
// server's URL.
func hugeServer(t *testing.T, sse bool) string {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no stream here", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"huge","version":"1"}}`, req.Params.ProtocolVersion)
		case "tools/list":
			// A list larger than a tool call's bound: its description
			// is cut when it is offered, but the list is read whole.
			result = `{"tools":[{"name":"huge","inputSchema":{"type":"object"}},{"name":"small","inputSchema":{"type":"object"}},` +
				`{"name":"wide","description":"` + strings.Repeat("w", 300<<10) + `","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			if req.Params.Name == "small" {
				result = `{"content":[{"type":"text","text":"ok"}]}`
			}
		default:
			http.Error(w, "unknown method", http.StatusBadRequest)
			return
		}
		head, tail := `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`, "}"
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head, tail = "event: message\ndata: "+head, tail+"\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		if result == "" { // the huge one, generated as it goes
			if _, err := io.WriteString(w, `{"content":[{"type":"text","text":"`); err != nil {
				return
			}
			chunk := []byte(strings.Repeat("a", 64<<10))
			for sent := 0; sent < hugeResult; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return // the client stopped reading
				}
			}
			result = `"}]}`
		}
		_, _ = io.WriteString(w, result+tail)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A 300 MB result of an HTTP server, as a JSON body or as an SSE event,
// is read no further than the output bound and a margin: the call fails
// saying so, the agent's memory does not grow by the result, and the
// server's next call works.
func TestHTTPResponseIsBoundedWhileRead(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[sse], func(t *testing.T) {
			set := connect(t, options(t), mcp.Server{Name: "big", URL: hugeServer(t, sse)})
			require.Empty(t, set.Failed(), "a list of tools larger than a call's bound is read")
			tool(t, set, "mcp__big__wide")
			huge := tool(t, set, "mcp__big__huge")
			var err error
			grew := allocated(func() { _, err = run(t, huge, `{}`) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("is larger than %d bytes, the bound of what is read of it", mcp.DefaultMaxOutput+64<<10))
			assert.Less(t, grew, uint64(64<<20), "bytes allocated by a call of a %d-byte result", hugeResult)
			t.Logf("allocated %d KiB for the call; %v", grew>>10, err)

			out, err := run(t, tool(t, set, "mcp__big__small"), `{}`)
			require.NoError(t, err, "the server's session goes on")
			assert.Equal(t, "ok", out)
		})
	}
}

// allocated is the number of bytes the process allocates while run runs.
func allocated(run func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
