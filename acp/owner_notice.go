package acp

import (
	"fmt"
	"time"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
)

// The owner's side of notices (notice.go): which session events the user is
// told of, where a notice goes (a notice update or agent text), and when.

// sendEarlyNotices queues, on the owner goroutine, the notices c was given
// before the session was open; later ones are queued as they come.
func (a *agentSession) sendEarlyNotices(c *ToolClient) {
	c.early.mu.Lock()
	early := c.early.notices
	c.early.notices, c.early.sent = nil, true
	c.early.mu.Unlock()
	for _, n := range early {
		a.sendNotice(n)
	}
}

// sendNotice queues n: the notice update, or its text as agent text.
func (a *agentSession) sendNotice(n schema.Notice) {
	if a.surf.takesNotices() {
		a.enqueue(&n)
		return
	}
	text := n.Title
	if n.Description != "" {
		text += ": " + n.Description
	}
	a.note("", text+"\n\n")
}

// notices turns the session events the user is told of as notices into
// notices: automatic compaction suspended and resumed, a provider's retry,
// a context overflow that a compaction recovered from, an embedder that
// fails or works again. Live only (replayed
// is false): notices are not session history.
func (a *agentSession) notices(p session.Payload, replayed bool) {
	if replayed {
		return
	}
	switch p := p.(type) {
	case *session.AutoCompactEvent:
		// The session reports the suspension (or resumption) just before
		// the end of the compaction that caused it: the notice follows that
		// end.
		n := autoCompactNotice(p)
		if len(a.open) > 0 {
			a.held = append(a.held, n)
		} else {
			a.sendNotice(n)
		}
	case *session.RetryEvent:
		title := "The model provider failed: retrying"
		if p.RateLimited {
			title = "Rate limited by the model provider: retrying"
		}
		if p.CompactID != "" {
			title += " the compaction's summary call"
		}
		a.sendNotice(schema.Notice{
			Severity:    schema.NoticeWarning,
			Title:       fmt.Sprintf("%s in %s", title, p.Wait.Round(time.Second/10)),
			Description: fmt.Sprintf("Retry %d of %d after: %s", p.Retry, p.MaxRetries, firstLine(p.Error)),
		})
	case *session.EmbedEvent:
		a.sendNotice(embedNotice(p))
	case *session.CompactionEvent:
		if p.Phase == session.PhaseFinished {
			a.sendHeld() // if its end was not reported
		}
		if p.Trigger == session.TriggerOverflow && p.Phase == session.PhaseFinished && p.Result != nil && p.Result.Compacted {
			a.sendNotice(schema.Notice{
				Severity:    schema.NoticeInfo,
				Title:       "Context overflow recovered by compaction",
				Description: "The request was longer than the model's context: " + summarized(archived(p.Result)) + " and the request is sent again.",
			})
		}
	}
}

// sendHeld queues the notices held for the end of a compaction: right
// after its terminal update (and before the response of a /compact).
func (a *agentSession) sendHeld() {
	for _, n := range a.held {
		a.sendNotice(n)
	}
	a.held = nil
}

// embedNotice tells the user that the session's embedder fails, so that
// search finds messages by their words only, or that it works again.
func embedNotice(p *session.EmbedEvent) schema.Notice {
	if p.Failed {
		return schema.Notice{
			Severity:    schema.NoticeWarning,
			Title:       "The embedding model failed: search finds messages by their words only",
			Description: "Messages are embedded again when it works; nothing else is affected. The error: " + firstLine(p.Error),
		}
	}
	return schema.Notice{Severity: schema.NoticeInfo, Title: "The embedding model works again", Description: "Messages are found by their meaning as well as their words."}
}
