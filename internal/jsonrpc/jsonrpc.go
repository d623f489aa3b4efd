// Package jsonrpc implements JSON-RPC 2.0 over newline-delimited JSON: one
// JSON object per line, as ACP uses it over stdio.
//
// A [Conn] reads messages from an io.Reader and writes them to an io.Writer.
// Incoming requests and notifications go to one [Handler]; outgoing requests
// are made with [Conn.Call] and notifications with [Conn.Notify].
//
//	conn := jsonrpc.NewConn(os.Stdin, os.Stdout, jsonrpc.Options{
//		Handler: func(ctx context.Context, req *jsonrpc.Request) (any, error) {
//			switch req.Method {
//			case "ping":
//				return "pong", nil
//			}
//			return nil, jsonrpc.MethodNotFoundError(req.Method)
//		},
//	})
//	defer conn.Close()
//	err := conn.Wait()
//
// # Framing
//
// Every message is one line. Output never contains a newline inside a
// message. Input lines may end in "\n" or "\r\n"; blank lines are ignored and
// a final line without a newline is still read. A line longer than
// [Options.MaxLineBytes] is discarded up to its newline and answered with an
// [InvalidRequest] error; the connection keeps going. Batches (a JSON array)
// are not supported by ACP and are answered with [InvalidRequest].
//
// Invalid UTF-8 in an input line is not rejected: each invalid byte is
// replaced by U+FFFD before the line is parsed, as encoding/json does inside
// strings (the reference TypeScript SDK's TextDecoder also replaces). Invalid
// bytes outside strings are a parse error anyway. Output is always valid
// UTF-8.
//
// # Cancellation
//
// ACP's protocol-level $/cancel_request notification is handled by the
// [Conn] itself and never reaches the handler: it cancels the context of the
// request it names, whether queued or running, and the handler's
// context.Canceled goes back as [RequestCancelled]. [Conn.Call] sends one
// when its ctx ends before the response arrives.
//
// # Errors
//
// Errors travel as [*Error]. Go errors returned by a handler are turned into
// JSON-RPC errors in one place (see [Handler]): an [*Error] anywhere in the
// chain is sent as is, a context cancellation becomes [RequestCancelled], and
// anything else becomes [InternalError] with the error text.
// [UnmarshalParams] produces [InvalidParams] errors that name the offending
// field.
package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Error codes. The first five are JSON-RPC 2.0; the others are defined by the
// ACP v1 schema (ErrorCode).
const (
	ParseError     = -32700 // invalid JSON was received
	InvalidRequest = -32600 // the JSON is not a valid request object
	MethodNotFound = -32601 // the method does not exist or is not available
	InvalidParams  = -32602 // invalid method parameters
	InternalError  = -32603 // internal error

	// RequestCancelled reports that execution of a request was aborted,
	// by a $/cancel_request from the caller or by shutdown (ACP, from the
	// range LSP reserves).
	RequestCancelled = -32800
	// AuthRequired reports that authentication is required first (ACP).
	AuthRequired = -32000
	// ResourceNotFound reports that a resource such as a session does not
	// exist (ACP).
	ResourceNotFound = -32002
)

// Version is the value of the "jsonrpc" member of every message.
const Version = "2.0"

// CancelRequestMethod is the ACP protocol-level notification that cancels an
// incoming request: params {"requestId": <id>}. A [Conn] handles it itself.
const CancelRequestMethod = "$/cancel_request"

// Error is a JSON-RPC error object. It is both what a handler returns to send
// a specific error and what [Conn.Call] returns when the peer answered with
// an error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError returns an *Error with the given code and a formatted message.
func NewError(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// MethodNotFoundError returns the [MethodNotFound] error for method.
func MethodNotFoundError(method string) *Error {
	return NewError(MethodNotFound, "method not found: %q", method)
}

// Error returns the message and the code.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (jsonrpc error %d)", e.Message, e.Code)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &jsonrpc.Error{Code: jsonrpc.MethodNotFound}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// toWireError is the single place where a Go error becomes a JSON-RPC error.
func toWireError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return NewError(RequestCancelled, "request cancelled")
	default:
		return NewError(InternalError, "internal error: %s", err.Error())
	}
}

