// Package vecsearch is what the stores of sessionkit do alike with the
// vectors of history.VectorIndex: check them, encode them for storage, and
// find the nearest ones by brute force, so that the three stores keep the
// same bytes and rank alike.
//
// A vector is stored as 4 + dim bytes: the float32 (little endian) that
// scales its components back, then each component as an int8, the
// largest one ±127. Cosine similarity computed from that encoding is
// within about 1% of the float32 one, which changes no ranking that
// matters to a fused search and takes a quarter of the bytes. An empty
// encoding marks a message with nothing to embed.
package vecsearch

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/sessionkit/sessionkit/history"
)

// Check reports the first problem of vecs (see [history.VectorIndex]
// PutVectors) as an error wrapping history.ErrInvalid.
func Check(vecs []history.MessageVector) error {
	seen := make(map[int64]bool, len(vecs))
	for i := range vecs {
		v := &vecs[i]
		if seen[v.Position] {
			return fmt.Errorf("%w: two vectors of position %d", history.ErrInvalid, v.Position)
		}
		seen[v.Position] = true
		if len(v.Vector) == 0 {
			continue
		}
		if err := checkVector(v.Vector); err != nil {
			return fmt.Errorf("%w: vector of message %q at %d: %v", history.ErrInvalid, v.MessageID, v.Position, err)
		}
	}
	return nil
}

// checkVector reports why v cannot be kept or searched with.
func checkVector(v []float32) error {
	if len(v) > history.MaxVectorDim {
		return fmt.Errorf("%d dimensions, more than %d", len(v), history.MaxVectorDim)
	}
	zero := true
	for j, x := range v {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("it holds %v at %d", x, j)
		}
		zero = zero && x == 0
	}
	if zero {
		return fmt.Errorf("it is a zero vector")
	}
	return nil
}

// Encode returns the stored form of v, which [Check] passed; nil (the
// mark of nothing to embed) for an empty v.
func Encode(v []float32) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	var top float64
	for _, x := range v {
		top = max(top, math.Abs(float64(x)))
	}
	out := make([]byte, 4+len(v))
	var norm float64
	for i, x := range v {
		q := int8(math.Round(float64(x) / top * 127))
		out[4+i] = byte(q)
		norm += float64(q) * float64(q)
	}
	binary.LittleEndian.PutUint32(out, math.Float32bits(float32(1/math.Sqrt(norm))))
	return out
}

// Dim is the dimension of an encoded vector; 0 for the mark of nothing
// to embed.
func Dim(enc []byte) int { return max(0, len(enc)-4) }

// Query is a vector to search with, normalized.
type Query []float32

// NewQuery checks q (history.VectorQuery) and normalizes its vector; the
// error wraps history.ErrInvalid.
func NewQuery(q history.VectorQuery) (Query, int, error) {
	switch {
	case len(q.Vector) == 0:
		return nil, 0, fmt.Errorf("%w: nearest: the query vector is empty", history.ErrInvalid)
	case q.Limit < 0 || q.Limit > history.MaxSearchLimit:
		return nil, 0, fmt.Errorf("%w: nearest: Limit %d is outside 0..%d", history.ErrInvalid, q.Limit, history.MaxSearchLimit)
	}
	if err := checkVector(q.Vector); err != nil {
		return nil, 0, fmt.Errorf("%w: nearest: the query vector: %v", history.ErrInvalid, err)
	}
	var norm float64
	for _, x := range q.Vector {
		norm += float64(x) * float64(x)
	}
	out := make(Query, len(q.Vector))
	for i, x := range q.Vector {
		out[i] = float32(float64(x) / math.Sqrt(norm))
	}
	limit := q.Limit
	if limit == 0 {
		limit = history.DefaultSearchLimit
	}
	return out, limit, nil
}

// Score is the cosine similarity of q and the encoded vector enc; ok is
// false for a vector of another dimension (or the mark of nothing to
// embed).
func (q Query) Score(enc []byte) (score float64, ok bool) {
	if len(enc) != 4+len(q) {
		return 0, false
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(enc))
	b := enc[4 : 4+len(q)]
	var d0, d1, d2, d3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		d0 += q[i] * float32(int8(b[i]))
		d1 += q[i+1] * float32(int8(b[i+1]))
		d2 += q[i+2] * float32(int8(b[i+2]))
		d3 += q[i+3] * float32(int8(b[i+3]))
	}
	for ; i < len(q); i++ {
		d0 += q[i] * float32(int8(b[i]))
	}
	return float64((d0 + d1 + d2 + d3) * scale), true
}

// Top keeps the best hits offered to it: the highest scores, the later
// position first among equal ones.
type Top struct {
	k    int
	hits []history.VectorHit
}

// NewTop returns a Top of k hits.
func NewTop(k int) *Top { return &Top{k: k} }

// Offer considers the message at pos whose encoded vector is enc.
func (t *Top) Offer(q Query, pos int64, enc []byte) {
	s, ok := q.Score(enc)
	if !ok {
		return
	}
	if len(t.hits) == t.k {
		w := &t.hits[len(t.hits)-1]
		if s < w.Score || s == w.Score && pos < w.Position {
			return
		}
	}
	h := history.VectorHit{Position: pos, Score: s}
	i, _ := slices.BinarySearchFunc(t.hits, h, better)
	t.hits = slices.Insert(t.hits, i, h)
	if len(t.hits) > t.k {
		t.hits = t.hits[:t.k]
	}
}

// better orders hits best first.
func better(a, b history.VectorHit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(b.Position, a.Position)
}

// Hits returns the hits kept, best first.
func (t *Top) Hits() []history.VectorHit {
	if t.hits == nil {
		return []history.VectorHit{}
	}
	return t.hits
}

// Nearest is a store's [history.VectorIndex] Nearest once it has found
// the session: scan offers every vector of the session's messages (its
// encoding, valid during the call only), and idOf reads the ID of each
// message kept.
func Nearest(vq history.VectorQuery, scan func(offer func(pos int64, enc []byte)) error, idOf func(pos int64) (string, error)) ([]history.VectorHit, error) {
	q, limit, err := NewQuery(vq)
	if err != nil {
		return nil, err
	}
	top := NewTop(limit)
	if err := scan(func(pos int64, enc []byte) { top.Offer(q, pos, enc) }); err != nil {
		return nil, err
	}
	hits := top.Hits()
	for k := range hits {
		if hits[k].MessageID, err = idOf(hits[k].Position); err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// CheckLimit checks the limit of [history.VectorIndex] Unembedded.
func CheckLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("%w: unembedded: limit %d is below 1", history.ErrInvalid, limit)
	}
	return nil
}
