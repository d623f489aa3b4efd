package session

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// ReplayOptions say where [Session.Replay] starts.
type ReplayOptions struct {
	// After is the sequence number to replay after: the Seq of the last
	// event the caller has (an Event's, or a Replay's Through), from this
	// process or an earlier one; 0 replays the whole timeline.
	After uint64
	// Buffer is the live subscription's buffer, as SubscribeOptions.Buffer.
	Buffer int
}

// Replay is a session's timeline after a sequence number, and a
// subscription to everything published after it. Together they miss
// nothing and repeat nothing: the replayed part ends exactly where the live
// part begins.
type Replay struct {
	// Events are the replayed timeline in timeline order (by Position):
	// one *MessageEvent per stored message, one *CompactionEvent in
	// PhaseFinished per compaction that has a place in the timeline (a
	// compacted result's Segment as committed, without its archived
	// messages: they are the MessageEvents before it, and
	// [Session.Segments] has them),
	// one *UncompactEvent per undo and one *SettingsEvent per recorded
	// settings change, each with its Position, and the *SettingsEvent of
	// the title an untitled session took from its first message right
	// after that message; then, for a compaction running at the cut, its
	// PhaseStarted event and one PhaseDelta holding the summary streamed
	// so far; then, for an assistant message being streamed at the cut,
	// one *ThoughtDeltaEvent holding its reasoning so far and one
	// *DeltaEvent holding its text so far, each when not empty (of all,
	// at most the first MiB: the committed message and the completed
	// compaction's summary hold the whole text).
	//
	// They are the durable events with a Seq above ReplayOptions.After,
	// read from the session's event log (docs/design.md §6.1) and, for the
	// newest, from memory; each keeps the Seq, Time and TurnID it was
	// published with. The entries a process stored and did not log (it was
	// killed between the two) are logged by the next open, with numbers of
	// that process. The events made at the cut have Seq 0.
	Events []Event
	// Through is the sequence number of the cut, the last one given before
	// Sub: pass it as ReplayOptions.After to continue after Events (or
	// the Seq of the last event taken from Sub).
	Through uint64
	// Pending are the IDs of the commands accepted and not yet finished at
	// the cut (queued, the running turn, the running compaction). A command
	// that finished before the cut is not pending, and its end is not in
	// Sub.
	Pending []string
	// ContextTokens is the context the conversation held at the cut, in
	// tokens, as the provider last reported it (the ContextTokens of the
	// newest [UsageEvent] that had one, or, in a process that has seen no
	// response yet, the last turn response's ledger record); after a
	// compaction, until the next turn response, it is the session's
	// estimate (CompactResult.ContextAfter) and ContextEstimated is true.
	// An Uncompact takes its compaction's estimate away: the figure is
	// then that of the newest Segment still standing that was committed
	// after the latest turn response (estimated), or else that response's
	// figure again, as opening the session again reports it. 0 when no
	// figure exists: a session without a turn response. The event log
	// holds no usage, so a subscriber that continues from it learns the
	// context here.
	ContextTokens    int
	ContextEstimated bool
	// Sub delivers the live events published after the cut, with the
	// behaviour of [Session.Subscribe].
	Sub *Subscription
}

// ContextTokens returns the context the conversation holds now, in tokens,
// and whether that figure is the session's estimate: what
// Replay.ContextTokens and Replay.ContextEstimated would say of a cut made
// now (in a process that has seen no response yet, the last turn
// response's ledger record, or the estimate of a compaction after it), for
// a subscriber that starts live rather than from a Replay. 0 when no
// figure exists. Errors: ErrClosed, ctx's error.
func (s *Session) ContextTokens(ctx context.Context) (tokens int, estimated bool, err error) {
	err = s.read(ctx, func(l *loop) { tokens, estimated = l.context() })
	return tokens, estimated, err
}

// context is the context the conversation holds now and whether it is the
// session's estimate (Replay.ContextTokens, ContextEstimated).
func (l *loop) context() (int, bool) {
	if n := len(l.afterTurn); n > 0 && l.afterTurn[n-1].after > 0 {
		return l.afterTurn[n-1].after, true
	}
	return l.contextTokens(), false
}

