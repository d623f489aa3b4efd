package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/logref"
	"github.com/sessionkit/sessionkit/provider"
)

// The event log (docs/design.md §6.1): with a store that is a
// history.EventLog, every durable event the loop publishes is logged, by a
// goroutine of its own, moments after it is published. A subscriber can
// then resume from any sequence number, in this process or a later one.
// Messages are logged by reference (their timeline position, or ID), not
// copied: a replay reads them back from the store.

// seqGap is how far a session's numbering jumps when the session is
// opened again: the process before may have given out numbers above the
// last one it logged (deltas, and the events of its last moments if it
// stopped without closing), never 2^32 of them.
const seqGap = 1 << 32

// Kinds of logged events.
const (
	logMessage     = "message"
	logAction      = "action"
	logCompaction  = "compaction"
	logUsage       = "usage"
	logTurn        = "turn"
	logAutoCompact = "auto_compact"
	logUncompact   = "uncompact"
	logSettings    = "settings"
)

// A *MessageEvent is logged as a reference to its message, which is in
// the store at its position: internal/logref's form (logs written before
// it hold JSON, which logref reads too). It is neither encoded nor decoded
// as JSON: a replay reads one for every message.

// msgRef is a logged message reference, read back.
type msgRef struct {
	pos    int64
	id     []byte // in the logged event's Data
	turnID string
}

// loggedTurn is a *TurnEvent in the log; its result's messages are named by
// ID.
type loggedTurn struct {
	TurnID   string          `json:"turn_id"`
	Phase    TurnPhase       `json:"phase"`
	Finished bool            `json:"finished,omitempty"`
	Messages []string        `json:"messages,omitempty"`
	Usage    *provider.Usage `json:"usage,omitempty"`
	Err      *loggedError    `json:"error,omitempty"`
}

// loggedCompaction is a *CompactionEvent in the log; a compacted result's
// Segment is logged without its messages (the store's archive has them).
type loggedCompaction struct {
	CompactID string          `json:"compact_id"`
	Trigger   history.Trigger `json:"trigger,omitempty"`
	Phase     Phase           `json:"phase"`
	Archive   int             `json:"archive,omitempty"`
	Result    *CompactResult  `json:"result,omitempty"`
	TurnID    string          `json:"turn_id,omitempty"`
	Position  int64           `json:"position"`
}

// loggedError is an error in the log: its text, and the sentinel of this
// package it wraps, if any, so that errors.Is still holds after a replay.
type loggedError struct {
	Text     string `json:"text"`
	Sentinel string `json:"is,omitempty"`
}

// sentinels are the errors a logged error keeps its identity with.
var sentinels = map[string]error{
	"cancelled":        ErrCancelled,
	"closed":           ErrClosed,
	"too_many_steps":   ErrTooManySteps,
	"invalid":          ErrInvalid,
	"queue_full":       ErrQueueFull,
	"context_overflow": provider.ErrContextOverflow,
}

func logError(err error) *loggedError {
	if err == nil {
		return nil
	}
	le := &loggedError{Text: err.Error()}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			le.Sentinel = name
			break
		}
	}
	return le
}

// replayedError is an error read back from the log.
type replayedError struct {
	text     string
	sentinel error
}

func (e *replayedError) Error() string { return e.text }
func (e *replayedError) Unwrap() error { return e.sentinel }

func (le *loggedError) err() error {
	if le == nil {
		return nil
	}
	return &replayedError{text: le.Text, sentinel: sentinels[le.Sentinel]}
}

