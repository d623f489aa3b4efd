package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// encodeTime returns the INTEGER column value of t (sqlstore.UnixNano).
func encodeTime(t time.Time) (sql.NullInt64, error) {
	n, valid, err := sqlstore.UnixNano(t)
	return sql.NullInt64{Int64: n, Valid: valid}, err
}

// decodeTime is the inverse of encodeTime.
func decodeTime(n sql.NullInt64) time.Time { return sqlstore.FromUnixNano(n.Int64, n.Valid) }

// toolCallJSON is the stored form of a [history.ToolCall]; its arguments
// are split by sqlstore.Arguments.
type toolCallJSON struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Arguments       *string `json:"arguments,omitempty"`
	ArgumentsBase64 []byte  `json:"arguments_base64,omitempty"`
}

// messageRow is a message in column form, without its positions: its body
// (see encodeBody).
type messageRow struct {
	body []byte
}

// The body column of a message (schema version 3) holds all its fields in
// one value, so that reading a message takes one column read instead of
// seven (each one a locked call into the driver) and one string for all its
// text fields. It is a fixed header of ASCII characters and then the
// fields' bytes:
//
//	steer      '0' or '1'
//	tool calls 'n' (none: nil), 'j' (the JSON is the tool calls' array),
//	           'a' (the JSON is the attachments' array, sqlstore.Attachments;
//	           a user message's, which has no tool calls) or 'f' (the JSON
//	           is the files' array, sqlstore.Files; a tool message's) or
//	           'r' (the JSON is an assistant message's tool calls and
//	           thoughts, reasonedJSON)
//	created    'n' (the zero time) or 't'
//	created_at 16 hex digits, unix nanoseconds as a two's complement uint64
//	lengths    10 decimal digits each: id, role, tool_call_id, JSON
//	bytes      id, role, tool_call_id, JSON, then the text to the end
//
// Marker 'a' came with schema version 8, so that a sessionkit that does not
// know it refuses the file (ErrNewerSchema) rather than find its bodies
// malformed; marker 'f' came with schema version 14 and 'r' with 15 for
// the same reason.
// Migration 3 builds the same value in SQL from the columns of version 2
// (TestBodyMatchesMigration checks that both agree), and titleColumn reads
// the text of a session's first message out of it.
const bodyHeader = 3 + 16 + 4*10

// encodeBody is the body column of a message with those fields.
// kind is the marker of the JSON ('j', 'a', 'f' or 'r'; ignored when toolCalls is not
// valid).
func encodeBody(id, role, toolCallID, text string, toolCalls sql.NullString, kind byte, steer bool, createdAt sql.NullInt64) []byte {
	b := make([]byte, 0, bodyHeader+len(id)+len(role)+len(toolCallID)+len(toolCalls.String)+len(text))
	b = append(b, mark(steer, '1', '0'), mark(toolCalls.Valid, kind, 'n'), mark(createdAt.Valid, 't', 'n'))
	b = appendHex(b, uint64(createdAt.Int64))
	for _, n := range []int{len(id), len(role), len(toolCallID), len(toolCalls.String)} {
		b = appendDec(b, uint64(n))
	}
	b = append(b, id...)
	b = append(b, role...)
	b = append(b, toolCallID...)
	b = append(b, toolCalls.String...)
	return append(b, text...)
}

// mark is yes if v, otherwise no.
func mark(v bool, yes, no byte) byte {
	if v {
		return yes
	}
	return no
}

const hexDigits = "0123456789abcdef"

// appendHex appends v as 16 lowercase hex digits.
func appendHex(b []byte, v uint64) []byte {
	for i := 15; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(4*i))&0xf])
	}
	return b
}

// appendDec appends v, below 10^10, as 10 decimal digits.
func appendDec(b []byte, v uint64) []byte {
	var d [10]byte
	for i := 9; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:]...)
}