// Replay returns the session's timeline after opts.After and a live
// subscription that continues exactly after it (docs/design.md §7.6, §7.9).
// The cut is made by the session's loop; the event log and the store are
// read in the caller's goroutine, so a long timeline never holds the
// session up; what happens in the meantime waits in the subscription's
// buffer.
//
// ctx governs the call and, like Subscribe's, ends the subscription when it
// ends. Errors: ErrInvalid for a negative Buffer or an After above the last
// number given, ErrEventsTrimmed, ErrClosed, ctx's error, or the store's.
func (s *Session) Replay(ctx context.Context, opts ReplayOptions) (*Replay, error) {
	var (
		rep      = &Replay{}
		subErr   error
		running  *CompactionEvent
		summary  string
		draftID  string
		draftTxt string
		draftTh  string
		elog     history.EventLog
		logged   uint64 // the log holds every durable event up to it
		recent   []Event
		nextPos  int64
	)
	err := s.read(ctx, func(l *loop) {
		if opts.After > l.feed.Seq() {
			subErr = invalid("replay after sequence number %d: the last one given is %d", opts.After, l.feed.Seq())
			return
		}
		elog, logged, nextPos = l.elog.store, l.elog.logged, l.nextPos
		// The loop retains every durable event the log does not hold yet.
		if recent, subErr = l.feed.Retained(max(opts.After, logged)); subErr != nil {
			return
		}
		rep.Sub, subErr = subscribe(ctx, l.feed, SubscribeOptions{Buffer: opts.Buffer}, s.unsubscribe)
		if subErr != nil {
			return
		}
		rep.Through = l.feed.Seq()
		rep.ContextTokens, rep.ContextEstimated = l.context()
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
			draftID, draftTxt, draftTh = l.draft.id, l.draft.text.String(), l.draft.thoughts.String()
		}
	})
	if err == nil {
		err = subErr
	}
	if err != nil {
		return nil, err
	}
	var evs []Event
	if elog != nil && opts.After < logged {
		if evs, err = replayLog(ctx, s.store, elog, s.id, opts.After, logged, true, nextPos); err != nil {
			rep.Sub.Close()
			return nil, err
		}
	}
	for _, ev := range recent {
		evs = append(evs, withoutArchive(ev))
	}
	rep.Events = inTimelineOrder(evs)
	if running != nil { // only a compaction whose record is stored (above)
		now := time.Now()
		rep.Events = append(rep.Events, Event{Time: now, Payload: running})
		if summary != "" {
			rep.Events = append(rep.Events, Event{Time: now, Payload: &CompactionEvent{
				CompactID: running.CompactID, Trigger: running.Trigger, Phase: PhaseDelta, Delta: summary, Position: running.Position,
			}})
		}
	}
	if draftTh != "" { // the reasoning streams before the text
		rep.Events = append(rep.Events, Event{Time: time.Now(), Payload: &ThoughtDeltaEvent{MessageID: draftID, Text: draftTh}})
	}
	if draftTxt != "" {
		rep.Events = append(rep.Events, Event{Time: time.Now(), Payload: &DeltaEvent{MessageID: draftID, Text: draftTxt}})
	}
	return rep, nil
}

// withoutArchive returns ev, a compaction's finished event whose Segment
// holds its archived messages as published, as a copy without them, the
// way the log keeps it; other events as they are. The published event is
// shared with subscribers and stays as it is.
func withoutArchive(ev Event) Event {
	c, ok := ev.Payload.(*CompactionEvent)
	if !ok || c.Result == nil || c.Result.Segment == nil || c.Result.Segment.Messages == nil {
		return ev
	}
	cc, res, seg := *c, *c.Result, *c.Result.Segment
	seg.Messages = nil
	res.Segment = &seg
	cc.Result = &res
	ev.Payload = &cc
	return ev
}