// encodeEvent is ev as the log keeps it.
func encodeEvent(ev Event) (history.LoggedEvent, error) {
	var (
		kind string
		v    any
	)
	switch p := ev.Payload.(type) {
	case *MessageEvent:
		data := logref.Append(make([]byte, 0, 24+len(p.Message.ID)+len(p.TurnID)), p.Position, p.Message.ID, p.TurnID)
		return history.LoggedEvent{Seq: ev.Seq, Time: ev.Time, Kind: logMessage, Data: data}, nil
	case *TurnEvent:
		lt := loggedTurn{TurnID: p.TurnID, Phase: p.Phase}
		if r := p.Result; r != nil {
			lt.Finished = true
			for _, m := range r.Messages {
				lt.Messages = append(lt.Messages, m.ID)
			}
			lt.Usage = &r.Usage
			lt.Err = logError(r.Err)
		}
		kind, v = logTurn, lt
	case *CompactionEvent:
		lc := loggedCompaction{CompactID: p.CompactID, Trigger: p.Trigger, Phase: p.Phase, Archive: p.Archive, TurnID: p.TurnID, Position: p.Position}
		if r := p.Result; r != nil {
			res := *r
			if res.Segment != nil {
				seg := *res.Segment
				seg.Messages = nil
				res.Segment = &seg
			}
			lc.Result = &res
		}
		kind, v = logCompaction, lc
	case *ActionEvent:
		kind, v = logAction, p
	case *UsageEvent:
		kind, v = logUsage, p
	case *AutoCompactEvent:
		kind, v = logAutoCompact, p
	case *UncompactEvent:
		kind, v = logUncompact, p
	case *SettingsEvent:
		kind, v = logSettings, p
	default:
		return history.LoggedEvent{}, fmt.Errorf("session: event %T is not logged", ev.Payload)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return history.LoggedEvent{}, fmt.Errorf("session: log event %d: %w", ev.Seq, err)
	}
	return history.LoggedEvent{Seq: ev.Seq, Time: ev.Time, Kind: kind, Data: data}, nil
}

// replayLog reads the logged events of session id with Seq in (after,
// upto] and decodes them, reading back from the store the messages they
// name: only the entries at the positions the events name (one
// Entries read of their range), not the whole timeline. timeline (Replay)
// keeps only the events of timeline entries (see inTimelineOrder) and
// leaves a compacted result's Segment without its archived messages.
//
// whole, when above 0, is a position every entry the events name lies
// below (the session's next position at the cut), given for a replay of
// the whole log (after 0), which names every entry: the entries below it
// are then read beside the log, not after it.
func replayLog(ctx context.Context, store history.Store, log history.EventLog, id string, after, upto uint64, timeline bool, whole int64) ([]Event, error) {
	d := decoder{ctx: ctx, store: store, id: id, noArchive: timeline}
	if after == 0 && whole > 0 {
		ch := make(chan prefetched, 1) // the reader never waits for us
		d.whole, d.prefetched = whole, ch
		go func() {
			es, err := store.Entries(ctx, id, history.EntryQuery{To: whole})
			ch <- prefetched{es, err}
		}()
	}
	logged, err := log.Events(ctx, id, after, 0)
	if err != nil {
		return nil, fmt.Errorf("session: read the event log: %w", err)
	}
	// The messages the events name, by position: their range is read
	// once, before the events are decoded.
	kept := logged[:0]
	msgs := make([]msgRef, 0, len(logged))
	turnID := "" // the last turn read: the messages of a turn share its string
	for _, le := range logged {
		if le.Seq > upto {
			break
		}
		if timeline && !timelineKinds[le.Kind] {
			continue
		}
		kept = append(kept, le)
		if le.Kind != logMessage {
			continue
		}
		r, err := logref.Parse(le.Data)
		if err != nil {
			return nil, fmt.Errorf("session: event %d of the log: %w", le.Seq, err)
		}
		if string(r.TurnID) != turnID {
			turnID = string(r.TurnID)
		}
		msgs = append(msgs, msgRef{pos: r.Position, id: r.ID, turnID: turnID})
	}
	if err := d.positions(msgs); err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(kept))
	slab := make([]MessageEvent, len(msgs)) // the MessageEvents, one allocation
	for _, le := range kept {
		var p Payload
		if le.Kind == logMessage {
			p, err = d.message(msgs[0], &slab[0])
			msgs, slab = msgs[1:], slab[1:]
		} else {
			p, err = d.decode(le)
		}
		if err != nil {
			return nil, fmt.Errorf("session: event %d of the log: %w", le.Seq, err)
		}
		out = append(out, Event{Seq: le.Seq, Time: le.Time, Payload: p})
	}
	return out, nil
}

