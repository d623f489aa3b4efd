package sqlstore

import (
	"fmt"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// ForkSource is the sessions row of a fork's source as Fork reads it.
type ForkSource struct {
	// NextPos and Count are the source's next timeline position and the
	// number of messages it ever appended.
	NextPos, Count int64
	Config         []byte
	// Title is the source's title, defaulted from its first message.
	Title, Cwd string
}

// ForkRow is the sessions row of a fork as Fork has the store write it.
type ForkRow struct {
	Config              []byte
	Title, Cwd, Summary string
	// ActiveFrom and Archived are the state at the fork point: the first
	// position of Active and the number of archived messages.
	ActiveFrom, Archived int64
	// At is the fork point, the source's position the fork's timeline ends
	// at; N the number of messages the fork inherits, ForkAt the ID of the
	// last of them ("" for none).
	At, N  int64
	ForkAt string
}

// ForkSteps are the statements of a store's Fork, run in one transaction
// T of the fork's ID. Each returns its errors as the store reports them.
type ForkSteps[T any] struct {
	// Source reads the source's sessions row (history.ErrNotFound for none,
	// or a deleted one) and its chain, which the other steps read along.
	Source func(T) (ForkSource, error)
	// Taken reports whether a session has the fork's ID.
	Taken func(T) (bool, error)
	// Find looks message msgID up along the source's chain.
	Find func(tx T, msgID string) (pos, seq int64, found bool, err error)
	// Inside reads the ID of a compaction of the source that the fork
	// point at lies inside (see forkPoint), if there is one.
	Inside func(tx T, at int64) (compactID string, found bool, err error)
	// Standing reads the newest Segment of the source standing at the fork
	// point: Active's first position then, the archived messages and the
	// summary (0, 0 and "" for none).
	Standing func(tx T, at int64) (activeFrom, archived int64, summary string, err error)
	// MessageID reads the ID of the source's message whose seq is seq.
	MessageID func(tx T, seq int64) (string, error)
	// Write writes the fork's sessions row and its compaction and
	// configuration records up to the fork point (a Segment undone after
	// the fork point stands in the fork); a session created with the
	// fork's ID meanwhile is history.ErrExists.
	Write func(T, *ForkRow) error
}

// Fork is history.Catalog's Fork (docs/storage.md, "Forks"): spec is
// checked (storekit.CheckFork), then write runs the store's transaction of
// the fork's ID, which reads the source, finds the fork point (forkPoint)
// and the state there, and writes the fork's row with spec's
// configuration, title and working directory where it gives them, the
// source's otherwise. It returns the fork's snapshot.
func Fork[T any](spec history.ForkSpec, write func(func(T) error) error, f ForkSteps[T]) (*history.Snapshot, error) {
	if err := storekit.CheckFork(&spec); err != nil {
		return nil, err
	}
	var snap *history.Snapshot
	err := write(func(tx T) error {
		src, err := f.Source(tx)
		if err != nil {
			return err
		}
		switch taken, err := f.Taken(tx); {
		case err != nil:
			return err
		case taken:
			return fmt.Errorf("%w: %q", history.ErrExists, spec.ID)
		}
		r := ForkRow{Config: src.Config, Title: src.Title, Cwd: src.Cwd}
		r.At, r.N, err = forkPoint(&spec, src.NextPos, src.Count, func(msgID string) (int64, int64, bool, error) {
			return f.Find(tx, msgID)
		}, func(at int64) (string, bool, error) { return f.Inside(tx, at) })
		if err != nil {
			return err
		}
		if r.ActiveFrom, r.Archived, r.Summary, err = f.Standing(tx, r.At); err != nil {
			return err
		}
		if r.N > 0 {
			if r.ForkAt, err = f.MessageID(tx, r.N-1); err != nil {
				return err
			}
		}
		if spec.Config != nil {
			r.Config = spec.Config
		}
		if spec.Title != "" {
			r.Title = spec.Title
		}
		if spec.Cwd != "" {
			r.Cwd = spec.Cwd
		}
		if err := f.Write(tx, &r); err != nil {
			return err
		}
		snap = &history.Snapshot{ID: spec.ID, Version: 1, Config: r.Config, Summary: r.Summary, Title: r.Title, Cwd: r.Cwd,
			Archived: r.Archived, NextPosition: r.At + 1, ForkOf: spec.From, ForkAt: r.ForkAt, ForkPosition: r.At}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// forkPoint is where a fork of spec.From starts: the fork point at, the
// source's position the fork's timeline ends at, and n, the number of
// messages it inherits. Without spec.At it is the source's end (its next
// position and message count, nextPos and count); otherwise the position
// of message spec.At, which find looks up along the source's chain
// (history.ErrUnknownMessage when it is not there). A fork point inside a
// compaction (in progress, or archiving messages after it) is refused
// with history.ErrForkInCompaction: inside reads that compaction's ID, if
// there is one. find and inside report errors as the store does.
func forkPoint(spec *history.ForkSpec, nextPos, count int64, find func(msgID string) (pos, seq int64, found bool, err error), inside func(at int64) (compactID string, found bool, err error)) (at, n int64, err error) {
	at, n = nextPos-1, count
	if spec.At != "" {
		pos, seq, found, err := find(spec.At)
		switch {
		case err != nil:
			return 0, 0, err
		case !found:
			return 0, 0, storekit.UnknownMessage(spec.From, spec.At)
		}
		at, n = pos, seq+1
	}
	switch compactID, found, err := inside(at); {
	case err != nil:
		return 0, 0, err
	case found:
		return 0, 0, storekit.ForkInCompaction(spec.From, at, compactID)
	}
	return at, n, nil
}
