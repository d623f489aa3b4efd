// Package logref is the form in which a session's event log names a
// stored message (the Data of a logged event of kind "message",
// docs/design.md §6.1): its timeline position, its ID and the turn it
// belongs to. The session writes it and reads it back for every message
// of a replay; cmd/sessionkit reads the position for its live pages.
//
// The form is text, "POS LEN ID TURN": the position and the ID's length in
// decimal, each followed by a space, then the ID's bytes and the turn ID's
// (the rest). Logs written before it hold a JSON object
// ({"position":…,"id":…,"turn_id":…}), which Parse reads too: the two are
// told apart by the first byte ('{' is never a digit or a minus sign).
package logref

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Append appends the reference of the message at position pos, of ID id,
// of turn turnID ("" for none), to b.
func Append(b []byte, pos int64, id, turnID string) []byte {
	b = strconv.AppendInt(b, pos, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(id)), 10)
	b = append(b, ' ')
	b = append(b, id...)
	return append(b, turnID...)
}

// Ref is a parsed reference. ID and TurnID are parts of the data parsed
// (or of the decoded JSON): copy them to keep them.
type Ref struct {
	Position   int64
	ID, TurnID []byte
}

// errForm is the error of data in neither form.
var errForm = errors.New("malformed message reference")

// Parse reads a reference in either form.
func Parse(data []byte) (Ref, error) {
	if len(data) > 0 && data[0] == '{' {
		var j struct {
			Position *int64 `json:"position"`
			ID       string `json:"id"`
			TurnID   string `json:"turn_id"`
		}
		if err := json.Unmarshal(data, &j); err != nil {
			return Ref{}, err
		}
		if j.Position == nil {
			return Ref{}, errForm
		}
		return Ref{Position: *j.Position, ID: []byte(j.ID), TurnID: []byte(j.TurnID)}, nil
	}
	pos, rest, ok := field(data)
	if !ok {
		return Ref{}, errForm
	}
	n, rest, ok := field(rest)
	if !ok || n < 0 || n > int64(len(rest)) {
		return Ref{}, errForm
	}
	return Ref{Position: pos, ID: rest[:n:n], TurnID: rest[n:]}, nil
}

// field reads a decimal number ended by a space off the front of b.
func field(b []byte) (int64, []byte, bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 || i > 20 {
		return 0, nil, false
	}
	v, err := strconv.ParseInt(string(b[:i]), 10, 64)
	return v, b[i+1:], err == nil
}