// decoder turns logged events back into payloads, reading from the store
// the entries they name: the range of positions of the logged messages
// once (positions), the whole timeline and the archive once, when an event
// first needs them (the messages of a turn, by ID; a Segment's messages).
type decoder struct {
	ctx       context.Context
	store     history.Store
	id        string
	noArchive bool // a Segment is left without its messages
	// whole and prefetched: the entries at positions below whole, read
	// beside the log; whole is 0 when none are.
	whole      int64
	prefetched chan prefetched
	byPos      []*history.Message // the messages at positions lo, lo+1, ...
	lo         int64
	byID       map[string]history.Message
	segments   map[string][]history.Message
}

// positions reads the entries at the positions of msgs, from the lowest
// to the highest.
func (d *decoder) positions(msgs []msgRef) error {
	if len(msgs) == 0 {
		return nil
	}
	lo, hi := msgs[0].pos, msgs[0].pos
	for _, r := range msgs[1:] {
		lo, hi = min(lo, r.pos), max(hi, r.pos)
	}
	if lo < 0 {
		return fmt.Errorf("session: the event log names message %s at position %d", msgs[0].id, lo)
	}
	var (
		entries []history.Entry
		err     error
	)
	if d.whole > 0 && hi < d.whole {
		p := <-d.prefetched
		d.whole = 0
		entries, err = p.entries, p.err
	} else {
		entries, err = d.store.Entries(d.ctx, d.id, history.EntryQuery{From: lo, To: hi + 1})
	}
	if err != nil {
		return err
	}
	d.lo, d.byPos = lo, make([]*history.Message, hi-lo+1)
	for _, e := range entries {
		if e.Message != nil && e.Position >= lo && e.Position <= hi {
			d.byPos[e.Position-lo] = e.Message
		}
	}
	return nil
}

// prefetched is the outcome of a read of entries beside the log.
type prefetched struct {
	entries []history.Entry
	err     error
}

// message is the MessageEvent of r, its message read by positions, made
// in ev.
func (d *decoder) message(r msgRef, ev *MessageEvent) (Payload, error) {
	var m *history.Message
	if i := r.pos - d.lo; i >= 0 && i < int64(len(d.byPos)) {
		m = d.byPos[i]
	}
	if m == nil || m.ID != string(r.id) {
		return nil, fmt.Errorf("message %s is not at position %d of the store", r.id, r.pos)
	}
	*ev = MessageEvent{Message: *m, TurnID: r.turnID, Position: r.pos}
	return ev, nil
}

// timelineKinds are the logged kinds of the events of timeline entries.
var timelineKinds = map[string]bool{logMessage: true, logCompaction: true, logUncompact: true, logSettings: true}

