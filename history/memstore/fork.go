package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Fork implements [history.Catalog]. The fork shares the source's
// messages in memory up to the fork point (the slices' backing arrays,
// capped there, so that the fork's first append copies them and not the
// other way round); its compaction records, Segments and records up to
// the fork point are the source's as they stood then: a Segment undone
// after the fork point stands in the fork.
func (s *Store) Fork(ctx context.Context, spec history.ForkSpec) (*history.Snapshot, error) {
	if err := storekit.CheckFork(&spec); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := s.get(ctx, spec.From)
	if err != nil {
		return nil, err
	}
	if _, ok := s.sessions[spec.ID]; ok {
		return nil, fmt.Errorf("%w: %q", history.ErrExists, spec.ID)
	}
	// at is the fork point, n the number of messages inherited.
	at, n := src.nextPos-1, len(src.messages)
	if spec.At != "" {
		i := len(src.messages) - 1
		for i >= 0 && src.messages[i].ID != spec.At {
			i--
		}
		if i < 0 {
			return nil, storekit.UnknownMessage(spec.From, spec.At)
		}
		at, n = src.positions[i], i+1
	}
	fork := &session{version: 1, nextPos: at + 1, forkOf: spec.From, forkPos: at}
	if n > 0 {
		fork.forkAt = src.messages[n-1].ID
	}
	for _, c := range src.compactions {
		if c.Position > at {
			break
		}
		if c.Status == history.StatusInProgress {
			return nil, storekit.ForkInCompaction(spec.From, at, c.CompactID)
		}
		fork.compactions = append(fork.compactions, c)
	}
	undone := map[string]bool{} // the compactions undone up to the fork point
	for _, u := range src.undos {
		if u.Position <= at {
			fork.undos = append(fork.undos, u)
			undone[u.CompactID] = true
		}
	}
	for _, g := range src.segments {
		if g.seg.Position > at {
			continue
		}
		if g.upto > n {
			return nil, storekit.ForkInCompaction(spec.From, at, g.seg.CompactID)
		}
		g.seg.Fidelity = g.seg.Fidelity.Clone()
		g.seg.Files = slices.Clone(g.seg.Files)
		if !undone[g.seg.CompactID] {
			g.seg.UndoID, g.seg.UndoneAt = "", time.Time{}
			fork.activeFrom, fork.summary = g.upto, g.seg.Summary
		}
		fork.segments = append(fork.segments, g)
	}
	for _, c := range src.configs {
		if c.Position <= at {
			fork.configs = append(fork.configs, c)
		}
	}
	fork.messages, fork.positions, fork.tools = src.messages[:n:n], src.positions[:n:n], src.tools[:n:n]
	fork.vecs = slices.Clone(src.vecs[:min(n, len(src.vecs))])
	fork.words = make(map[string][]int, len(src.words))
	for t, l := range src.words {
		if k, _ := slices.BinarySearch(l, n); k > 0 {
			fork.words[t] = l[:k:k]
		}
	}
	fork.config = slices.Clone(src.config)
	if spec.Config != nil {
		fork.config = slices.Clone(spec.Config)
	}
	fork.title, fork.cwd = spec.Title, spec.Cwd
	if fork.title == "" {
		fork.title = src.titled()
	}
	if fork.cwd == "" {
		fork.cwd = src.cwd
	}
	fork.created = time.Now().Round(0)
	fork.updated = fork.created
	s.sessions[spec.ID] = fork
	snap := fork.snapshot(spec.ID)
	snap.Active = nil
	return snap, nil
}
