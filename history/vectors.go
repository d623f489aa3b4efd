package history

import (
	"context"
	"strings"
)

// VectorIndex keeps the vectors of an embedding model
// (provider.Embedder) for a session's messages, one per message, and
// finds the messages nearest to a vector: what session.Config.Embedder
// makes a session keep, so that Search finds a message said in other
// words. A session without an embedder never calls it, and nothing is
// stored.
//
// Its write is not versioned, like [EventLog]'s: it neither takes nor
// changes the session's version, so the session's embedder writes beside
// the session's loop without racing its versioned writes (a lease still
// fences it, as every write). A message's vector is a function of its
// text, which never changes, so writing it again is harmless: the write
// is idempotent, keyed by the message's position.
//
// A fork has the vectors its source had for the messages it inherits, as
// it has the messages (docs/storage.md, "Forks"); a vector the fork
// writes for such a message is its own, and never shows in the source.
type VectorIndex interface {
	// PutVectors stores vecs, each the vector of the message of the
	// session at vec.Position whose ID is vec.MessageID, in one
	// transaction; a vector the message had is replaced. An empty Vector
	// marks a message with nothing to embed (no text): Unembedded leaves
	// it out, and Nearest never finds it. It fails, writing nothing, with
	// ErrNotFound for an unknown session, with an error wrapping
	// ErrInvalid for a vector holding NaN or an infinity, a zero vector,
	// a vector longer than [MaxVectorDim], or two vectors of one
	// position, and with one wrapping ErrInvalid and [ErrUnknownMessage]
	// for a position where the session holds no message of that ID.
	PutVectors(ctx context.Context, id string, vecs []MessageVector) error
	// Unembedded returns the session's messages after position after
	// (-1 = from the start), Active and archived, that have no vector
	// yet, oldest first, at most limit of them (limit must be positive):
	// what an embedder configured after they were stored still has to
	// embed. It fails with ErrNotFound for an unknown session and with
	// an error wrapping ErrInvalid for a limit below 1.
	Unembedded(ctx context.Context, id string, after int64, limit int) ([]PositionedMessage, error)
	// Nearest returns the messages whose vectors are nearest q.Vector
	// (cosine similarity, as Score, highest first), at most q.Limit of
	// them; vectors of another dimension than q.Vector's are left out
	// (an embedding model changed). It fails with ErrNotFound for an
	// unknown session and with an error wrapping ErrInvalid for an empty
	// or zero vector, one holding NaN or an infinity, or a Limit outside
	// 0..MaxSearchLimit.
	Nearest(ctx context.Context, id string, q VectorQuery) ([]VectorHit, error)
}

// MaxVectorDim bounds the dimension of a stored vector.
const MaxVectorDim = 16384

// MessageVector is the vector of one message ([VectorIndex.PutVectors]).
type MessageVector struct {
	// Position is the message's timeline position; MessageID its ID.
	Position  int64
	MessageID string
	// Vector is what the embedder returned for [SearchText] of the
	// message; empty for a message with nothing to embed.
	Vector []float32
}

// PositionedMessage is a message and its timeline position.
type PositionedMessage struct {
	Position int64
	Message  Message
}

// VectorQuery is one nearest-vector search ([VectorIndex.Nearest]).
type VectorQuery struct {
	Vector []float32
	// Limit is the most hits; 0 = DefaultSearchLimit.
	Limit int
}

// VectorHit is one message [VectorIndex.Nearest] found.
type VectorHit struct {
	MessageID string
	Position  int64
	// Score is the cosine similarity of the message's vector and the
	// query's, -1 to 1 (higher is nearer), within the precision the store
	// keeps vectors in (about 1%: docs/storage.md, "Vectors").
	Score float64
}

// SearchText is what of m a search finds by its words, and what an
// embedder embeds of it: its text, then its tool calls as "name
// arguments" lines, and its attachments' names, URIs and text (an image's
// bytes never). Thoughts are not searched.
func SearchText(m *Message) string {
	if len(m.ToolCalls) == 0 && len(m.Attachments) == 0 {
		return m.Text
	}
	var b strings.Builder
	b.WriteString(m.Text)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.Write(c.Arguments)
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		for _, f := range [...]string{a.Name, a.URI, a.Text} {
			if f != "" {
				b.WriteByte('\n')
				b.WriteString(f)
			}
		}
	}
	return b.String()
}
