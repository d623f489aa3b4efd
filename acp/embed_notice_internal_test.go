package acp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
)

// TestEmbedNotice: a failing embedder is a warning that names the error's
// first line; one that works again, an info notice. Both are valid.
func TestEmbedNotice(t *testing.T) {
	n := embedNotice(&session.EmbedEvent{Failed: true, Error: "connection refused\nmore"})
	assert.NoError(t, n.Validate())
	assert.Equal(t, schema.NoticeWarning, n.Severity)
	assert.Contains(t, n.Title, "words only")
	assert.Contains(t, n.Description, "connection refused")
	assert.NotContains(t, n.Description, "more")
	n = embedNotice(&session.EmbedEvent{})
	assert.NoError(t, n.Validate())
	assert.Equal(t, schema.NoticeInfo, n.Severity)
}
