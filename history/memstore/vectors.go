package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/vecsearch"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// The vectors of history.VectorIndex: vecs[i] is the encoded vector of
// messages[i] (vecsearch), nil while it has none. A fork takes a copy of
// the source's slice up to the fork point: the vectors' bytes are shared,
// never copied, and a vector either session writes later is its own.

// PutVectors implements [history.VectorIndex].
func (s *Store) PutVectors(ctx context.Context, id string, vecs []history.MessageVector) error {
	if err := vecsearch.Check(vecs); err != nil {
		return err
	}
	return s.view(ctx, id, func(ss *session) error {
		at := make([]int, len(vecs))
		for k := range vecs {
			i, ok := slices.BinarySearch(ss.positions, vecs[k].Position)
			if !ok || ss.messages[i].ID != vecs[k].MessageID {
				return storekit.UnknownMessage(id, fmt.Sprintf("%s at %d", vecs[k].MessageID, vecs[k].Position))
			}
			at[k] = i
		}
		if n := len(ss.messages); len(ss.vecs) < n {
			ss.vecs = append(ss.vecs, make([][]byte, n-len(ss.vecs))...)
		}
		for k, i := range at {
			ss.vecs[i] = vecsearch.Encode(vecs[k].Vector)
		}
		return nil
	})
}

// Unembedded implements [history.VectorIndex].
func (s *Store) Unembedded(ctx context.Context, id string, after int64, limit int) ([]history.PositionedMessage, error) {
	if err := vecsearch.CheckLimit(limit); err != nil {
		return nil, err
	}
	var out []history.PositionedMessage
	err := s.view(ctx, id, func(ss *session) error {
		i, _ := slices.BinarySearch(ss.positions, after+1)
		for ; i < len(ss.messages) && len(out) < limit; i++ {
			if i >= len(ss.vecs) || ss.vecs[i] == nil {
				out = append(out, history.PositionedMessage{Position: ss.positions[i], Message: cloneMessages(ss.messages[i : i+1])[0]})
			}
		}
		return nil
	})
	return out, err
}

// Nearest implements [history.VectorIndex].
func (s *Store) Nearest(ctx context.Context, id string, vq history.VectorQuery) (hits []history.VectorHit, err error) {
	err = s.view(ctx, id, func(ss *session) error {
		hits, err = vecsearch.Nearest(vq, func(offer func(pos int64, enc []byte)) error {
			for i, enc := range ss.vecs {
				offer(ss.positions[i], enc)
			}
			return nil
		}, func(pos int64) (string, error) {
			i, _ := slices.BinarySearch(ss.positions, pos)
			return ss.messages[i].ID, nil
		})
		return err
	})
	return hits, err
}
