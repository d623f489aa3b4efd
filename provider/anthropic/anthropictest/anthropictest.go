// Package anthropictest builds the Anthropic Messages API wire format for
// tests of code that talks to it: the Server-Sent Events of a streamed
// message (message_start, content blocks and their deltas, message_delta,
// message_stop, ping, error), non-streaming message bodies, error bodies,
// and a decoder for the requests a client sends. Tests put these behind an
// httptest server:
//
//	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		anthropictest.WriteSSE(w, anthropictest.TextReply("hi", anthropictest.Usage{Input: 3, Output: 1})...)
//	}))
//
// The events are those of Anthropic's public API reference ("Streaming
// Messages"); every event is written as an "event:" line naming its type
// and a "data:" line with its JSON.
package anthropictest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Model is the model name the messages carry.
const Model = "claude-test"

// Path is the path of the Messages API endpoint.
const Path = "/v1/messages"

// Usage is the usage figures of a message. Input is input_tokens, which
// counts only the input after the last cache breakpoint; CacheWrite and
// CacheRead are cache_creation_input_tokens and cache_read_input_tokens.
type Usage struct {
	Input, CacheWrite, CacheRead, Output int
}

func (u Usage) wire() map[string]any {
	return map[string]any{
		"input_tokens":                u.Input,
		"cache_creation_input_tokens": u.CacheWrite,
		"cache_read_input_tokens":     u.CacheRead,
		"output_tokens":               u.Output,
	}
}

// Event is one Server-Sent Event of a stream.
type Event struct {
	Type string // the event: line, which is also the "type" of Data
	Data string // the JSON of the data: line
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func event(typ string, fields map[string]any) Event {
	fields["type"] = typ
	return Event{Type: typ, Data: mustJSON(fields)}
}

// MessageStart opens a message; its usage carries the input figures and an
// output count of 1, as the API sends.
func MessageStart(u Usage) Event {
	usage := u.wire()
	usage["output_tokens"] = 1
	return event("message_start", map[string]any{"message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
}

// TextStart opens text block index.
func TextStart(index int) Event {
	return event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}})
}

// TextDelta carries a text_delta of block index.
func TextDelta(index int, text string) Event {
	return event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": text}})
}

// ToolStart opens tool_use block index.
func ToolStart(index int, id, name string) Event {
	return event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{
		"type": "tool_use", "id": id, "name": name, "input": map[string]any{},
	}})
}

// InputJSONDelta carries a fragment of the input of tool_use block index.
func InputJSONDelta(index int, partial string) Event {
	return event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": partial}})
}

// ThinkingStart opens thinking block index (extended thinking).
func ThinkingStart(index int) Event {
	return event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
}

// ThinkingDelta carries a thinking_delta of block index.
func ThinkingDelta(index int, thinking string) Event {
	return event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": thinking}})
}

// SignatureDelta carries the signature of thinking block index, sent
// just before the block stops.
func SignatureDelta(index int, signature string) Event {
	return event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "signature_delta", "signature": signature}})
}

// RedactedThinking opens redacted_thinking block index, whose data is
// opaque.
func RedactedThinking(index int, data string) Event {
	return event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "redacted_thinking", "data": data}})
}

// BlockStop closes block index.
func BlockStop(index int) Event {
	return event("content_block_stop", map[string]any{"index": index})
}

// MessageDelta carries the stop reason ("end_turn", "tool_use",
// "max_tokens", ...) and the output usage.
func MessageDelta(stopReason string, output int) Event {
	return event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": output},
	})
}

// MessageStop ends the message.
func MessageStop() Event { return event("message_stop", map[string]any{}) }

// Ping is the keep-alive event the API sends at any point of a stream.
func Ping() Event { return event("ping", map[string]any{}) }

// ErrorEvent is an error sent inside a stream, for example
// ErrorEvent("overloaded_error", "Overloaded").
func ErrorEvent(typ, message string) Event {
	return event("error", map[string]any{"error": map[string]any{"type": typ, "message": message}})
}

// TextReply is a complete streamed text answer: message_start, one text
// block with one delta per piece (a ping after the first), message_delta
// with stop reason end_turn, message_stop.
func TextReply(text string, u Usage, more ...string) []Event {
	evs := []Event{MessageStart(u), TextStart(0)}
	for i, piece := range append([]string{text}, more...) {
		evs = append(evs, TextDelta(0, piece))
		if i == 0 {
			evs = append(evs, Ping())
		}
	}
	return append(evs, BlockStop(0), MessageDelta("end_turn", u.Output), MessageStop())
}

// WriteSSE writes the events and flushes after each. A stream that is to
// end properly ends with [MessageStop].
func WriteSSE(w http.ResponseWriter, events ...Event) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Type, e.Data)
		if fl != nil {
			fl.Flush()
		}
	}
}

