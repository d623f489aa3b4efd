package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// responseMargin is what an HTTP server's answer to a tool call may hold
// beyond Options.MaxOutput: the JSON-RPC envelope, JSON escapes, other
// content.
const responseMargin = 64 << 10

// otherBound bounds every other answer of an HTTP server, and each event
// of its own stream: a list of tools with their schemas can be larger
// than a result (MaxTools schemas of up to MaxSchema bytes); it is the
// MCP SDK's own bound on an SSE event.
const otherBound = 16 << 20

// errTooLarge is the error of a response body read past its bound
// where no call can be answered in its place.
var errTooLarge = errors.New("mcp: the server's response is too large")

// boundTransport bounds what is read of every response of an HTTP
// server while it is read: a JSON body, or each event of an SSE stream,
// is held up to call bytes for a tools/call, otherBound for anything
// else. Past that the rest is not read (the connection is closed) and the
// request gets a JSON-RPC error saying so instead, so the call fails with
// a clear message and the server's session goes on; memory holds the
// bound, whatever the server sends.
type boundTransport struct {
	base http.RoundTripper
	call int
}

func (t boundTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	id, method := request(r)
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil || r.Method == http.MethodHead {
		return resp, err
	}
	max := otherBound
	if method == "tools/call" {
		max = t.call
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		resp.Body = &eventBound{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 4<<10), max: max, id: id}
	} else {
		resp.Body = &bodyBound{body: resp.Body, max: max, id: id}
		resp.ContentLength = -1 // what is read may be the error put in its place
	}
	return resp, nil
}

// request returns the JSON-RPC id and method of the request r posts; id
// is nil for none (a notification, a response, a GET or DELETE). The
// SDK's requests can be read again (GetBody).
func request(r *http.Request) (id json.RawMessage, method string) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return nil, ""
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, ""
	}
	defer body.Close()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(body).Decode(&msg) != nil || msg.Method == "" || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return nil, ""
	}
	return msg.ID, msg.Method
}

// tooLarge is the JSON-RPC error response to the call id whose answer
// was larger than max bytes.
func tooLarge(id json.RawMessage, max int, what string) []byte {
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code": -32603,
			"message": fmt.Sprintf("the server's %s is larger than %d bytes, the bound of what is read of it, so it was not read to its end and the request failed (a tool call's answer is bounded by the output bound, MaxOutput, plus %d); ask the tool for less",
				what, max, responseMargin),
		},
	})
	return msg
}

// bodyBound is a JSON response body read whole, up to max bytes, at the
// first Read.
type bodyBound struct {
	body io.ReadCloser
	max  int
	id   json.RawMessage
	held *bytes.Reader // nil until the first Read
	err  error         // after held
}

func (b *bodyBound) Read(p []byte) (int, error) {
	if b.held == nil {
		data, err := io.ReadAll(io.LimitReader(b.body, int64(b.max)+1))
		switch {
		case err != nil:
			b.err = err
		case len(data) > b.max:
			_ = b.body.Close() // the rest is not read
			data = nil
			if b.id != nil {
				data = tooLarge(b.id, b.max, "response")
			} else {
				b.err = fmt.Errorf("%w: more than %d bytes", errTooLarge, b.max)
			}
		}
		b.held = bytes.NewReader(data)
	}
	n, err := b.held.Read(p)
	if err == io.EOF && b.err != nil {
		err = b.err
	}
	return n, err
}

func (b *bodyBound) Close() error { return b.body.Close() }

// eventBound is an SSE stream passed on one whole event at a time, each
// held up to max bytes. An event larger than that is replaced by an
// error for the call the stream answers, and the stream ends there.
type eventBound struct {
	body  io.ReadCloser
	r     *bufio.Reader
	max   int
	id    json.RawMessage
	event bytes.Buffer // the event being read, then passed on
	out   []byte       // what is left to pass on of the last event
	err   error        // once the stream has ended
}

func (e *eventBound) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		e.next()
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// next reads the next event (up to its blank line) into out, or the
// error in its place, or ends the stream.
func (e *eventBound) next() {
	e.event.Reset()
	for start := true; ; {
		line, err := e.r.ReadSlice('\n')
		if e.event.Len()+len(line) > e.max {
			_ = e.body.Close() // the rest is not read
			e.event.Reset()
			if e.id != nil {
				e.event.WriteString("event: message\ndata: ")
				e.event.Write(tooLarge(e.id, e.max, "event"))
				e.event.WriteString("\n\n")
			}
			e.out = e.event.Bytes()
			e.err = fmt.Errorf("%w: an event of more than %d bytes", errTooLarge, e.max)
			if e.id != nil {
				e.err = io.EOF
			}
			return
		}
		e.event.Write(line)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			start = false // the rest of a long line follows
			continue
		case err != nil:
			e.out, e.err = e.event.Bytes(), err
			return
		}
		if start && len(bytes.TrimRight(line, "\r\n")) == 0 { // a blank line ends the event
			e.out = e.event.Bytes()
			return
		}
		start = true
	}
}

func (e *eventBound) Close() error { return e.body.Close() }
