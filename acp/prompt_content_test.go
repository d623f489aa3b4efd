package acp_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// readTools is a SessionTools that names read_file as the tool that reads
// a file (it has no tools: the model is a fake).
func readTools(acp.ToolSession) (acp.Toolset, error) { return acp.Toolset{ReadFile: "read_file"}, nil }

// TestServe_PromptContent: a prompt's links, embedded resources and
// images reach the provider as attachments where they stand (a link to a
// file inside the session's directories with the offer to read it), are
// stored, and session/load replays them as the blocks that were sent;
// images are advertised and taken only when the provider takes them.
func TestServe_PromptContent(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	fake.SetImageTypes("image/png")
	c := serve(t, fake, store, acp.ServerOptions{SessionTools: readTools})
	var init map[string]any
	c.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init)
	assert.Equal(t, map[string]any{"image": true, "audio": false, "embeddedContext": true}, init["agentCapabilities"].(map[string]any)["promptCapabilities"])
	sid := c.newSession()

	img := []byte("\x89PNG\r\n\x1a\n")
	prompt := []any{
		map[string]any{"type": "text", "text": "compare "},
		map[string]any{"type": "resource_link", "name": "main.go", "uri": "file:///project/src/main.go", "mimeType": "text/x-go", "description": "the entry"},
		map[string]any{"type": "text", "text": " with "},
		map[string]any{"type": "resource_link", "name": "other", "uri": "file:///elsewhere/x.go"},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///project/notes.md", "mimeType": "text/markdown", "text": "# Notes"}},
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(img)},
		map[string]any{"type": "text", "text": "please"},
		map[string]any{"type": "text", "text": "thanks"},
	}
	fake.QueueTurn(providertest.Reply{Text: "done"})
	var resp struct{ StopReason string }
	c.mustCall("session/prompt", map[string]any{"sessionId": sid, "prompt": prompt}, &resp)
	assert.Equal(t, "end_turn", resp.StopReason)

	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	got := reqs[0].Messages[0]
	assert.Equal(t, "compare  with please\nthanks", got.Text)
	assert.Equal(t, []history.Attachment{
		{Kind: history.AttachLink, At: 8, Name: "main.go", URI: "file:///project/src/main.go", MIMEType: "text/x-go", Text: "the entry",
			Note: `The user attached this file of the workspace without its contents: read it with the read_file tool (path "/project/src/main.go") when you need them.`},
		{Kind: history.AttachLink, At: 14, Name: "other", URI: "file:///elsewhere/x.go"},
		{Kind: history.AttachResource, At: 14, URI: "file:///project/notes.md", MIMEType: "text/markdown", Text: "# Notes"},
		{Kind: history.AttachImage, At: 14, MIMEType: "image/png", Data: img},
	}, got.Attachments, "a link outside the session's directories gets no offer")
	require.NoError(t, c.conn.Close())

	// session/load in a new connection gives the blocks back as sent (the
	// two last text blocks are one, joined by a newline).
	c2 := serve(t, providertest.New(), store, acp.ServerOptions{})
	c2.initialize(`{}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	var user []any
	for _, u := range updates(t, c2.take()) {
		if u["sessionUpdate"] == "user_message_chunk" {
			user = append(user, u["content"])
		}
	}
	want := append(append([]any{}, prompt[:6]...), map[string]any{"type": "text", "text": "please\nthanks"})
	assert.Equal(t, want, user)
}

// TestServe_PromptContentRefused: images for a provider that takes none
// (not advertised), image data that is not base64, images above the bound
// and blob resources are refused with invalid params that say why, and
// nothing reaches the provider or the store.
func TestServe_PromptContentRefused(t *testing.T) {
	store := memstore.New()
	fake := providertest.New() // takes no images
	c := serve(t, fake, store, acp.ServerOptions{})
	var init map[string]any
	c.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init)
	assert.Equal(t, false, init["agentCapabilities"].(map[string]any)["promptCapabilities"].(map[string]any)["image"])
	sid := c.newSession()
	png := map[string]any{"type": "image", "mimeType": "image/png", "data": "AAAA"}
	err := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{png}}, nil)
	requireInvalid(t, err, "its model takes no images")

	fake.SetImageTypes("image/png")
	c2 := serve(t, fake, store, acp.ServerOptions{})
	c2.initialize(`{}`)
	sid2 := c2.newSession()
	big := base64.StdEncoding.EncodeToString(make([]byte, history.MaxAttachmentData+1))
	for why, block := range map[string]map[string]any{
		"not base64":          {"type": "image", "mimeType": "image/png", "data": "not base64!"},
		"of type \"image/x\"": {"type": "image", "mimeType": "image/x", "data": "AAAA"},
		"more than the":       {"type": "image", "mimeType": "image/png", "data": big},
		"blob contents":       {"type": "resource", "resource": map[string]any{"uri": "file:///a", "blob": "AAAA"}},
	} {
		// A minute: the image above the bound is a 7 MB line, slow to
		// encode and decode under the race detector.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := c2.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": sid2, "prompt": []any{map[string]any{"type": "text", "text": "hi"}, block}}, nil)
		cancel()
		requireInvalid(t, err, why)
	}
	assert.Empty(t, fake.Requests())
	snap, err := store.Load(t.Context(), sid2)
	require.NoError(t, err)
	assert.Empty(t, snap.Active)
}

func requireInvalid(t *testing.T, err error, contains string) {
	t.Helper()
	var rpc *jsonrpc.Error
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, jsonrpc.InvalidParams, rpc.Code, rpc.Message)
	assert.True(t, strings.Contains(rpc.Message, contains), "%q does not say %q", rpc.Message, contains)
}
