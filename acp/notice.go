package acp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
)

var _ schema.SessionUpdate = (*schema.Notice)(nil)

// Notice tells the user of the session something that is not part of its
// history, e.g. that an MCP server of the session failed to start or died:
// a notice update where the client takes notices (v2; v1 with
// clientCapabilities.session.notices), agent text otherwise. It is queued
// after every update the session queued before it and returns once queued.
// A notice given while the session is being opened (from
// [ServerOptions.SessionTools], say) is sent right after the response that
// opens it. Errors: an invalid notice (no severity or no title),
// [ErrNoClient] when the session is closed, or ctx's error.
func (c *ToolClient) Notice(ctx context.Context, n schema.Notice) error {
	if err := n.Validate(); err != nil {
		return err
	}
	c.early.mu.Lock()
	if !c.early.sent {
		c.early.notices = append(c.early.notices, n)
		c.early.mu.Unlock()
		return nil
	}
	c.early.mu.Unlock()
	a := c.a.Load()
	if a == nil {
		return ErrNoClient
	}
	if !a.notice(ctx, n) {
		return closedErr(ctx)
	}
	return nil
}

// dropEarly drops the notices given while a session that did not open was
// being opened: there is no session to send them in, and a Notice after
// this reports ErrNoClient.
func (c *ToolClient) dropEarly() {
	c.early.mu.Lock()
	c.early.notices, c.early.sent = nil, true
	c.early.mu.Unlock()
}

// earlyNotices holds the notices given before the session was open; the
// owner takes them once, right after the response that opens the session
// (the lock only hands them over: the owner decides where they go).
type earlyNotices struct {
	mu      sync.Mutex
	sent    bool
	notices []schema.Notice
}

// summarized says that n earlier messages were summarized.
func summarized(n int) string {
	if n == 1 {
		return "1 earlier message was summarized"
	}
	return fmt.Sprintf("%d earlier messages were summarized", n)
}

// autoCompactNotice tells the user that automatic compaction was
// suspended, resumed or held (an automatic compaction did not get the
// context under the threshold).
func autoCompactNotice(p *session.AutoCompactEvent) schema.Notice {
	if p.Held {
		what := "left the context at"
		if p.Grew {
			what = fmt.Sprintf("grew the context from %d to", p.ContextBefore)
		}
		return schema.Notice{
			Severity: schema.NoticeWarning,
			Title:    "Automatic compaction held: it cannot get the context under the threshold",
			Description: fmt.Sprintf("The last automatic compaction %s %d tokens, at or above the threshold of %d. Compacting again would not help, so the conversation is not compacted automatically until the context reaches %d tokens. "+
				"To change this: raise the threshold (or the context window), shorten the system prompt or the tools, or run /compact with instructions for a shorter summary.",
				what, p.ContextAfter, p.Threshold, p.ResumeAt),
		}
	}
	if p.Suspended {
		return schema.Notice{
			Severity:    schema.NoticeWarning,
			Title:       "Automatic compaction suspended",
			Description: fmt.Sprintf("%d automatic compactions in a row failed (the last: %s). The conversation is not compacted automatically until a compaction succeeds; /compact tries again.", p.Failures, firstLine(p.Error)),
		}
	}
	return schema.Notice{Severity: schema.NoticeInfo, Title: "Automatic compaction resumed", Description: "A compaction succeeded: the conversation is compacted automatically again when it grows."}
}

// firstLine is the first line of s, at most 300 runes, its other control
// characters (a carriage return, an escape) made spaces: error text from a
// provider or a summarizer stands in a notice, or in the chat as agent text.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
