package acp

import (
	"context"
	"encoding/json"
	"github.com/sessionkit/sessionkit/acp/schema"
)

// cancelRequest is queued after a request to the client whose answer the
// caller stopped waiting for (its ctx ended: the turn or the tool call was
// cancelled): the writer abandons the request and, if it was still
// waiting, sends $/cancel_request for it (ACP v2: the agent SHOULD cancel a
// permission request it no longer waits for; the client answers it
// cancelled, and that late answer is dropped).
type cancelRequest struct{ of *outItem }

// writeCancel writes the $/cancel_request of it.cancel, on the writer
// goroutine: after the request itself, whose ID the writer noted when it
// wrote it.
func (a *agentSession) writeCancel(ctx context.Context, c *cancelRequest) error {
	if c.of.id == nil || !a.srv.conn.Abandon(c.of.id) {
		return nil // never written, or answered already
	}
	return a.srv.conn.Notify(ctx, schema.MethodCancelRequest, map[string]json.RawMessage{"requestId": c.of.id})
}