// Stream returns a handler that streams the events.
func Stream(events ...Event) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { WriteSSE(w, events...) }
}

// Text is a text content block of a non-streaming message.
func Text(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

// ToolUse is a tool_use content block of a non-streaming message.
func ToolUse(id, name string, input json.RawMessage) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// MessageBody is a non-streaming message response.
func MessageBody(stopReason string, u Usage, content ...map[string]any) string {
	if content == nil {
		content = []map[string]any{}
	}
	return mustJSON(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": Model,
		"content": content, "stop_reason": stopReason, "stop_sequence": nil, "usage": u.wire(),
	})
}

// ErrorBody is the body of an error response, for example
// ErrorBody("rate_limit_error", "Number of requests has exceeded your rate limit").
func ErrorBody(typ, message string) string {
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}, "request_id": "req_test"})
}

// HTTPError returns a handler that answers status with [ErrorBody] and the
// given header name/value pairs (for example "retry-after", "0").
func HTTPError(status int, typ, message string, headers ...string) http.HandlerFunc {
	body := ErrorBody(typ, message)
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_test")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Request is what a client sent to the Messages API, decoded.
type Request struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	Stream    bool      `json:"stream"`
	System    []Block   `json:"system"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools"`
	Thinking  *Thinking `json:"thinking,omitempty"`
}

// Thinking is the extended thinking configuration of a [Request].
type Thinking struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

// Message is one message of a [Request].
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a message's content: a list of blocks (a string is read as
// one text block).
type Content []Block

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(b, (*[]Block)(c))
}

// Block is a content block of a request: text, image, tool_use,
// tool_result, thinking or redacted_thinking.
type Block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *ImageSource    `json:"source,omitempty"`      // image
	ID           string          `json:"id,omitempty"`          // tool_use
	Name         string          `json:"name,omitempty"`        // tool_use
	Input        json.RawMessage `json:"input,omitempty"`       // tool_use
	ToolUseID    string          `json:"tool_use_id,omitempty"` // tool_result
	Content      Content         `json:"content,omitempty"`     // tool_result
	IsError      bool            `json:"is_error,omitempty"`    // tool_result
	Thinking     string          `json:"thinking,omitempty"`    // thinking
	Signature    string          `json:"signature,omitempty"`   // thinking
	Data         string          `json:"data,omitempty"`        // redacted_thinking
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// ImageSource is the source of an image block: base64 data of a media
// type.
type ImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// imageError is what the API says of a bad image block of req, or "".
func imageError(req *Request) string {
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if b.Type != "image" {
				continue
			}
			src := b.Source
			switch {
			case src == nil || src.Type != "base64":
				return fmt.Sprintf("messages.%d.content.%d.image.source: Input tag is not base64", i, j)
			case !imageTypes[src.MediaType]:
				return fmt.Sprintf("messages.%d.content.%d.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", i, j)
			}
			if _, err := base64.StdEncoding.DecodeString(src.Data); err != nil || src.Data == "" {
				return fmt.Sprintf("messages.%d.content.%d.image.source.base64: invalid base64 data", i, j)
			}
		}
	}
	return ""
}

// thinkingError is what the API says of a request with thinking whose
// last assistant message, answered by tool results, does not begin with
// its signed thinking (the API checks the signature; the server checks
// there is one), or that has a thinking block after another block in an
// assistant message, or "". Without thinking, thinking blocks are refused
// here too, which the API would ignore: a client sends them only with
// thinking on.
func thinkingError(req *Request) string {
	if req.Thinking == nil {
		for i, m := range req.Messages {
			for j, b := range m.Content {
				if b.Type == "thinking" || b.Type == "redacted_thinking" {
					return fmt.Sprintf("messages.%d.content.%d: thinking blocks are sent back only with thinking enabled", i, j)
				}
			}
		}
		return ""
	}
	if req.Thinking.Type != "enabled" || req.Thinking.BudgetTokens < 1024 || req.Thinking.BudgetTokens >= req.MaxTokens {
		return "thinking: enabled with budget_tokens of at least 1024 and below max_tokens"
	}
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		other := false
		for j, b := range m.Content {
			thought := b.Type == "thinking" || b.Type == "redacted_thinking"
			if thought && other {
				return fmt.Sprintf("messages.%d.content.%d: thinking blocks must come before every other block of an assistant message", i, j)
			}
			other = other || !thought
		}
	}
	n := len(req.Messages)
	if n < 2 || req.Messages[n-1].Role != "user" || !slices.ContainsFunc(req.Messages[n-1].Content, func(b Block) bool { return b.Type == "tool_result" }) {
		return ""
	}
	last := req.Messages[n-2]
	if last.Role != "assistant" || len(last.Content) == 0 {
		return ""
	}
	switch b := last.Content[0]; {
	case b.Type == "thinking" && b.Signature != "", b.Type == "redacted_thinking" && b.Data != "":
		return ""
	default:
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block", n-2, b.Type)
	}
}

