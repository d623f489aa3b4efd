package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestReadMessageValid(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Message
	}{
		{"request number id", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`,
			Message{Kind: KindRequest, ID: json.RawMessage(`1`), Method: "m", Params: json.RawMessage(`{"a":1}`)}},
		{"request string id", `{"jsonrpc":"2.0","id":"x\u0041","method":"m"}`,
			Message{Kind: KindRequest, ID: json.RawMessage(`"x\u0041"`), Method: "m"}},
		{"request null id", `{"jsonrpc":"2.0","id":null,"method":"m","params":[1]}`,
			Message{Kind: KindRequest, ID: json.RawMessage(`null`), Method: "m", Params: json.RawMessage(`[1]`)}},
		{"request fractional id kept verbatim", `{"jsonrpc":"2.0","id":1.50,"method":"m"}`,
			Message{Kind: KindRequest, ID: json.RawMessage(`1.50`), Method: "m"}},
		{"notification null params", `{"jsonrpc":"2.0","method":"n","params":null}`,
			Message{Kind: KindNotification, Method: "n"}},
		{"result", `{"jsonrpc":"2.0","id":7,"result":null}`,
			Message{Kind: KindResponse, ID: json.RawMessage(`7`), Result: json.RawMessage(`null`)}},
		{"error", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope","data":{"x":1}}}`,
			Message{Kind: KindResponse, ID: json.RawMessage(`"a"`), Error: &Error{Code: -32601, Message: "nope", Data: json.RawMessage(`{"x":1}`)}}},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}`,
			Message{Kind: KindResponse, ID: json.RawMessage(`null`), Error: &Error{Code: -32700, Message: "p"}}},
		{"unknown members ignored", `{"jsonrpc":"2.0","method":"n","extra":true}`,
			Message{Kind: KindNotification, Method: "n"}},
		{"invalid UTF-8 replaced", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"t\":\"a\xffb\"}}",
			Message{Kind: KindNotification, Method: "n", Params: json.RawMessage("{\"t\":\"a\uFFFDb\"}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadMessage([]byte(tt.line))
			require.NoError(t, err)
			assert.Equal(t, tt.want, *m)
		})
	}
}

func TestReadMessageMalformed(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		code     int
		msg      string
		kind     Kind
		answerID string // the id to answer with; "" = null
	}{
		{"not JSON", `hello`, ParseError, "parse error: invalid character 'h'", 0, ""},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"m"`, ParseError, "parse error: unexpected end of JSON input", 0, ""},
		{"two values", `{"jsonrpc":"2.0","method":"m"} {}`, ParseError, "after top-level value", 0, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, InvalidRequest, "batches are not supported", 0, ""},
		{"empty batch", `[]`, InvalidRequest, "batches are not supported", 0, ""},
		{"string", `"x"`, InvalidRequest, "must be a JSON object, got string", 0, ""},
		{"number", `12`, InvalidRequest, "must be a JSON object, got number", 0, ""},
		{"null", `null`, InvalidRequest, "must be a JSON object, got null", 0, ""},
		{"empty object", `{}`, InvalidRequest, `missing "method"`, KindRequest, ""},
		{"missing jsonrpc", `{"id":1,"method":"m"}`, InvalidRequest, `"jsonrpc" must be "2.0"`, KindRequest, "1"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"m"}`, InvalidRequest, `"jsonrpc" must be "2.0"`, KindRequest, "1"},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":"k","method":"m"}`, InvalidRequest, `"jsonrpc" must be "2.0"`, KindRequest, `"k"`},
		{"method not string", `{"jsonrpc":"2.0","id":1,"method":5}`, InvalidRequest, `"method" must be a string, got number`, KindRequest, "1"},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"m"}`, InvalidRequest, `"id" must be a string, a number or null, got object`, KindRequest, ""},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"m"}`, InvalidRequest, `got boolean`, KindRequest, ""},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, InvalidRequest, `"params" must be an object or an array, got string`, KindRequest, "1"},
		{"notification params number", `{"jsonrpc":"2.0","method":"m","params":3}`, InvalidRequest, `"params" must be an object or an array`, KindNotification, ""},
		{"response both", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, InvalidRequest, `both "result" and "error"`, KindResponse, "1"},
		{"response neither", `{"jsonrpc":"2.0","id":1}`, InvalidRequest, `neither "result" nor "error"`, KindResponse, "1"},
		{"response without id", `{"jsonrpc":"2.0","result":1}`, InvalidRequest, `missing "id"`, KindResponse, ""},
		{"error not object", `{"jsonrpc":"2.0","id":1,"error":"bad"}`, InvalidRequest, `"error" must be an object, got string`, KindResponse, "1"},
		{"error code fractional", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, InvalidRequest, `"error.code" must be an integer`, KindResponse, "1"},
		{"error message missing", `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, InvalidRequest, `"error.message" must be a string`, KindResponse, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadMessage([]byte(tt.line))
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Contains(t, e.Message, tt.msg)
			require.NotNil(t, m)
			assert.Equal(t, tt.kind, m.Kind)
			if tt.answerID == "" {
				assert.Nil(t, m.ID)
			} else {
				assert.Equal(t, tt.answerID, string(m.ID))
			}
		})
	}
}

func TestEncodeMessage(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"request", Message{Kind: KindRequest, ID: json.RawMessage(`3`), Method: "m", Params: json.RawMessage(`{"a": "x\ny"}`)},
			`{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":"x\ny"}}`},
		{"notification", Message{Kind: KindNotification, Method: "n"}, `{"jsonrpc":"2.0","method":"n"}`},
		{"result", Message{Kind: KindResponse, ID: json.RawMessage(`"s"`), Result: json.RawMessage(`{"k":[1, 2]}`)},
			`{"jsonrpc":"2.0","id":"s","result":{"k":[1,2]}}`},
		{"nil result is null", Message{Kind: KindResponse, ID: json.RawMessage(`1`)}, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"error with unknown id", Message{Kind: KindResponse, Error: &Error{Code: ParseError, Message: "parse error"}},
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeMessage(&tt.m)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
			assert.NotContains(t, string(b), "\n")
		})
	}

	_, err := EncodeMessage(&Message{Kind: KindRequest, Method: "m"})
	assert.ErrorContains(t, err, "without an id")
	b, err := EncodeMessage(&Message{Kind: KindNotification})
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","method":""}`, string(b), "an empty method is valid JSON-RPC")
	_, err = EncodeMessage(&Message{Kind: KindRequest, ID: json.RawMessage(`1`), Method: "m", Params: json.RawMessage(`{`)})
	assert.Error(t, err)
}