// Kind says what a [Message] is.
type Kind int

// The three kinds of JSON-RPC messages.
const (
	KindRequest      Kind = iota + 1 // has a method and an id
	KindNotification                 // has a method and no id
	KindResponse                     // has an id and a result or an error
)

// String returns "request", "notification" or "response".
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one decoded JSON-RPC 2.0 message.
type Message struct {
	Kind Kind
	// ID is the raw JSON id (a string, a number or null) of a request or
	// response, exactly as received; nil for a notification.
	ID     json.RawMessage
	Method string          // requests and notifications
	Params json.RawMessage // requests and notifications; nil when absent or null
	Result json.RawMessage // successful responses (never nil there; may be "null")
	Error  *Error          // error responses
}

// ReadMessage decodes one line (without its line ending) into a Message.
//
// On failure it returns an [*Error] with code [ParseError] (not JSON) or
// [InvalidRequest] (JSON, but not a valid JSON-RPC 2.0 message), together
// with a partial Message whose Kind and ID say how to answer: a message that
// is not a response (Kind != KindResponse) is answered with that ID, or with
// id null when ID is nil; a malformed response is never answered.
func ReadMessage(line []byte) (*Message, error) {
	if !utf8.Valid(line) {
		line = FixUTF8(line)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return &Message{}, NewError(ParseError, "parse error: %s at byte %d", syn.Error(), syn.Offset)
		}
		// Valid JSON that is not an object.
		switch JSONKind(line) {
		case "array":
			return &Message{}, NewError(InvalidRequest, "invalid request: batches are not supported")
		default:
			return &Message{}, NewError(InvalidRequest, "invalid request: a message must be a JSON object, got %s", JSONKind(line))
		}
	}
	if fields == nil {
		return &Message{}, NewError(InvalidRequest, "invalid request: a message must be a JSON object, got null")
	}
	m := &Message{}
	rawID, hasID := fields["id"]
	rawMethod, hasMethod := fields["method"]
	_, hasResult := fields["result"]
	_, hasError := fields["error"]
	switch {
	case hasMethod && hasID:
		m.Kind = KindRequest
	case hasMethod:
		m.Kind = KindNotification
	case hasID || hasResult || hasError:
		m.Kind = KindResponse
	default:
		m.Kind = KindRequest // answered with id null
		return m, NewError(InvalidRequest, `invalid request: missing "method"`)
	}
	if hasID {
		if k := JSONKind(rawID); k != "string" && k != "number" && k != "null" {
			return m, NewError(InvalidRequest, `invalid request: "id" must be a string, a number or null, got %s`, k)
		}
		m.ID = rawID
	}
	var version string
	if v, ok := fields["jsonrpc"]; !ok || JSONKind(v) != "string" || json.Unmarshal(v, &version) != nil || version != Version {
		return m, NewError(InvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if m.Kind == KindResponse {
		return m, readResponse(m, fields, hasResult, hasError)
	}
	if err := json.Unmarshal(rawMethod, &m.Method); err != nil || JSONKind(rawMethod) != "string" {
		return m, NewError(InvalidRequest, `invalid request: "method" must be a string, got %s`, JSONKind(rawMethod))
	}
	if p, ok := fields["params"]; ok {
		switch JSONKind(p) {
		case "object", "array":
			m.Params = p
		case "null":
		default:
			return m, NewError(InvalidRequest, `invalid request: "params" must be an object or an array, got %s`, JSONKind(p))
		}
	}
	return m, nil
}

func readResponse(m *Message, fields map[string]json.RawMessage, hasResult, hasError bool) error {
	if m.ID == nil {
		return NewError(InvalidRequest, `invalid response: missing "id"`)
	}
	switch {
	case hasResult && hasError:
		return NewError(InvalidRequest, `invalid response: has both "result" and "error"`)
	case hasResult:
		m.Result = fields["result"]
		return nil
	case !hasError:
		return NewError(InvalidRequest, `invalid response: has neither "result" nor "error"`)
	}
	raw := fields["error"]
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return NewError(InvalidRequest, `invalid response: "error" must be an object, got %s`, JSONKind(raw))
	}
	e := &Error{}
	code, ok := obj["code"]
	if !ok || json.Unmarshal(code, &e.Code) != nil {
		return NewError(InvalidRequest, `invalid response: "error.code" must be an integer`)
	}
	msg, ok := obj["message"]
	if !ok || JSONKind(msg) != "string" || json.Unmarshal(msg, &e.Message) != nil {
		return NewError(InvalidRequest, `invalid response: "error.message" must be a string`)
	}
	if d, ok := obj["data"]; ok {
		e.Data = d
	}
	m.Error = e
	return nil
}

