package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/plural"
)

// ErrCannotUncompact was the error of an Uncompact on a session whose
// store could not undo compactions.
//
// Deprecated: every history.Store undoes compactions now; nothing returns
// it.
var ErrCannotUncompact = errors.New("session: the store cannot undo compactions")

// UncompactEvent reports an undone compaction (Session.Uncompact), after
// its transaction committed; a Replay yields one at its Position. An
// Uncompact that undid nothing publishes one with Error set and no
// Position (NoPosition): it left no record.
type UncompactEvent struct {
	ID        string // the Uncompact handle's ID
	SegmentID string // the Segment undone
	CompactID string // the compaction that made it
	Restored  int    // messages put back at the front of Active
	Error     string // why nothing was undone
	// NothingToUndo reports that nothing was undone because the session
	// has no compaction left to undo (Error then wraps
	// history.ErrNothingToUndo's text).
	NothingToUndo bool   `json:",omitempty"`
	TurnID        string // the turn it ran in, "" when idle (and in a Replay)
	Position      int64  // the timeline position of its record
}

func (*UncompactEvent) payload() {}

// Durable implements Payload.
func (*UncompactEvent) Durable() bool { return true }

// NothingToUndoText is what an undo with no compaction to undo says to the
// user (ActionEvent.Text; the ACP agent shows the same words).
const NothingToUndoText = "Nothing was undone: nothing to undo (this session has no compaction left to undo)."

// startUncompact runs Uncompact c: one store transaction, then the loop
// adopts the session as the store now holds it (commit, then emit).
func (l *loop) startUncompact(c *command) {
	w, v := l.writer(), l.version
	l.submit(func(progress) func(*loop) {
		var rec *history.UncompactionRecord
		err := w.call(func(ctx context.Context) (err error) {
			_, rec, err = w.store.Uncompact(ctx, w.id, v, history.Uncompaction{ID: c.id, At: time.Now()})
			return err
		})
		// Active gains the restored messages at its front: read it back
		// (O(Active), as opening the session does). After a failure the
		// read tells what the store holds.
		snap := w.reload()
		return func(l *loop) {
			switch {
			case err != nil && errors.Is(err, history.ErrNothingToUndo):
				// Nothing was written.
			case snap != nil:
				l.resync(snap)
			default:
				l.stale = true
			}
			if err != nil {
				err = fmt.Errorf("session: uncompact: %w", err)
			} else {
				l.uncompacted(rec.SegmentID)
			}
			l.finishUncompact(c, rec, err)
		}
	})
}

// uncompacted takes Segment id, which an Uncompact undid, out of the
// Segments committed after the latest turn response; the context follows
// (loop.context): the estimate of the newest one still standing, or else
// that response's figure again, as opening the session reports then.
func (l *loop) uncompacted(id string) {
	l.afterTurn = slices.DeleteFunc(l.afterTurn, func(g segContext) bool { return g.id == id })
}

// finishUncompact publishes the outcome of Uncompact c and finishes its
// handle.
func (l *loop) finishUncompact(c *command, rec *history.UncompactionRecord, err error) {
	if err != nil {
		nothing := errors.Is(err, history.ErrNothingToUndo)
		text := "Nothing was undone: " + err.Error()
		if nothing {
			text = NothingToUndoText
		}
		l.publish(&ActionEvent{ID: newID(), Kind: ActionKindUncompact, Status: ActionFailed, Text: text})
		l.publish(&UncompactEvent{ID: c.id, Error: err.Error(), NothingToUndo: nothing, TurnID: l.turnID(), Position: NoPosition})
		c.finishUnc(UncompactResult{Err: err})
		return
	}
	l.publish(&ActionEvent{ID: newID(), Kind: ActionKindUncompact, Status: ActionCompleted,
		Text: "Undid the last compaction: restored " + plural.Count(rec.Restored, "message") + " to the active history."})
	l.publish(&UncompactEvent{ID: c.id, SegmentID: rec.SegmentID, CompactID: rec.CompactID, Restored: rec.Restored, TurnID: l.turnID(), Position: rec.Position})
	c.finishUnc(UncompactResult{SegmentID: rec.SegmentID, Restored: rec.Restored})
}