// inTimelineOrder keeps of evs (durable events in the order of their
// numbers) the ones that make the timeline (see Replay.Events), once per
// timeline position (an entry whose event a later open logged again keeps
// its first), ordered by position. An event without a position (the
// title taken from the first message, settings changes a store did not
// record) stays right after the entry it followed, and goes with it when
// that was a repeat.
func inTimelineOrder(evs []Event) []Event {
	type keyed struct {
		pos int64
		ev  Event
	}
	var (
		out    = make([]keyed, 0, len(evs))
		seen   map[int64]bool // the positions in out, made once one is not above top
		top    = int64(-1)    // the highest position in out
		last   = int64(-1)
		repeat bool // the last entry was a repeat
		sorted = true
	)
	for _, ev := range evs {
		pos := NoPosition
		switch p := ev.Payload.(type) {
		case *MessageEvent:
			pos = p.Position
		case *CompactionEvent:
			if p.Phase != PhaseFinished || p.Position == NoPosition {
				continue // the rest of a lifecycle, or a compaction that never took a place
			}
			pos = p.Position
		case *UncompactEvent:
			if p.Position == NoPosition {
				continue
			}
			pos = p.Position
		case *SettingsEvent:
			pos = p.Position
		default:
			continue
		}
		if pos == NoPosition {
			if !repeat {
				out = append(out, keyed{last, ev})
			}
			continue
		}
		if pos <= top && seen == nil { // the positions so far, once
			seen = make(map[int64]bool, len(out))
			for _, k := range out {
				seen[k.pos] = true
			}
		}
		if repeat = pos <= top && seen[pos]; repeat {
			continue
		}
		if seen != nil {
			seen[pos] = true
		}
		sorted = sorted && pos > last
		last, top = pos, max(top, pos)
		out = append(out, keyed{pos, ev})
	}
	if !sorted { // an entry logged again after later ones
		sort.SliceStable(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	}
	res := make([]Event, len(out))
	for i, k := range out {
		res[i] = k.ev
	}
	return res
}

// repairBatch is how many timeline positions repairLog reads and logs at
// a time: its memory does not grow with the session.
const repairBatch = 4096

// repairLog logs the events of the timeline entries at positions from
// covers on, which the session's log lacks (a process stored them and was
// killed before it logged them, sessions stored before the log kept its
// coverage, or written by another tool), numbered after start, and
// returns where the loop's numbering starts then. It reads and logs them
// in batches of repairBatch positions, each batch one LogEvents that
// records how far the log covers, so that its memory does not depend on
// the session's size and a process killed in the middle leaves the rest
// to the next open. The events are those a Replay rebuilt from the store:
// set, title and cwd are the session's settings now.
func repairLog(ctx context.Context, store history.Store, elog *eventLog, id string, covers, next int64, start uint64, set settings, title, cwd string, log *zap.Logger) uint64 {
	r, err := newRepair(ctx, store, id, covers, next, set, title, cwd)
	seq := start
	for from := covers; err == nil && from < next; from += repairBatch {
		to := min(from+repairBatch, next)
		var tl []history.Entry
		if tl, err = store.Entries(ctx, id, history.EntryQuery{From: from, To: to}); err != nil {
			break
		}
		var evs []Event
		if evs, err = r.events(tl); err != nil {
			break
		}
		batch := history.EventBatch{Covers: to, Events: make([]history.LoggedEvent, 0, len(evs))}
		for _, ev := range evs {
			seq++
			ev.Seq = seq
			le, err := encodeEvent(ev)
			if err != nil {
				log.Error("an event cannot be logged", zap.String("session", id), zap.Error(err))
				continue
			}
			batch.Events = append(batch.Events, le)
		}
		batch.Through = seq
		if err := elog.store.LogEvents(ctx, id, batch); err != nil {
			// It may have landed: the numbers it took are not given again.
			log.Warn("the event log could not be completed from the store; the next open tries again", zap.String("session", id), zap.Error(err))
			return seq
		}
		elog.logged = seq
	}
	if err != nil {
		log.Warn("the event log cannot be completed from the store; the next open tries again", zap.String("session", id), zap.Error(err))
	}
	return seq
}

// repair is what repairLog needs besides the entries of a batch: where
// the session's first message is, the title event to log after it, and
// the Segments (without their messages) of the completed compactions it
// logs.
type repair struct {
	first   int64          // the position of the session's first message; -1 when unknown or before covers
	titling *SettingsEvent // the title event after it, or nil
	segs    []history.Segment
	cwd     string
}

// newRepair reads what repairLog needs of the session besides its
// entries from covers up to next: its records (compactions,
// uncompactions, settings changes), and, when the session has a title its
// first message may have given, the entries up to its first message, in
// batches.
func newRepair(ctx context.Context, store history.Store, id string, covers, next int64, set settings, title, cwd string) (*repair, error) {
	r := &repair{first: -1, cwd: cwd}
	recs, err := store.Entries(ctx, id, history.EntryQuery{Records: true})
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(recs, func(e history.Entry) bool {
		return e.Position >= covers && e.Compaction != nil && e.Compaction.Status == history.StatusCompleted
	}) {
		if r.segs, err = store.SegmentHeaders(ctx, id); err != nil {
			return nil, err
		}
	}
	if title == "" {
		return r, nil // no title event to log
	}
	var first *history.Entry
	for from := int64(0); first == nil && from < next; from += repairBatch {
		tl, err := store.Entries(ctx, id, history.EntryQuery{From: from, To: min(from+repairBatch, next)})
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(tl, func(e history.Entry) bool { return e.Message != nil }); i >= 0 {
			first = &tl[i]
		}
	}
	if first == nil || first.Position < covers {
		return r, nil // logged already, with its title event
	}
	// The records and the first message, in timeline order: all titledBy
	// reads.
	at, _ := slices.BinarySearchFunc(recs, first.Position, func(e history.Entry, pos int64) int { return cmp.Compare(e.Position, pos) })
	sparse := slices.Insert(recs, at, *first)
	r.first = first.Position
	r.titling, err = titledBy(sparse, set, title, cwd)
	return r, err
}

// events rebuilds the events of the timeline entries tl: a message, a
// recorded settings change, an undo, and a compaction as finished (one
// still in progress as failed, as the next open records it; a completed
// one with its Segment), with the title event right after the first
// message.
func (r *repair) events(tl []history.Entry) ([]Event, error) {
	out := make([]Event, 0, len(tl))
	for _, e := range tl {
		switch {
		case e.Message != nil:
			out = append(out, Event{Time: e.Message.CreatedAt, Payload: &MessageEvent{Message: *e.Message, Position: e.Position}})
			if e.Position == r.first && r.titling != nil {
				out = append(out, Event{Time: e.Message.CreatedAt, Payload: r.titling})
			}
		case e.Config != nil:
			ev, err := replayedSettings(e.Config, r.cwd)
			if err != nil {
				return nil, err
			}
			out = append(out, Event{Time: e.Config.At, Payload: ev})
		case e.Uncompaction != nil:
			u := e.Uncompaction
			out = append(out, Event{Time: u.At, Payload: &UncompactEvent{
				ID: u.ID, SegmentID: u.SegmentID, CompactID: u.CompactID, Restored: u.Restored, Position: e.Position,
			}})
		case e.Compaction != nil:
			ev := replayedCompaction(e.Compaction)
			if i := slices.IndexFunc(r.segs, func(g history.Segment) bool { return g.CompactID == e.Compaction.CompactID }); i >= 0 && ev.Result.Segment != nil {
				g := r.segs[i]
				ev.Result.Segment = &g
			}
			out = append(out, Event{Time: e.Compaction.FinishedAt, Payload: ev})
		}
	}
	return out, nil
}

// maxDraft bounds the text a session keeps of a message or summary being
// streamed, for a Replay: the start of it, which the committed message or
// the completed compaction then completes.
const maxDraft = 1 << 20

// draft is the assistant message a turn's step is streaming: its ID, and
// the start (maxDraft bytes each) of its reasoning and of its text.
type draft struct {
	id             string
	thoughts, text strings.Builder
}

// reset forgets the message: it was committed, or its step failed.
func (d *draft) reset() {
	d.id = ""
	d.thoughts.Reset()
	d.text.Reset()
}

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
		// (Segment ID, usage, provider): they are zero here, and the
		// caller takes them from the Segment.
		res.Segment = storekit.CommittedSegment(&history.Commit{CompactID: c.CompactID, Summary: c.Summary}, c)
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