// FixUTF8 replaces every byte of an invalid UTF-8 sequence with U+FFFD, as
// encoding/json does when it decodes a string.
func FixUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// JSONKind names the JSON type of a valid JSON value: "object", "array",
// "string", "boolean", "null", "number", or "nothing" for empty input.
func JSONKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// wireMessage is the encoding of every outgoing message.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  *string         `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// EncodeMessage encodes m as one line of JSON, without the trailing newline.
// A response needs an ID ("null" is allowed for errors) and exactly one of
// Result and Error; a nil Result of a successful response is sent as null.
func EncodeMessage(m *Message) ([]byte, error) {
	w := wireMessage{JSONRPC: Version}
	switch m.Kind {
	case KindRequest, KindNotification:
		if m.Kind == KindRequest {
			if len(m.ID) == 0 {
				return nil, errors.New("jsonrpc: encoding a request without an id")
			}
			w.ID = m.ID
		}
		w.Method = &m.Method
		if len(m.Params) > 0 && !bytes.Equal(m.Params, []byte("null")) {
			w.Params = m.Params
		}
	case KindResponse:
		w.ID = m.ID
		if len(w.ID) == 0 {
			w.ID = json.RawMessage("null")
		}
		if m.Error != nil {
			w.Error = m.Error
		} else {
			w.Result = m.Result
			if len(w.Result) == 0 {
				w.Result = json.RawMessage("null")
			}
		}
	default:
		return nil, fmt.Errorf("jsonrpc: encoding a message of unknown kind %d", m.Kind)
	}
	// No HTML escaping, so that raw values (ids above all) go out byte for
	// byte as they came in.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("jsonrpc: encoding %s: %w", m.Kind, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if bytes.IndexByte(b, '\n') >= 0 { // cannot happen: encoding/json escapes newlines and compacts raw values
		return nil, errors.New("jsonrpc: encoded message contains a newline")
	}
	return b, nil
}

// UnmarshalParams decodes request params into v. A failure is returned as an
// [InvalidParams] error whose message names what was wrong, for example
// `invalid params: field "cwd": expected string, got number`. Absent params
// decode as an empty object, so that missing required fields are reported by
// name.
func UnmarshalParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &Error{Code: InvalidParams, Message: "invalid params: " + DescribeJSONError(err)}
	}
	return nil
}

// DescribeJSONError renders an encoding/json decoding error for a peer,
// without Go type names: `field "cwd": expected string, got number`. Other
// errors are returned as their text.
func DescribeJSONError(err error) string {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		got := typ.Value
		if got == "bool" {
			got = "boolean"
		}
		want := JSONTypeName(typ.Type)
		if typ.Field == "" {
			return fmt.Sprintf("expected %s, got %s", want, got)
		}
		return fmt.Sprintf("field %q: expected %s, got %s", typ.Field, want, got)
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON: %s at byte %d", syn.Error(), syn.Offset)
	}
	return err.Error()
}

// JSONTypeName names the JSON type a Go type decodes from.
func JSONTypeName(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return JSONTypeName(t.Elem())
	}
	return "value"
}