// parseHex reads a field of appendHex.
func parseHex[T ~string | ~[]byte](b T) (uint64, bool) {
	var v uint64
	for i := range len(b) {
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// parseDec reads a field of appendDec.
func parseDec[T ~string | ~[]byte](b T) (uint64, bool) {
	var v uint64
	for i := range len(b) {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// errBody reports a body column that is not in the form of encodeBody.
var errBody = errors.New("malformed message body")

// decodeBody sets the fields of m from body, attachments included, and
// returns the tool calls' JSON (nil or "" for none). A body read as a
// string (Load's, see activeColumns) is not copied: the text fields are
// substrings of it.
func decodeBody[T ~string | ~[]byte](body T, m *history.Message) (toolCalls T, err error) {
	if len(body) < bodyHeader || body[0] != '0' && body[0] != '1' || body[1] != 'n' && body[1] != 'j' && body[1] != 'a' && body[1] != 'f' && body[1] != 'r' || body[2] != 'n' && body[2] != 't' {
		return toolCalls, errBody
	}
	created, ok := parseHex(body[3:19])
	if !ok {
		return toolCalls, errBody
	}
	var n [4]int
	rest := len(body) - bodyHeader
	for i := range n {
		v, ok := parseDec(body[19+10*i : 29+10*i])
		if !ok || v > uint64(rest) {
			return toolCalls, errBody
		}
		n[i] = int(v)
		rest -= n[i]
	}
	m.Steer = body[0] == '1'
	if body[2] == 't' {
		m.CreatedAt = time.Unix(0, int64(created)).UTC()
	}
	// One string for the text fields, which share it (no allocation when
	// body is a string, one otherwise); the tool calls' JSON is decoded from
	// its bytes.
	calls := body[bodyHeader+n[0]+n[1]+n[2] : bodyHeader+n[0]+n[1]+n[2]+n[3]]
	f := string(body[bodyHeader:])
	m.ID, f = f[:n[0]], f[n[0]:]
	m.Role, f = history.Role(f[:n[1]]), f[n[1]:]
	m.ToolCallID, f = f[:n[2]], f[n[2]:]
	m.Text = f[n[3]:]
	switch body[1] {
	case 'j':
		return calls, nil
	case 'a':
		if m.Attachments, err = sqlstore.FromAttachments([]byte(calls)); err != nil {
			return toolCalls, fmt.Errorf("message %s: attachments: %w", m.ID, err)
		}
	case 'f':
		if m.Files, err = sqlstore.FromFiles([]byte(calls)); err != nil {
			return toolCalls, fmt.Errorf("message %s: files: %w", m.ID, err)
		}
	case 'r':
		var r reasonedJSON
		if err := json.Unmarshal([]byte(calls), &r); err != nil {
			return toolCalls, fmt.Errorf("message %s: thoughts: %w", m.ID, err)
		}
		if m.Thoughts, err = sqlstore.FromThoughts(r.Thoughts); err != nil {
			return toolCalls, fmt.Errorf("message %s: thoughts: %w", m.ID, err)
		}
		if r.Calls != nil {
			m.ToolCalls = fromCallsJSON(r.Calls)
		}
	}
	return toolCalls, nil
}

// reasonedJSON is the JSON of marker 'r': an assistant message's tool
// calls (null for none) and its thoughts (sqlstore.Thoughts).
type reasonedJSON struct {
	Calls    []toolCallJSON  `json:"calls"`
	Thoughts json.RawMessage `json:"thoughts"`
}

// fromCallsJSON converts stored tool calls.
func fromCallsJSON(calls []toolCallJSON) []history.ToolCall {
	out := make([]history.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = history.ToolCall{ID: c.ID, Name: c.Name, Arguments: sqlstore.FromArguments(c.Arguments, c.ArgumentsBase64)}
	}
	return out
}

// decodeText decodes a message's body read as a string (the scans of
// messageColumns and activeColumns, Store.scan) into m, in place in the
// slice Store.scan fills (returning the Message, 144 bytes, and appending
// it copied it once more a row): its text fields share body, nothing is
// copied.
func decodeText(body string, m *history.Message) error {
	toolCalls, err := decodeBody(body, m)
	if err != nil {
		return err
	}
	if body[1] == 'j' {
		var calls []toolCallJSON
		if err := json.Unmarshal([]byte(toolCalls), &calls); err != nil {
			return fmt.Errorf("message %s: tool calls: %w", m.ID, err)
		}
		m.ToolCalls = fromCallsJSON(calls)
	}
	return nil
}

// encodeMessage converts m, already validated, to columns.
func encodeMessage(m *history.Message) (messageRow, error) {
	createdAt, err := encodeTime(m.CreatedAt)
	if err != nil {
		return messageRow{}, fmt.Errorf("message %s: %w", m.ID, err)
	}
	var (
		toolCalls sql.NullString
		calls     []toolCallJSON
	)
	if m.ToolCalls != nil {
		calls = make([]toolCallJSON, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = toolCallJSON{ID: c.ID, Name: c.Name}
			calls[i].Arguments, calls[i].ArgumentsBase64 = sqlstore.Arguments(c.Arguments)
		}
		b, err := json.Marshal(calls)
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s tool calls: %v", history.ErrInvalid, m.ID, err)
		}
		toolCalls = sql.NullString{String: string(b), Valid: true}
	}
	kind := byte('j')
	if len(m.Thoughts) > 0 {
		// Validate let only an assistant message carry thoughts: with its
		// tool calls, they take the JSON's place.
		th, err := sqlstore.Thoughts(m.Thoughts)
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s thoughts: %v", history.ErrInvalid, m.ID, err)
		}
		b, err := sqlstore.Marshal(reasonedJSON{Calls: calls, Thoughts: th})
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s thoughts: %v", history.ErrInvalid, m.ID, err)
		}
		toolCalls, kind = sql.NullString{String: string(b), Valid: true}, 'r'
	}
	if m.Attachments != nil {
		// Validate let only a user message, which has no tool calls, carry
		// attachments: they take the JSON's place.
		b, err := sqlstore.Attachments(m.Attachments)
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s attachments: %v", history.ErrInvalid, m.ID, err)
		}
		toolCalls, kind = sql.NullString{String: string(b), Valid: b != nil}, 'a'
	}
	if m.Files != nil {
		// Validate let only a tool message, which has neither tool calls
		// nor attachments, record files: they take the JSON's place.
		b, err := sqlstore.Files(m.Files)
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s files: %v", history.ErrInvalid, m.ID, err)
		}
		toolCalls, kind = sql.NullString{String: string(b), Valid: b != nil}, 'f'
	}
	return messageRow{body: encodeBody(m.ID, string(m.Role), m.ToolCallID, m.Text, toolCalls, kind, m.Steer, createdAt)}, nil
}

