package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var seedLines = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":"a","method":"echo","params":[1,2,{"x":null}]}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":"x"}}`,
	`{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"m"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":{},"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"echo","params":{"<":"&"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"t\":\"\xff\xfe\"}}",
	`{"jsonrpc":"2.0","id":"\u2028","method":"echo","params":{"t":"\u2029"}}`,
	`null`, `"x"`, `12`, `{`, ``, `{}`,
}

func FuzzReadMessage(f *testing.F) {
	for _, s := range seedLines {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ReadMessage(line)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != ParseError && e.Code != InvalidRequest) {
				t.Fatalf("error %v is not a parse error or an invalid request", err)
			}
			if m == nil {
				t.Fatal("nil message with an error")
			}
			if m.ID != nil {
				if k := JSONKind(m.ID); k != "string" && k != "number" && k != "null" {
					t.Fatalf("answer id %q is not a string, number or null", m.ID)
				}
			}
			return
		}
		b1, err := EncodeMessage(m)
		if err != nil {
			t.Fatalf("encoding a decoded message: %v", err)
		}
		if bytes.IndexByte(b1, '\n') >= 0 || !utf8.Valid(b1) {
			t.Fatalf("bad output line %q", b1)
		}
		m2, err := ReadMessage(b1)
		if err != nil {
			t.Fatalf("re-reading %q: %v", b1, err)
		}
		if m2.Kind != m.Kind || m2.Method != m.Method || !bytes.Equal(m2.ID, m.ID) || (m.Error == nil) != (m2.Error == nil) {
			t.Fatalf("round trip changed the message: %+v -> %+v", m, m2)
		}
		if m.Error != nil && (m.Error.Code != m2.Error.Code || m.Error.Message != m2.Error.Message) {
			t.Fatalf("round trip changed the error: %+v -> %+v", m.Error, m2.Error)
		}
		b2, err := EncodeMessage(m2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable: %q -> %q (%v)", b1, b2, err)
		}
	})
}

func FuzzConn(f *testing.F) {
	for _, s := range seedLines {
		f.Add([]byte(s + "\n"))
	}
	f.Add([]byte(strings.Join(seedLines, "\n")))
	f.Add([]byte(strings.Join(seedLines, "\r\n") + "\r\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"echo","params":{"x":"` + strings.Repeat("y", 300) + "\"}}\n"))
	f.Add([]byte("\n\n   \n\x00\xff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := NewConn(inR, outW, Options{
			Handler: func(ctx context.Context, req *Request) (any, error) {
				return req.Params, nil
			},
			OrderRequests: true,
			MaxLineBytes:  128,
		})
		const sentinel = `{"jsonrpc":"2.0","id":"fuzz-end","method":"end"}`
		written := make(chan struct{})
		go func() {
			defer close(written)
			_, _ = inW.Write(data)
			_, _ = io.WriteString(inW, "\n"+sentinel+"\n")
		}()

		lines := make(chan []byte)
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			defer close(lines)
			br := bufio.NewReader(outR)
			for {
				l, err := br.ReadBytes('\n')
				if len(l) > 0 {
					lines <- l
				}
				if err != nil {
					return
				}
			}
		}()
		defer func() {
			c.Close()
			_ = inW.Close()
			for range lines { // drain, so that the collector ends
			}
			<-collected
			<-written
			_ = c.Wait()
		}()

		timeout := time.After(10 * time.Second)
		for {
			var l []byte
			select {
			case l = <-lines:
			case <-timeout:
				t.Fatal("no answer to the sentinel request")
			}
			if l == nil {
				t.Fatal("output ended before the sentinel was answered")
			}
			body, ok := bytes.CutSuffix(l, []byte("\n"))
			if !ok || bytes.IndexByte(body, '\n') >= 0 || !utf8.Valid(body) {
				t.Fatalf("bad output line %q", l)
			}
			m, err := ReadMessage(body)
			if err != nil {
				t.Fatalf("output line %q is not valid JSON-RPC: %v", l, err)
			}
			if m.Kind != KindResponse {
				t.Fatalf("output line %q is not a response", l)
			}
			if string(m.ID) == `"fuzz-end"` {
				return
			}
		}
	})
}
