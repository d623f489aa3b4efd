package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// writer performs a session's store writes in the worker goroutine.
//
// A write that returns an error may still have landed: a store can fail
// after its transaction committed (a lost acknowledgement, an fsync error
// reported late, a closed connection). The writer then reads the session
// back and decides: a write that landed counts as done; one that did not is
// reported with the snapshot read, so the loop can make its in-memory state
// equal to the store again ([loop.resync]).
//
// Each store call has the deadline timeout (Config.StoreTimeout) within
// base, the session's store context, which its close ends (see call).
type writer struct {
	store   history.Store
	id      string
	base    context.Context
	timeout time.Duration
}

// call runs one store call f with the writer's deadline. An error that
// the deadline, or the end of the session's store context, brought about
// says so, and wraps the store's error.
func (w writer) call(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(w.base, w.timeout)
	defer cancel()
	err := f(ctx)
	switch {
	case err == nil || ctx.Err() == nil:
		return err
	case w.base.Err() != nil:
		return fmt.Errorf("session: the session closed before the store finished (it had %v): %w", closeGrace, err)
	}
	return fmt.Errorf("session: the store did not finish within %v (Config.StoreTimeout): %w", w.timeout, err)
}

// reload reads the session back after a failed write; nil when that fails
// too.
func (w writer) reload() *history.Snapshot {
	var snap *history.Snapshot
	err := w.call(func(ctx context.Context) (err error) {
		snap, err = w.store.Load(ctx, w.id)
		return err
	})
	if err != nil {
		return nil
	}
	return snap
}

// append stores msgs and, in the same transaction, usage (the record of
// the response that made them). A failed write that landed after all
// landed whole: its usage is recorded once.
func (w writer) append(v uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, *history.Snapshot, error) {
	return w.write(func(ctx context.Context) (uint64, error) {
		return w.store.Append(ctx, w.id, v, msgs, usage...)
	}, func(snap *history.Snapshot) bool { return endsWith(snap.Active, msgs) })
}

// write runs one versioned store write f. When it fails, the writer reads
// the session back: a write that landed (landed(snap) reports it) counts
// as done at the version read; otherwise write returns the error with the
// snapshot read (nil when that failed too).
func (w writer) write(f func(ctx context.Context) (uint64, error), landed func(snap *history.Snapshot) bool) (uint64, *history.Snapshot, error) {
	var nv uint64
	err := w.call(func(ctx context.Context) (err error) {
		nv, err = f(ctx)
		return err
	})
	if err == nil {
		return nv, nil, nil
	}
	snap := w.reload()
	if snap != nil && landed(snap) {
		return snap.Version, nil, nil
	}
	return 0, snap, err
}

// recordUsage records responses that produced nothing the store keeps (a
// summary whose compaction failed), unversioned; a record the ledger holds
// already is left out, so a retry after a failure that landed counts once.
func (w writer) recordUsage(recs []history.UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	return w.call(func(ctx context.Context) error { return w.store.RecordUsage(ctx, w.id, recs) })
}

// endsWith reports whether active ends with msgs (by ID).
func endsWith(active, msgs []history.Message) bool {
	if len(active) < len(msgs) {
		return false
	}
	tail := active[len(active)-len(msgs):]
	for i := range msgs {
		if tail[i].ID != msgs[i].ID {
			return false
		}
	}
	return true
}

func (w writer) setConfig(v uint64, blob json.RawMessage) (uint64, *history.Snapshot, error) {
	return w.write(func(ctx context.Context) (uint64, error) {
		return w.store.SetConfig(ctx, w.id, v, blob)
	}, func(snap *history.Snapshot) bool { return string(snap.Config) == string(blob) })
}

// recordConfig stores the settings blob and, with data, the record of the
// change (data) at position pos, the session's next one; recorded reports
// which.
// A write that fails is counted as landed when the store holds blob and
// the position was taken.
func (w writer) recordConfig(v uint64, blob, data json.RawMessage, pos int64) (nv uint64, recorded bool, snap *history.Snapshot, err error) {
	if data == nil {
		nv, snap, err = w.setConfig(v, blob)
		return nv, false, snap, err
	}
	nv, snap, err = w.write(func(ctx context.Context) (uint64, error) {
		nv, _, err := w.store.RecordConfig(ctx, w.id, v, history.ConfigChange{Config: blob, Data: data, At: time.Now()})
		return nv, err
	}, func(snap *history.Snapshot) bool {
		return string(snap.Config) == string(blob) && snap.NextPosition == pos+1
	})
	return nv, err == nil, snap, err
}

