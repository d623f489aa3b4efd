package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// idsBound is the tail bound of the stores of the message-ID tests: an
// Append that leaves a tail of more than 5 messages indexes it.
const idsBound = 5

// idMessages makes one message per ID, each with its own text.
func idMessages(pairs ...string) []history.Message {
	var out []history.Message
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, history.Message{ID: pairs[i], Role: history.RoleUser, Text: pairs[i+1]})
	}
	return out
}

// idSession writes session s, whose first six messages are indexed and
// last five are its unindexed tail; s's store indexes only past idsBound
// (withIndexBound(idsBound), withoutIdleIndex()).
func idSession(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := s.Append(ctx, "s", snap.Version, idMessages("a", "a", "dup", "dup old", "x", "x old", "x", "x new", "c", "c", "w", "w"))
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", v, idMessages("b", "b", "dup", "dup new", "y", "y old", "y", "y new", "z", "z"))
	require.NoError(t, err)
}

// idFork writes fork f of idSession's s, made at s's first tail message,
// whose own two messages are its tail.
func idFork(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	f, err := s.Fork(ctx, history.ForkSpec{ID: "f", From: "s", At: "b"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "f", f.Version, idMessages("e", "e", "y", "y in f"))
	require.NoError(t, err)
}

// idsFound is the text of the message each Window finds by ID: the
// newest with that ID, along a fork's chain up to its fork point.
var idsFound = map[string]map[string]string{
	"s": {
		"a": "a", "c": "c", "x": "x new", // indexed
		"b": "b", "y": "y new", "z": "z", // the tail
		"dup": "dup new", // in both: the tail's is newer
	},
	"f": {
		"a": "a", "c": "c", "x": "x new", "dup": "dup old", // s's indexed messages: its tail's dup is after the fork point
		"b": "b",                // s's tail, up to the fork point
		"e": "e", "y": "y in f", // f's own tail: s's y are after the fork point
	},
}

// checkIDs checks that Window finds each message of idsFound by its ID,
// in session s and, with fork, in f, and no message by an ID the session
// does not hold.
func checkIDs(t *testing.T, s *Store, fork bool) {
	t.Helper()
	ctx := context.Background()
	for id, found := range idsFound {
		if id == "f" && !fork {
			continue
		}
		for msgID, text := range found {
			w, err := s.Window(ctx, id, history.WindowQuery{Around: msgID})
			require.NoError(t, err, "%s: %s", id, msgID)
			require.Len(t, w, 1, "%s: %s", id, msgID)
			assert.Equal(t, text, w[0].Message.Text, "%s: %s", id, msgID)
		}
		_, err := s.Window(ctx, id, history.WindowQuery{Around: "none"})
		assert.ErrorIs(t, err, history.ErrUnknownMessage, id)
	}
	if !fork {
		return
	}
	_, err := s.Window(ctx, "f", history.WindowQuery{Around: "z"})
	assert.ErrorIs(t, err, history.ErrUnknownMessage, "s's messages after the fork point are not f's")
}

// idRows is how many message_ids rows session id has.
func idRows(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM message_ids WHERE session_id = ?`, id).Scan(&n))
	return n
}

// TestWindowFindsByID: Window finds a message by its ID in the unindexed
// tail (read from messages) and in the indexed part (message_ids), the
// newest when an ID repeats in both, and in a fork along its parent's
// link; once the committer has indexed every tail, the same IDs find the
// same messages, through message_ids alone, which holds exactly the
// indexed messages.
func TestWindowFindsByID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path, withIndexBound(idsBound), withoutIdleIndex())
	idSession(t, s)
	checkIDs(t, s, false)
	idFork(t, s)
	indexed, messages, _ := indexState(t, s, "s")
	require.Equal(t, [2]int64{6, 11}, [2]int64{indexed, messages})
	assert.Equal(t, [2]int64{6, 0}, [2]int64{idRows(t, s, "s"), idRows(t, s, "f")}, "the indexed messages only")
	checkIDs(t, s, true)
	require.NoError(t, s.Close())

	// Reopened: the committer indexes both tails at its first idle time.
	done := make(chan int, 16)
	s = open(t, path, withOnIndexed(func(n int) { done <- n }))
	for total := 0; total < 7; {
		select {
		case n := <-done:
			total += n
		case <-time.After(time.Minute):
			t.Fatal("the tails were not indexed")
		}
	}
	for id, want := range map[string][3]int64{"s": {11, 11, 11}, "f": {9, 9, 2}} {
		indexed, messages, _ := indexState(t, s, id)
		assert.Equal(t, want, [3]int64{indexed, messages, idRows(t, s, id)}, id)
	}
	checkIDs(t, s, true)
}

// TestMessageIDsMigration: migration 20 fills message_ids with the
// messages indexed for search and drops the index messages_id; Window
// finds by ID as before it, the tails included. The file at version 19
// is this package's file with what migration 20 did undone (its table
// dropped, the index of migration 12 made again): the indexer of this
// package writes message_ids, so a store at 19 cannot index.
func TestMessageIDsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path, withIndexBound(idsBound), withoutIdleIndex())
	idSession(t, s)
	idFork(t, s)
	_, err := s.w.Exec(`DROP TABLE message_ids; ` + migrations[11] + ` UPDATE schema_version SET version = 19;`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, 19, readSchemaVersion(t, path))

	s = open(t, path, withIndexBound(idsBound), withoutIdleIndex())
	assert.Equal(t, len(migrations), readSchemaVersion(t, path))
	assert.Equal(t, [2]int64{6, 0}, [2]int64{idRows(t, s, "s"), idRows(t, s, "f")}, "the indexed messages only")
	var index int
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'messages_id'`).Scan(&index))
	assert.Zero(t, index, "messages_id is dropped")
	checkIDs(t, s, true)
}
