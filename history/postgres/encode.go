package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// encodeTime returns the bigint column value of t (sqlstore.UnixNano),
// exactly as history/sqlite stores it: nil (NULL) for the zero time.
func encodeTime(t time.Time) (*int64, error) {
	n, valid, err := sqlstore.UnixNano(t)
	if !valid {
		return nil, err
	}
	return &n, nil
}

// decodeTime is the inverse of encodeTime.
func decodeTime(n *int64) time.Time { return sqlstore.FromUnixNano(deref(n), n != nil) }

// deref is *n, or 0 for nil.
func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

// bin returns the bytea value of a string that must round-trip exactly
// (PostgreSQL text rejects NUL bytes and invalid UTF-8; bytea keeps any
// bytes). The result is never nil, so that it is never NULL.
func bin(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// nullable returns the bytea value of an optional blob: nil is NULL, and
// anything else, even empty, is a value.
func nullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return []byte{}
	}
	return b
}

// toolCallJSON is the stored form of a [history.ToolCall], inside a JSON
// array kept in a bytea column. Each field is a JSON string holding the
// original bytes (the arguments are not embedded as JSON, which
// encoding/json would compact), so whitespace and key order survive exactly;
// a field that is not UTF-8 goes to its _base64 twin instead (encoding/json
// would replace the invalid bytes); the arguments are split by
// sqlstore.Arguments.
type toolCallJSON struct {
	ID              string  `json:"id,omitempty"`
	IDBase64        []byte  `json:"id_base64,omitempty"`
	Name            string  `json:"name,omitempty"`
	NameBase64      []byte  `json:"name_base64,omitempty"`
	Arguments       *string `json:"arguments,omitempty"`
	ArgumentsBase64 []byte  `json:"arguments_base64,omitempty"`
}

// encodeToolCalls returns the column value of a message's tool calls: NULL
// for nil, a JSON array otherwise (empty for an empty non-nil list).
func encodeToolCalls(calls []history.ToolCall) ([]byte, error) {
	if calls == nil {
		return nil, nil
	}
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].IDBase64 = sqlstore.Exact(c.ID)
		out[i].Name, out[i].NameBase64 = sqlstore.Exact(c.Name)
		out[i].Arguments, out[i].ArgumentsBase64 = sqlstore.Arguments(c.Arguments)
	}
	return sqlstore.Marshal(out)
}

// decodeToolCalls is the inverse of encodeToolCalls.
func decodeToolCalls(b []byte) ([]history.ToolCall, error) {
	return sqlstore.Unmarshal(b, func(c toolCallJSON) history.ToolCall {
		return history.ToolCall{ID: sqlstore.Unexact(c.ID, c.IDBase64), Name: sqlstore.Unexact(c.Name, c.NameBase64), Arguments: sqlstore.FromArguments(c.Arguments, c.ArgumentsBase64)}
	})
}

// messageBatch is a list of messages in column form: one array per column,
// for a single INSERT … SELECT FROM unnest(…) whatever the number of
// messages.
type messageBatch struct {
	ids, texts, toolCalls, toolCallIDs [][]byte
	attachments                        [][]byte // NULL for none
	files                              [][]byte // NULL for none
	thoughts                           [][]byte // NULL for none
	roles                              []string
	steers                             []bool
	createdAts                         []*int64
}

// encodeMessages converts msgs, already validated, to columns.
func encodeMessages(msgs []history.Message) (*messageBatch, error) {
	n := len(msgs)
	b := &messageBatch{
		ids: make([][]byte, n), texts: make([][]byte, n), toolCalls: make([][]byte, n), toolCallIDs: make([][]byte, n),
		roles: make([]string, n), steers: make([]bool, n), createdAts: make([]*int64, n), attachments: make([][]byte, n),
		files: make([][]byte, n), thoughts: make([][]byte, n),
	}
	for i := range msgs {
		m := &msgs[i]
		var err error
		if b.createdAts[i], err = encodeTime(m.CreatedAt); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.ID, err)
		}
		if b.toolCalls[i], err = encodeToolCalls(m.ToolCalls); err != nil {
			return nil, fmt.Errorf("%w: message %s tool calls: %v", history.ErrInvalid, m.ID, err)
		}
		if b.attachments[i], err = sqlstore.Attachments(m.Attachments); err != nil {
			return nil, fmt.Errorf("%w: message %s attachments: %v", history.ErrInvalid, m.ID, err)
		}
		if b.files[i], err = sqlstore.Files(m.Files); err != nil {
			return nil, fmt.Errorf("%w: message %s files: %v", history.ErrInvalid, m.ID, err)
		}
		if b.thoughts[i], err = sqlstore.Thoughts(m.Thoughts); err != nil {
			return nil, fmt.Errorf("%w: message %s thoughts: %v", history.ErrInvalid, m.ID, err)
		}
		b.ids[i], b.texts[i], b.toolCallIDs[i] = bin(m.ID), bin(m.Text), bin(m.ToolCallID)
		b.roles[i], b.steers[i] = string(m.Role), m.Steer
	}
	return b, nil
}

// messageColumns are the columns scanMessage scans, in order.
const messageColumns = `pos, id, role, text, tool_calls, tool_call_id, steer, created_at, attachments, files, thoughts`

// scanMessage scans one row of messageColumns, followed by the columns
// of extra.
func scanMessage(rows pgx.Rows, extra ...any) (int64, history.Message, error) {
	var (
		pos                       int64
		id, text, calls, toolCall []byte
		attachments, files        []byte
		thoughts                  []byte
		role                      string
		steer                     bool
		createdAt                 *int64
		m                         history.Message
	)
	if err := rows.Scan(append([]any{&pos, &id, &role, &text, &calls, &toolCall, &steer, &createdAt, &attachments, &files, &thoughts}, extra...)...); err != nil {
		return 0, m, err
	}
	m = history.Message{ID: string(id), Role: history.Role(role), Text: string(text), ToolCallID: string(toolCall), Steer: steer, CreatedAt: decodeTime(createdAt)}
	var err error
	if m.ToolCalls, err = decodeToolCalls(calls); err != nil {
		return 0, m, fmt.Errorf("message %s: tool calls: %w", m.ID, err)
	}
	if m.Attachments, err = sqlstore.FromAttachments(attachments); err != nil {
		return 0, m, fmt.Errorf("message %s: attachments: %w", m.ID, err)
	}
	if m.Files, err = sqlstore.FromFiles(files); err != nil {
		return 0, m, fmt.Errorf("message %s: files: %w", m.ID, err)
	}
	if m.Thoughts, err = sqlstore.FromThoughts(thoughts); err != nil {
		return 0, m, fmt.Errorf("message %s: thoughts: %w", m.ID, err)
	}
	return pos, m, nil
}