// begin records the start of compaction rec (in progress).
func (w writer) begin(v uint64, rec history.CompactionRecord) (uint64, *history.Snapshot, error) {
	return w.write(func(ctx context.Context) (uint64, error) {
		return w.store.BeginCompaction(ctx, w.id, v, rec)
	}, func(snap *history.Snapshot) bool {
		return rec.Status == history.StatusInProgress && slices.Contains(snap.Interrupted, rec.CompactID)
	})
}

// finish records the end of an in-progress compaction without a commit.
func (w writer) finish(v uint64, compactID string, status history.CompactionStatus, errText string) (uint64, *history.Snapshot, error) {
	var adopt *history.Snapshot
	nv, snap, err := w.write(func(ctx context.Context) (uint64, error) {
		return w.store.FinishCompaction(ctx, w.id, v, compactID, status, errText, time.Now())
	}, func(snap *history.Snapshot) bool {
		// Not in progress any more: finished, or committed after all. The
		// caller adopts snap either way.
		if slices.Contains(snap.Interrupted, compactID) {
			return false
		}
		adopt = snap
		return true
	})
	if adopt != nil {
		return nv, adopt, nil
	}
	return nv, snap, err
}

// commit is the canonical compaction commit; archived is the number of
// archived messages before it. When the store reports a failure, commit
// finds out whether the transaction landed all the same (then it counts as
// done); if not, it records the attempt as failed and returns the error
// with the store's state to adopt (nil when the store cannot be read: the
// loop reads it again later).
func (w writer) commit(v uint64, c history.Commit, rec history.CompactionRecord, archived int64) (uint64, *history.Segment, *history.Snapshot, error) {
	var (
		nv  uint64
		seg *history.Segment
	)
	err := w.call(func(ctx context.Context) (err error) {
		nv, seg, err = w.store.CommitCompaction(ctx, w.id, v, c)
		return err
	})
	if err == nil {
		return nv, seg, nil, nil
	}
	err = fmt.Errorf("session: commit compaction: %w", err)
	if snap := w.reload(); snap != nil {
		if committed(snap, c, archived) {
			return snap.Version, storekit.CommittedSegment(&c, &rec), nil, nil
		}
		v = snap.Version
	}
	// Best effort: when this fails too the attempt stays in progress, and
	// the next open records it as interrupted.
	_, _, _ = w.finish(v, c.CompactID, history.StatusFailed, err.Error())
	snap := w.reload()
	if snap != nil && committed(snap, c, archived) { // the first read-back had failed
		return snap.Version, storekit.CommittedSegment(&c, &rec), nil, nil
	}
	return 0, nil, snap, err
}

// committed reports whether snap shows commit c done (archived is the
// number of archived messages before it).
func committed(snap *history.Snapshot, c history.Commit, archived int64) bool {
	return snap.Summary == c.Summary && snap.Archived == archived+int64(c.Archive) && !slices.Contains(snap.Interrupted, c.CompactID)
}

// resync makes the loop's state equal to snap after a write that failed and
// did not land. A nil snap (the store could not be read either) marks the
// state stale: the loop reads the store again before its next piece of work.
func (l *loop) resync(snap *history.Snapshot) {
	if snap == nil {
		l.stale = true // read the store again before the next write
		return
	}
	l.stale = false
	l.version = snap.Version
	l.active = snap.Active
	l.activePlans = planCalls(l.active)
	l.summary = snap.Summary
	if snap.Archived != l.archived {
		l.filesStale = true // the archive changed: its files are read again before the next tool call
	}
	l.archived = snap.Archived
	l.setFiles(l.activeLedger())
	l.nextPos = snap.NextPosition
	if len(snap.Config) > 0 {
		var set settings
		if json.Unmarshal(snap.Config, &set) == nil {
			l.set = set
			l.publishSettings()
		}
	}
}

// reload reads the session back in the worker and adopts it. One attempt:
// when the store cannot be read, the state stays as it is and the next
// write fails or conflicts, which marks it stale again.
func (l *loop) reload() {
	l.stale = false
	w := l.writer()
	l.submit(func(progress) func(*loop) {
		snap := w.reload()
		return func(l *loop) {
			if snap != nil {
				l.resync(snap)
			}
		}
	})
}
