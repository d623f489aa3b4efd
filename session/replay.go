package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// ReplayOptions say where [Session.Replay] starts.
type ReplayOptions struct {
	// From is the first timeline position to replay (see
	// MessageEvent.Position); 0 replays the whole timeline.
	From int64
	// Buffer is the live subscription's buffer, as SubscribeOptions.Buffer.
	Buffer int
}

// Replay is a session's stored timeline from a position on, and a
// subscription to everything published after it. Together they miss nothing
// and repeat nothing: the stored part ends exactly where the live part
// begins.
type Replay struct {
	// Events are the replayed timeline, oldest first: one *MessageEvent per
	// stored message, one *CompactionEvent in PhaseFinished per finished
	// compaction (its Result rebuilt from the store's record: the Segment
	// carries the summary, not the archived messages), one
	// *UncompactEvent per undone compaction and one *SettingsEvent per
	// recorded settings change (Configure), each with its Position, and the
	// *SettingsEvent of the title an untitled session took from its first
	// message right after that message (see [SettingsEvent]); then, for a
	// compaction running at the cut, its PhaseStarted
	// event and one PhaseDelta holding the summary streamed so far; then, for
	// an assistant message being streamed at the cut, one *DeltaEvent holding
	// its text so far (of both, at most the first MiB: the committed message
	// and the completed compaction's summary hold the whole text). They are read from the store, not from the live
	// timeline, so their Seq is 0 and their TurnID is "".
	Events []Event
	// Next is the position the next stored entry will take: pass it as
	// ReplayOptions.From to continue after Events.
	Next int64
	// Pending are the IDs of the commands accepted and not yet finished at
	// the cut (queued, the running turn, the running compaction). A command
	// that finished before the cut is not pending, and its end is not in
	// Sub.
	Pending []string
	// Sub delivers the live events published after the cut, with the
	// behaviour of [Session.Subscribe].
	Sub *Subscription
}

// Replay returns the session's stored timeline from opts.From on and a live
// subscription that continues exactly after it (docs/design.md §7.6, §7.9). The
// cut is made by the session's loop, the store is read in the caller's
// goroutine, so a long timeline never holds the session up; what happens in
// the meantime waits in the subscription's buffer.
//
// ctx governs the call and, like Subscribe's, ends the subscription when it
// ends. Errors: ErrInvalid for a negative From or Buffer, ErrClosed, ctx's
// error, or the store's.
func (s *Session) Replay(ctx context.Context, opts ReplayOptions) (*Replay, error) {
	if opts.From < 0 {
		return nil, invalid("negative replay position %d", opts.From)
	}
	var (
		rep      = &Replay{}
		subErr   error
		running  *CompactionEvent
		summary  string
		draftID  string
		draftTxt string
		cur      settings // the settings at the cut
		title    string
		cwd      string
	)
	err := s.read(ctx, func(l *loop) {
		rep.Sub, subErr = subscribe(ctx, l.feed, SubscribeOptions{Buffer: opts.Buffer}, s.unsubscribe)
		if subErr != nil {
			return
		}
		rep.Next = l.nextPos
		rep.Pending = l.q.IDs()
		if l.turn != nil {
			rep.Pending = append(rep.Pending, l.turn.cmd.id)
		}
		if c := l.running; c != nil {
			rep.Pending = append(rep.Pending, c.id)
			if c.pos != NoPosition { // its start is reported (the record is stored)
				running = l.compactionEvent(c, PhaseStarted)
				running.TurnID = ""
				summary = l.runSummary.String()
			}
		}
		if l.turn != nil && l.draft.id != "" {
			draftID, draftTxt = l.draft.id, l.draft.text.String()
		}
		cur, title, cwd = l.set, l.title, l.cwd
	})
	if err == nil {
		err = subErr
	}
	if err != nil {
		return nil, err
	}
	tl, err := s.store.Timeline(ctx, s.id)
	if err == nil {
		tl = tl[:sort.Search(len(tl), func(i int) bool { return tl[i].Position >= rep.Next })]
	}
	var titling *SettingsEvent
	if err == nil {
		titling, err = titledBy(tl, cur, title, cwd)
	}
	if err != nil {
		rep.Sub.Close()
		return nil, err
	}
	first := true // the next message is the session's first
	for _, e := range tl {
		isFirst := first && e.Message != nil
		if e.Message != nil {
			first = false
		}
		if e.Position < opts.From {
			continue
		}
		switch {
		case e.Message != nil:
			rep.Events = append(rep.Events, Event{Time: e.Message.CreatedAt, Payload: &MessageEvent{Message: *e.Message, Position: e.Position}})
			if isFirst && titling != nil {
				rep.Events = append(rep.Events, Event{Time: e.Message.CreatedAt, Payload: titling})
			}
		case e.Config != nil:
			ev, err := replayedSettings(e.Config, cwd)
			if err != nil {
				rep.Sub.Close()
				return nil, err
			}
			rep.Events = append(rep.Events, Event{Time: e.Config.At, Payload: ev})
		case e.Uncompaction != nil:
			u := e.Uncompaction
			rep.Events = append(rep.Events, Event{Time: u.At, Payload: &UncompactEvent{
				ID: u.ID, SegmentID: u.SegmentID, CompactID: u.CompactID, Restored: u.Restored, Position: e.Position,
			}})
		case running != nil && e.Compaction.CompactID == running.CompactID:
			// Reported below from the loop's state, not from the record.
		default:
			ev := replayedCompaction(e.Compaction)
			rep.Events = append(rep.Events, Event{Time: e.Compaction.FinishedAt, Payload: ev})
		}
	}
	if running != nil && running.Position >= opts.From {
		now := time.Now()
		rep.Events = append(rep.Events, Event{Time: now, Payload: running})
		if summary != "" {
			rep.Events = append(rep.Events, Event{Time: now, Payload: &CompactionEvent{
				CompactID: running.CompactID, Trigger: running.Trigger, Phase: PhaseDelta, Delta: summary, Position: running.Position,
			}})
		}
	}
	if draftTxt != "" {
		rep.Events = append(rep.Events, Event{Time: time.Now(), Payload: &DeltaEvent{MessageID: draftID, Text: draftTxt}})
	}
	return rep, nil
}