// encodeMessages converts msgs, already validated, to columns.
func encodeMessages(msgs []history.Message) ([]messageRow, error) {
	rows := make([]messageRow, len(msgs))
	for i := range msgs {
		var err error
		if rows[i], err = encodeMessage(&msgs[i]); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// messageColumns are the columns Store.scan reads (and decodeText
// decodes), in order; activeColumns are the same without the position.
// The body is read as
// TEXT: the driver hands it over as a string (one copy out of SQLite),
// which the message's fields share, where a BLOB would be copied twice
// (into a []byte by the driver, then into the string). In a UTF-8
// database (every file Open creates: SQLite's default encoding, which this
// package never changes) the cast only retypes the bytes: any bytes, NUL
// and invalid UTF-8 included, come back as stored (TestBodyBytesRoundTrip).
const (
	messageColumns = `pos, CAST(body AS TEXT)`
	activeColumns  = `CAST(body AS TEXT)`
)

// decodeMessage scans one row of messageColumns, or of activeColumns (or
// the body column alone) when pos is nil: a row at a time, where Store.scan
// reads many with decodeText.
func decodeMessage(rows rowScanner, pos *int64) (history.Message, error) {
	var (
		m    history.Message
		body sql.RawBytes // valid until the next row: decoded at once
		err  error
	)
	if pos != nil {
		err = rows.Scan(pos, &body)
	} else {
		err = rows.Scan(&body)
	}
	if err != nil {
		return m, err
	}
	return m, decodeBodyCalls(body, &m)
}

// decodeBodyCalls sets the fields of m from body, tool calls included.
func decodeBodyCalls(body []byte, m *history.Message) error {
	toolCalls, err := decodeBody(body, m)
	if err != nil {
		return err
	}
	if toolCalls != nil {
		var calls []toolCallJSON
		if err := json.Unmarshal(toolCalls, &calls); err != nil {
			return fmt.Errorf("message %s: tool calls: %w", m.ID, err)
		}
		m.ToolCalls = fromCallsJSON(calls)
	}
	return nil
}