// decode decodes le, of any kind but logMessage (replayLog decodes those
// with the range of their messages).
func (d *decoder) decode(le history.LoggedEvent) (Payload, error) {
	switch le.Kind {
	case logTurn:
		var lt loggedTurn
		if err := json.Unmarshal(le.Data, &lt); err != nil {
			return nil, err
		}
		ev := &TurnEvent{TurnID: lt.TurnID, Phase: lt.Phase}
		if lt.Finished {
			res := &TurnResult{Err: lt.Err.err()}
			if lt.Usage != nil {
				res.Usage = *lt.Usage
			}
			if len(lt.Messages) > 0 {
				if err := d.messagesByID(); err != nil {
					return nil, err
				}
			}
			for _, id := range lt.Messages {
				m, ok := d.byID[id]
				if !ok {
					return nil, fmt.Errorf("message %s of turn %s is not in the store", id, lt.TurnID)
				}
				res.Messages = append(res.Messages, m)
			}
			ev.Result = res
		}
		return ev, nil
	case logCompaction:
		var lc loggedCompaction
		if err := json.Unmarshal(le.Data, &lc); err != nil {
			return nil, err
		}
		ev := &CompactionEvent{CompactID: lc.CompactID, Trigger: lc.Trigger, Phase: lc.Phase, Archive: lc.Archive, Result: lc.Result, TurnID: lc.TurnID, Position: lc.Position}
		if r := ev.Result; r != nil && r.Segment != nil && r.Segment.ID != "" && !d.noArchive {
			msgs, err := d.segment(r.Segment.ID)
			if err != nil {
				return nil, err
			}
			r.Segment.Messages = msgs
		}
		return ev, nil
	case logAction:
		return unmarshalPayload[ActionEvent](le.Data)
	case logUsage:
		return unmarshalPayload[UsageEvent](le.Data)
	case logAutoCompact:
		return unmarshalPayload[AutoCompactEvent](le.Data)
	case logUncompact:
		return unmarshalPayload[UncompactEvent](le.Data)
	case logSettings:
		return unmarshalPayload[SettingsEvent](le.Data)
	}
	return nil, fmt.Errorf("unknown kind %q", le.Kind)
}

func unmarshalPayload[T any, P interface {
	*T
	Payload
}](data []byte) (Payload, error) {
	p := P(new(T))
	if err := json.Unmarshal(data, p); err != nil {
		return nil, err
	}
	return p, nil
}

// messagesByID indexes the store's messages by ID, reading the whole
// timeline once.
func (d *decoder) messagesByID() error {
	if d.byID != nil {
		return nil
	}
	entries, err := d.store.Timeline(d.ctx, d.id)
	if err != nil {
		return err
	}
	d.byID = make(map[string]history.Message, len(entries))
	for _, e := range entries {
		if e.Message != nil {
			d.byID[e.Message.ID] = *e.Message
		}
	}
	return nil
}

// segment returns the archived messages of Segment id, reading the archive
// once.
func (d *decoder) segment(id string) ([]history.Message, error) {
	if d.segments == nil {
		segs, err := d.store.Segments(d.ctx, d.id)
		if err != nil {
			return nil, err
		}
		d.segments = make(map[string][]history.Message, len(segs))
		for _, g := range segs {
			d.segments[g.ID] = g.Messages
		}
	}
	msgs, ok := d.segments[id]
	if !ok {
		return nil, fmt.Errorf("segment %s is not in the store", id)
	}
	return msgs, nil
}

// eventLog is the loop's part of the event log. The log is written one
// batch at a time, each by a goroutine of its own that posts the outcome
// back to the loop: the loop hands over what was published since the last
// batch whenever none is being written, so logging never delays a command
// (and an idle session keeps no goroutine for it). The version of the
// session's other writes is not involved.
type eventLog struct {
	store    history.EventLog
	unlogged []Event // durable events published and not handed to the logger
	inFlight []Event // the batch the logger is writing
	busy     bool    // the logger is writing a batch
	logged   uint64  // the Through the store holds
	failedAt uint64  // the Through of the last batch that failed; 0 when none
	final    bool    // the session's last batch was handed over
}

