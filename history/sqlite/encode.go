package sqlite

import (
	"database/sql"
	"encoding/json"
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

// messageRow is a message in column form, without its positions.
type messageRow struct {
	id, role, text, toolCallID string
	toolCalls                  sql.NullString
	steer                      bool
	createdAt                  sql.NullInt64
}

// encodeMessage converts m, already validated, to columns.
func encodeMessage(m *history.Message) (messageRow, error) {
	row := messageRow{id: m.ID, role: string(m.Role), text: m.Text, toolCallID: m.ToolCallID, steer: m.Steer}
	var err error
	if row.createdAt, err = encodeTime(m.CreatedAt); err != nil {
		return row, fmt.Errorf("message %s: %w", m.ID, err)
	}
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
			return row, fmt.Errorf("%w: message %s tool calls: %v", history.ErrInvalid, m.ID, err)
		}
		row.toolCalls = sql.NullString{String: string(b), Valid: true}
	}
	return row, nil
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

// messageColumns are the columns decodeMessage scans, in order.
const messageColumns = `pos, id, role, text, tool_calls, tool_call_id, steer, created_at`

// decodeMessage scans one row of messageColumns.
func decodeMessage(rows *sql.Rows) (int64, history.Message, error) {
	var (
		pos int64
		r   messageRow
		m   history.Message
	)
	if err := rows.Scan(&pos, &r.id, &r.role, &r.text, &r.toolCalls, &r.toolCallID, &r.steer, &r.createdAt); err != nil {
		return 0, m, err
	}
	m = history.Message{ID: r.id, Role: history.Role(r.role), Text: r.text, ToolCallID: r.toolCallID, Steer: r.steer, CreatedAt: decodeTime(r.createdAt)}
	if r.toolCalls.Valid {
		var calls []toolCallJSON
		if err := json.Unmarshal([]byte(r.toolCalls.String), &calls); err != nil {
			return 0, m, fmt.Errorf("message %s: tool calls: %w", r.id, err)
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
	return pos, m, nil
}
