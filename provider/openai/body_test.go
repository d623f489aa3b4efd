package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// jsonStringCases are strings whose JSON encoding has every case of
// appendJSONString: each byte value alone, escapes at every offset of an
// eight-byte word, runes cut by a word boundary, invalid UTF-8, U+2028/9.
func jsonStringCases() []string {
	cases := []string{"", "plain", "\u2028", "\u2029", "a\u2028b\u2029c", "\xff", "\xe2\x80", "\xe2\x80\xa8\xe2\x80",
		"é", strings.Repeat("é", 17), "日本語テキスト", "\U0001F600 emoji", "</transcript>", "a\x00b", "\x7f", "tab\there",
		strings.Repeat("x", 4096) + "\"" + strings.Repeat("y", 4095)}
	for b := 0; b < 256; b++ {
		cases = append(cases, string([]byte{byte(b)}), "abcdefgh"+string([]byte{byte(b)})+"ijklmnop")
	}
	for _, special := range []string{"\"", "\\", "<", ">", "&", "\n", "\x01", "é", "\u2028", "\xff", "\U0001F600"} {
		for at := 0; at < 24; at++ {
			cases = append(cases, strings.Repeat("a", at)+special+strings.Repeat("b", 24-at))
		}
	}
	return cases
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases() {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		got := appendJSONString([]byte("prefix"), s)
		require.Equal(t, "prefix"+string(want), string(got), "input %q", s)
		require.Equal(t, len(want)-2, escapedLen(s), "input %q", s)
	}
}

// TestBodyReaderChunks: a content escaped a chunk at a time, for every
// chunk size from 1 byte up, is the content escaped whole, whatever the
// reader's buffer size.
func TestBodyReaderChunks(t *testing.T) {
	old := spliceChunk
	defer func() { spliceChunk = old }()
	var all strings.Builder
	for _, s := range jsonStringCases() {
		all.WriteString(s)
	}
	content := all.String()
	want := appendJSONString([]byte(`{"a":`), content)
	want = append(want, `,"b":1}`...)
	sp := &splice{nonce: "n", texts: []string{content}}
	for _, chunk := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 1000, 1 << 20} {
		spliceChunk = chunk
		parts, size, err := sp.parts([]byte(`{"a":"sessionkit-splice-n-0","b":1}`))
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), size, "chunk %d", chunk)
		for _, readSize := range []int{1, 3, 64, 1 << 16} {
			r := newBodyReader(parts)
			var got []byte
			buf := make([]byte, readSize)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
			}
			require.Equal(t, string(want), string(got), "chunk %d, reads of %d", chunk, readSize)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json says %s", s, got, want)
		}
		if n := escapedLen(s); n != len(want)-2 {
			t.Fatalf("escapedLen(%q) = %d, want %d", s, n, len(want)-2)
		}
		for _, chunk := range []int{1, 3, 16 << 10} {
			old := spliceChunk
			spliceChunk = chunk
			sp := &splice{nonce: "n", texts: []string{s}}
			parts, size, err := sp.parts([]byte(`["sessionkit-splice-n-0"]`))
			if err != nil || size != int64(len(want)+2) {
				t.Fatalf("parts: %v, size %d, want %d", err, size, len(want)+2)
			}
			body, err := io.ReadAll(newBodyReader(parts))
			spliceChunk = old
			if err != nil || string(body) != "["+string(want)+"]" {
				t.Fatalf("chunks of %d: streamed body of %q = %s, %v", chunk, s, body, err)
			}
		}
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

// largeRequest has a large content in every place a content goes: the
// system prompt, the retained summary, a user, an assistant and a tool
// message, and small ones between them.
func largeRequest() *provider.Request {
	big := func(tag string) string {
		return tag + strings.Repeat(" <alpha> \"bravo\" é \u2028 \xff\n", 2000)
	}
	return &provider.Request{
		System:  big("system"),
		Summary: big("summary"),
		Messages: []history.Message{
			{ID: "1", Role: history.RoleUser, Text: big("user")},
			{ID: "2", Role: history.RoleAssistant, Text: "small", ToolCalls: []history.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"p":"x"}`)}}},
			{ID: "3", Role: history.RoleTool, ToolCallID: "c1", Text: big("tool")},
			{ID: "4", Role: history.RoleAssistant, Text: big("assistant")},
			{ID: "5", Role: history.RoleUser, Text: "sessionkit-splice-00-0"},
		},
		Tools: []provider.ToolSpec{{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
}

// TestSpliceMatchesGoOpenAI: with large contents spliced by the transport,
// the server receives byte for byte the body go-openai encodes itself, on
// the streaming and the plain path, and on every attempt of a retry.
func TestSpliceMatchesGoOpenAI(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var onDelta func(string)
		if stream {
			onDelta = func(string) {}
		}
		bodies := func(min int) [][]byte {
			old := spliceMin
			spliceMin = min
			defer func() { spliceMin = old }()
			f := newFake(t, apiError(http.StatusInternalServerError, "busy", "server_error", ""), reply("ok"))
			p, _ := newProvider(t, f, WithTemperature(0.5), WithMaxRetries(1))
			req := largeRequest()
			in := "input " + strings.Repeat("é<\u2028>\xe2\x80 ", 3000)
			req.Messages = append(req.Messages, history.Message{ID: "in", Role: history.RoleUser, Text: in})
			resp, err := p.Complete(context.Background(), req, onDelta)
			require.NoError(t, err)
			require.Equal(t, "ok", resp.Message.Text)
			var out [][]byte
			for _, r := range f.requests() {
				out = append(out, r.Raw)
			}
			return out
		}
		reference := bodies(1 << 30) // nothing spliced: go-openai's own encoding
		spliced := bodies(1024)
		oldChunk := spliceChunk
		spliceChunk = 7 // cut every content everywhere
		small := bodies(1024)
		spliceChunk = oldChunk
		require.Equal(t, spliced, small)
		require.Len(t, reference, 2)
		require.Len(t, spliced, 2)
		for i := range spliced {
			assert.Equal(t, string(reference[i]), string(spliced[i]), "stream %v attempt %d", stream, i)
		}
		// No placeholder is left: the one occurrence is message 5's own text.
		assert.Equal(t, 1, strings.Count(string(spliced[0]), "sessionkit-splice-"))
	}
}

func TestSpliceMissingPlaceholder(t *testing.T) {
	s := &splice{nonce: "n", texts: []string{"x"}}
	_, err := s.apply([]byte(`{"messages":[{"content":"other"}]}`))
	require.ErrorIs(t, err, errSplice)
	body, err := s.apply([]byte(`{"a":"sessionkit-splice-n-0","b":1}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":"x","b":1}`, string(body))
}

func BenchmarkAppendJSONString(b *testing.B) {
	for _, kind := range []string{"prose", "code"} {
		s := benchText(kind, 2_500_000)
		b.Run(kind+"/sessionkit", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			buf := make([]byte, 0, len(s)*2)
			for b.Loop() {
				buf = appendJSONString(buf[:0], s)
			}
		})
		b.Run(kind+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if _, err := json.Marshal(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// appendJSONString appends s as a JSON string exactly as encoding/json's
// Marshal writes it (HTML escaping on, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONBody(dst, s)
	return append(dst, '"')
}