// startNumbering returns where the loop's numbering starts for a session
// opened from snap (created when this open made it): at 0 for a new
// session, seqGap above the last recorded number for one opened again.
// Before it gives out any number, a session opened again records that
// start in the store, so a process that logs nothing (its log writes fail,
// or it is killed before its first batch) still moves the next process past
// every number it could have given: the next one starts seqGap above this
// one's start. The record is the reservation made with the lease (reserved,
// from history.Leaser.AcquireReserving) when there is one for this
// snapshot, otherwise a reservation of its own (history.EventLog
// ReserveSeqs). A session whose next start would leave less than seqGap numbers
// below history.MaxSeq is refused with ErrSeqExhausted.
func startNumbering(ctx context.Context, store history.Store, snap *history.Snapshot, created bool, reserved *history.SeqReservation) (eventLog, uint64, error) {
	elog := eventLog{store: store, logged: snap.LastSeq}
	if created {
		return elog, 0, nil
	}
	exhausted := func(last uint64) error {
		return fmt.Errorf("%w: session %q has recorded sequence number %d; a process needs %d numbers above its start, and history.MaxSeq is %d",
			ErrSeqExhausted, snap.ID, last, uint64(seqGap), uint64(history.MaxSeq))
	}
	// The lease's reservation serves when the Load under that lease saw
	// it (no write between them: the lease fences every other writer).
	if r := reserved; r != nil && r.Found && r.Start == 0 && r.Last == snap.LastSeq {
		return eventLog{}, 0, exhausted(r.Last)
	}
	if r := reserved; r != nil && r.Found && r.Start != 0 && r.Start == snap.LastSeq {
		return elog, r.Start, nil
	}
	r, err := store.ReserveSeqs(ctx, snap.ID, seqGap)
	switch {
	case err != nil:
		return eventLog{}, 0, fmt.Errorf("session: record where the sequence numbers of %q start: %w", snap.ID, err)
	case r.Start == 0:
		return eventLog{}, 0, exhausted(r.Last)
	}
	elog.logged = r.Start
	return elog, r.Start, nil
}

// logPublished notes a published event for the log.
func (l *loop) logPublished(ev Event) {
	if ev.Payload.Durable() {
		l.elog.unlogged = append(l.elog.unlogged, ev)
	}
}

// flushLog starts writing the unlogged events when no batch is being written (final:
// also when there are none, as the session's last batch). A batch that
// failed is tried again only once more has been published, so a failing
// store is not written in a loop.
func (l *loop) flushLog(final bool) {
	el := &l.elog
	through := l.feed.Seq()
	if el.store == nil || el.busy || el.final || (len(el.unlogged) == 0 && !final) || (el.failedAt == through && !final) {
		return
	}
	el.final = final
	batch := history.EventBatch{Through: through, Covers: l.nextPos}
	if c := l.running; c != nil && c.pos != NoPosition {
		// Its record is stored; its place in the timeline is its end,
		// which is not published yet.
		batch.Covers = min(c.pos, l.nextPos)
	}
	for _, ev := range el.unlogged {
		le, err := encodeEvent(ev)
		if err != nil {
			l.log.Error("an event cannot be logged", zap.Uint64("seq", ev.Seq), zap.Error(err))
			continue
		}
		batch.Events = append(batch.Events, le)
	}
	el.busy, el.inFlight, el.unlogged = true, el.unlogged, nil
	store, w, id, results := el.store, l.writer(), l.s.id, l.results
	go func() {
		err := w.call(func(ctx context.Context) error { return store.LogEvents(ctx, id, batch) })
		if err != nil {
			// It may have landed all the same (a lost acknowledgement).
			if snap := w.reload(); snap != nil && snap.LastSeq >= batch.Through {
				err = nil
			}
		}
		results <- func(l *loop) { l.logWritten(batch.Through, err) }
	}()
}

// logWritten applies the outcome of a batch of the logger.
func (l *loop) logWritten(through uint64, err error) {
	el := &l.elog
	el.busy = false
	if err != nil {
		el.failedAt = through
		el.unlogged = append(el.inFlight, el.unlogged...)
		el.inFlight = nil
		l.log.Warn("the event log could not be written", zap.Error(err))
		return
	}
	el.logged, el.failedAt, el.inFlight = through, 0, nil
	l.feed.Hold(through)
}