// maxDraft bounds the text a session keeps of a message or summary being
// streamed, for a Replay: the start of it, which the committed message or
// the completed compaction then completes.
const maxDraft = 1 << 20

// keepDraft appends text to b while b holds less than maxDraft bytes.
func keepDraft(b *strings.Builder, text string) {
	if b.Len() < maxDraft {
		b.WriteString(text[:min(len(text), maxDraft-b.Len())])
	}
}

// replayedCompaction rebuilds the finished event of a stored compaction
// record. A record still in progress that is not the running compaction
// (its end could not be stored) is reported as failed, as the next open
// will record it (docs/design.md §5.5).
func replayedCompaction(c *history.CompactionRecord) *CompactionEvent {
	res := &CompactResult{CompactID: c.CompactID, Trigger: c.Trigger, Error: c.Error}
	switch c.Status {
	case history.StatusCompleted:
		res.Success, res.Compacted, res.Reason = true, true, ReasonCompacted
		// The record holds the summary but not the rest of the commit
		// (Segment ID, usage, provider): they are zero.
		res.Segment = history.CommittedSegment(&history.Commit{CompactID: c.CompactID, Summary: c.Summary}, c)
	case history.StatusNothingToCompact:
		res.Success, res.Reason = true, ReasonNothingToCompact
	case history.StatusCancelled:
		res.Reason, res.Cancelled = ReasonCompactFailed, true
	case history.StatusFailed:
		res.Reason = ReasonCompactFailed
	default:
		res.Reason = ReasonCompactFailed
		if res.Error == "" {
			res.Error = history.InterruptedError
		}
	}
	return &CompactionEvent{CompactID: c.CompactID, Trigger: c.Trigger, Phase: PhaseFinished, Result: res, Position: c.Position}
}

// titleEvent is the SettingsEvent of the title a session took from its
// first message, set being the settings from then on.
func titleEvent(set Settings, turnID string) *SettingsEvent {
	return &SettingsEvent{Settings: set, Changed: []string{"Title"}, TurnID: turnID, Position: NoPosition}
}

// replayedSettings rebuilds the SettingsEvent of a stored settings record;
// cwd is the session's (it never changes).
func replayedSettings(rec *history.ConfigRecord, cwd string) (*SettingsEvent, error) {
	var r settingsRecord
	if err := json.Unmarshal(rec.Data, &r); err != nil {
		return nil, fmt.Errorf("session: the settings record at position %d: %w", rec.Position, err)
	}
	return &SettingsEvent{Settings: r.After.public(r.Title, cwd), Changed: r.Changed, Position: rec.Position}, nil
}

// titledBy returns the SettingsEvent of the title the session took from
// its first message, to replay right after that message, or nil when it
// has none: the session has no title, was titled at creation (a settings
// record before the first message names a title), or its title is not the
// default one of its first message. A session titled at creation exactly
// as its first message would have titled it, and changed no setting before
// that message, is reported as titled by it. The settings the event
// carries are the ones then: those after the last record before the
// message, else those before the first record after it, else cur (the
// settings at the cut; no Configure changed a value since).
func titledBy(tl []history.Entry, cur settings, title, cwd string) (*SettingsEvent, error) {
	if title == "" {
		return nil, nil
	}
	at := slices.IndexFunc(tl, func(e history.Entry) bool { return e.Message != nil })
	if at < 0 || history.DefaultTitle(tl[at].Message.Text) != title {
		return nil, nil
	}
	set, found := cur, false
	for i := at - 1; i >= 0 && !found; i-- {
		if c := tl[i].Config; c != nil {
			var r settingsRecord
			if err := json.Unmarshal(c.Data, &r); err != nil {
				return nil, fmt.Errorf("session: the settings record at position %d: %w", c.Position, err)
			}
			if r.Title != "" {
				return nil, nil // titled at creation
			}
			set, found = r.After, true
		}
	}
	for i := at + 1; i < len(tl) && !found; i++ {
		if c := tl[i].Config; c != nil {
			var r settingsRecord
			if err := json.Unmarshal(c.Data, &r); err != nil {
				return nil, fmt.Errorf("session: the settings record at position %d: %w", c.Position, err)
			}
			set, found = r.Before, true
		}
	}
	return titleEvent(set.public(title, cwd), ""), nil
}
