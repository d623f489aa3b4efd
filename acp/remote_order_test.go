package acp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/session"
)

// TestRemote_UpdateBeforeResponseIsApplied: an agent announces /compact in
// an available_commands_update written right after the session/new
// response (as the official TypeScript SDK's agents do, from a timer that
// may also fire before the response is written), so that on the wire it
// comes before the next prompt's response, or even before the session/new
// response that names the session: once that prompt's Handle has
// finished, Compact knows the command. Many sessions run at once (issue 42
// item 9: 3 of 12 runs failed with six at once).
func TestRemote_UpdateBeforeResponseIsApplied(t *testing.T) {
	t.Run("after the session/new response", func(t *testing.T) { testUpdateBeforeResponse(t, false) })
	t.Run("before the session/new response", func(t *testing.T) { testUpdateBeforeResponse(t, true) })
}

func testUpdateBeforeResponse(t *testing.T, early bool) {
	for i := range 32 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
			rs := ra.newSessionUpdated(c, `[{"name":"compact","description":"compact"}]`, early)
			h, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
			require.NoError(t, err)
			req := ra.read()
			require.Equal(t, "session/prompt", req["method"])
			ra.respond(req, `{"stopReason":"end_turn"}`)
			res := wait(t, h)
			require.NoError(t, res.Err)
			ch, err := rs.Compact(context.Background(), session.CompactRequest{})
			require.NoError(t, err, "the /compact of the update before the prompt's response is known")
			req = ra.read()
			assert.Equal(t, "session/prompt", req["method"])
			ra.respond(req, `{"stopReason":"end_turn"}`)
			wait(t, ch)
		})
	}
}