type newSessionParams struct {
	Cwd        string `json:"cwd"`
	McpServers []struct {
		Name string `json:"name"`
	} `json:"mcpServers"`
}

func TestUnmarshalParams(t *testing.T) {
	tests := []struct {
		name   string
		params string
		msg    string
	}{
		{"wrong type", `{"cwd":5,"mcpServers":[]}`, `invalid params: field "cwd": expected string, got number`},
		{"nested", `{"cwd":"/","mcpServers":[{"name":true}]}`, `invalid params: field "mcpServers.name": expected string, got boolean`},
		{"not an object", `[1]`, `invalid params: expected object, got array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p newSessionParams
			err := UnmarshalParams(json.RawMessage(tt.params), &p)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, InvalidParams, e.Code)
			assert.Equal(t, tt.msg, e.Message)
		})
	}
	var p newSessionParams
	require.NoError(t, UnmarshalParams(nil, &p), "absent params decode as {}")
	require.NoError(t, UnmarshalParams(json.RawMessage(`{"cwd":"/w","mcpServers":[]}`), &p))
	assert.Equal(t, "/w", p.Cwd)
}

func TestToWireError(t *testing.T) {
	custom := &Error{Code: ResourceNotFound, Message: "session not found"}
	tests := []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"typed", custom, ResourceNotFound, "session not found"},
		{"wrapped typed", fmt.Errorf("loading: %w", custom), ResourceNotFound, "session not found"},
		{"cancelled", fmt.Errorf("turn: %w", context.Canceled), RequestCancelled, "request cancelled"},
		{"deadline", context.DeadlineExceeded, RequestCancelled, "request cancelled"},
		{"other", errors.New("disk full"), InternalError, "internal error: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := toWireError(tt.err)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.msg, e.Message)
		})
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("call: %w", MethodNotFoundError("x"))
	assert.ErrorIs(t, err, &Error{Code: MethodNotFound})
	assert.NotErrorIs(t, err, &Error{Code: InvalidParams})
	assert.Equal(t, `method not found: "x" (jsonrpc error -32601)`, MethodNotFoundError("x").Error())
}
