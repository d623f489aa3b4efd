package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// Times are stored as INTEGER unix nanoseconds, NULL for the zero time, and
// read back in UTC. Nanoseconds since 1970 fit an int64 from 1677-09-21 to
// 2262-04-11; other instants are rejected with history.ErrInvalid.
var (
	minTime = time.Unix(0, -1<<63)
	maxTime = time.Unix(0, 1<<63-1)
)

// encodeTime returns the column value of t.
func encodeTime(t time.Time) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return sql.NullInt64{}, fmt.Errorf("%w: time %v is outside the years 1678 to 2261", history.ErrInvalid, t)
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

// decodeTime is the inverse of encodeTime.
func decodeTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// toolCallJSON is the stored form of a [history.ToolCall]. The arguments are
// kept as a JSON string (not embedded JSON, which encoding/json would
// compact), so their bytes survive exactly; arguments that are not UTF-8 go
// to ArgumentsBase64 instead. Neither set means nil arguments.
type toolCallJSON struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Arguments       *string `json:"arguments,omitempty"`
	ArgumentsBase64 []byte  `json:"arguments_base64,omitempty"`
}

// messageRow is a message in column form, without its positions: its text
// and meta, the other fields in one value (see encodeMeta).
type messageRow struct {
	text string
	meta []byte
}

// The meta column of a message (schema version 3) holds every field but
// the text in one value, so that reading a message takes two column reads
// instead of seven (each one a locked call into the driver). It is a
// fixed header of ASCII characters and then the fields' bytes:
//
//	steer      '0' or '1'
//	tool calls 'n' (none: nil) or 'j' (a JSON array follows)
//	created    'n' (the zero time) or 't'
//	created_at 16 hex digits, unix nanoseconds as a two's complement uint64
//	lengths    8 hex digits each: id, role, tool_call_id, tool calls JSON
//	bytes      id, role, tool_call_id, tool calls JSON, back to back
//
// Migration 3 builds the same value in SQL from the columns of version 2,
// and TestMetaMatchesMigration checks that both agree.
const metaHeader = 3 + 16 + 4*8

// encodeMeta is the meta column of a message with those fields.
func encodeMeta(id, role, toolCallID string, toolCalls sql.NullString, steer bool, createdAt sql.NullInt64) []byte {
	b := make([]byte, 0, metaHeader+len(id)+len(role)+len(toolCallID)+len(toolCalls.String))
	b = append(b, mark(steer, '1', '0'), mark(toolCalls.Valid, 'j', 'n'), mark(createdAt.Valid, 't', 'n'))
	b = appendHex(b, uint64(createdAt.Int64), 16)
	for _, n := range []int{len(id), len(role), len(toolCallID), len(toolCalls.String)} {
		b = appendHex(b, uint64(n), 8)
	}
	b = append(b, id...)
	b = append(b, role...)
	b = append(b, toolCallID...)
	return append(b, toolCalls.String...)
}

// mark is yes if v, otherwise no.
func mark(v bool, yes, no byte) byte {
	if v {
		return yes
	}
	return no
}

const hexDigits = "0123456789abcdef"

// appendHex appends v as digits lowercase hex digits.
func appendHex(b []byte, v uint64, digits int) []byte {
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(4*i))&0xf])
	}
	return b
}

// parseHex reads a field of appendHex.
func parseHex(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
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

// errMeta reports a meta column that is not in the form of encodeMeta.
var errMeta = errors.New("malformed meta column")

// decodeMeta sets the fields of m that meta holds, and returns the tool
// calls' JSON.
func decodeMeta(meta []byte, m *history.Message) (toolCalls []byte, err error) {
	if len(meta) < metaHeader {
		return nil, errMeta
	}
	created, ok := parseHex(meta[3:19])
	if !ok {
		return nil, errMeta
	}
	var n [4]int
	rest := len(meta) - metaHeader
	for i := range n {
		v, ok := parseHex(meta[19+8*i : 27+8*i])
		if !ok || v > uint64(rest) {
			return nil, errMeta
		}
		n[i] = int(v)
		rest -= n[i]
	}
	if rest != 0 {
		return nil, errMeta
	}
	m.Steer = meta[0] == '1'
	if meta[2] == 't' {
		m.CreatedAt = time.Unix(0, int64(created)).UTC()
	}
	// One string for the fields, which share it (one allocation).
	f := string(meta[metaHeader : len(meta)-n[3]])
	m.ID, f = f[:n[0]], f[n[0]:]
	m.Role, f = history.Role(f[:n[1]]), f[n[1]:]
	m.ToolCallID = f[:n[2]]
	if meta[1] == 'j' {
		return meta[len(meta)-n[3]:], nil
	}
	return nil, nil
}

// encodeMessage converts m, already validated, to columns.
func encodeMessage(m *history.Message) (messageRow, error) {
	createdAt, err := encodeTime(m.CreatedAt)
	if err != nil {
		return messageRow{}, fmt.Errorf("message %s: %w", m.ID, err)
	}
	var toolCalls sql.NullString
	if m.ToolCalls != nil {
		calls := make([]toolCallJSON, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = toolCallJSON{ID: c.ID, Name: c.Name}
			switch {
			case c.Arguments == nil:
			case utf8.Valid(c.Arguments):
				s := string(c.Arguments)
				calls[i].Arguments = &s
			default:
				calls[i].ArgumentsBase64 = c.Arguments
			}
		}
		b, err := json.Marshal(calls)
		if err != nil {
			return messageRow{}, fmt.Errorf("%w: message %s tool calls: %v", history.ErrInvalid, m.ID, err)
		}
		toolCalls = sql.NullString{String: string(b), Valid: true}
	}
	return messageRow{text: m.Text, meta: encodeMeta(m.ID, string(m.Role), m.ToolCallID, toolCalls, m.Steer, createdAt)}, nil
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

// messageColumns are the columns decodeMessage scans, in order;
// activeColumns are the same without the position.
const (
	messageColumns = `pos, text, meta`
	activeColumns  = `text, meta`
)

// decodeMessage scans one row of messageColumns, or of activeColumns when
// pos is nil.
func decodeMessage(rows *sql.Rows, pos *int64) (history.Message, error) {
	var (
		m    history.Message
		meta sql.RawBytes // valid until the next row: decoded at once
		err  error
	)
	if pos != nil {
		err = rows.Scan(pos, &m.Text, &meta)
	} else {
		err = rows.Scan(&m.Text, &meta)
	}
	if err != nil {
		return m, err
	}
	toolCalls, err := decodeMeta(meta, &m)
	if err != nil {
		return m, err
	}
	if toolCalls != nil {
		var calls []toolCallJSON
		if err := json.Unmarshal(toolCalls, &calls); err != nil {
			return m, fmt.Errorf("message %s: tool calls: %w", m.ID, err)
		}
		m.ToolCalls = make([]history.ToolCall, len(calls))
		for i, c := range calls {
			m.ToolCalls[i] = history.ToolCall{ID: c.ID, Name: c.Name}
			switch {
			case c.Arguments != nil:
				m.ToolCalls[i].Arguments = json.RawMessage(*c.Arguments)
			case c.ArgumentsBase64 != nil:
				m.ToolCalls[i].Arguments = json.RawMessage(c.ArgumentsBase64)
			}
		}
	}
	return m, nil
}