var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// Tool is a tool definition of a [Request].
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// CacheControl is a prompt-cache breakpoint.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// DecodeRequest decodes a request body.
func DecodeRequest(body []byte) (*Request, error) {
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Breakpoints returns where the request has cache_control breakpoints, in
// request order: "tools[i]", "system[i]" and "messages[i].content[j]".
func (r *Request) Breakpoints() []string {
	var out []string
	for i, t := range r.Tools {
		if t.CacheControl != nil {
			out = append(out, fmt.Sprintf("tools[%d]", i))
		}
	}
	for i, b := range r.System {
		if b.CacheControl != nil {
			out = append(out, fmt.Sprintf("system[%d]", i))
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, fmt.Sprintf("messages[%d].content[%d]", i, j))
			}
		}
	}
	return out
}

// APIVersion is the anthropic-version header the official SDK sends; a
// [Server] rejects requests without it.
const APIVersion = "2026-10-21"

// Received is one request a [Server] received.
type Received struct {
	Header  http.Header
	Raw     []byte
	Request *Request
}

// Purpose returns "summary" when the request's system prompt is
// summarySystem, else "turn". It serves tests that tell a compaction's
// summary call from a turn step.
func (r *Received) Purpose(summarySystem string) string {
	if len(r.Request.System) > 0 && r.Request.System[0].Text == summarySystem {
		return "summary"
	}
	return "turn"
}

// Server is an httptest server speaking the Messages API through a script:
// request n gets script[n], the last one repeating; with no script it never
// answers (until the client goes away or the server closes). Like the real
// API it answers 401 authentication_error to a request without the key
// (sent as the official SDK sends it: "Authorization: Bearer KEY") and 400
// invalid_request_error to one without an anthropic-version header or whose
// body is not a Messages request.
type Server struct {
	*httptest.Server
	key     string
	mu      sync.Mutex
	reqs    []Received
	script  []http.HandlerFunc
	arrived chan *Received
	release chan struct{}
}

// NewServer starts a server that accepts key; it closes when the test
// ends.
func NewServer(t testing.TB, key string, script ...http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{key: key, script: script, arrived: make(chan *Received, 100), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.release) }) // runs first: hanging handlers return
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		HTTPError(http.StatusBadRequest, "invalid_request_error", err.Error())(w, r)
		return
	}
	switch {
	case r.Header.Get("Authorization") != "Bearer "+s.key:
		HTTPError(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")(w, r)
		return
	case r.Header.Get("anthropic-version") == "":
		HTTPError(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")(w, r)
		return
	case r.Method != http.MethodPost || r.URL.Path != Path:
		HTTPError(http.StatusNotFound, "not_found_error", "Not found")(w, r)
		return
	}
	req, err := DecodeRequest(raw)
	if err != nil || req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		HTTPError(http.StatusBadRequest, "invalid_request_error", "not a Messages request")(w, r)
		return
	}
	if msg := cmp.Or(imageError(req), thinkingError(req)); msg != "" {
		HTTPError(http.StatusBadRequest, "invalid_request_error", msg)(w, r)
		return
	}
	rec := &Received{Header: r.Header.Clone(), Raw: raw, Request: req}
	h := s.record(rec)
	select {
	case s.arrived <- rec:
	default:
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	h(w, r)
}

// record keeps rec and returns the handler of its place in the script.
func (s *Server) record(rec *Received) http.HandlerFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, *rec)
	if len(s.script) == 0 {
		return s.hang
	}
	return s.script[min(len(s.reqs), len(s.script))-1]
}

// hang never answers: it returns when the client goes away or the server
// closes.
func (s *Server) hang(_ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
}

// SetScript replaces the script and forgets the requests so far.
func (s *Server) SetScript(script ...http.HandlerFunc) {
	s.mu.Lock()
	s.script, s.reqs = script, nil
	s.mu.Unlock()
}

// Requests returns the requests received so far (those the server
// accepted), oldest first.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Arrived delivers accepted requests as they arrive (a buffer of 100; more
// are not delivered).
func (s *Server) Arrived() <-chan *Received { return s.arrived }

// Abort resets the connection (a TCP RST), after flushing what was
// written if a response was started (it has a Content-Type): a server
// that fails before or in the middle of a response.
func Abort(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if w.Header().Get("Content-Type") != "" {
		_ = rc.Flush()
	}
	if conn, _, err := rc.Hijack(); err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// Reply answers a text, streamed or not as the request asks.
func Reply(text string, u Usage) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			WriteSSE(w, TextReply(text, u)...)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, MessageBody("end_turn", u, Text(text)))
	}
}
