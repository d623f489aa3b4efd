package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
)

// discardTransport answers every request with a fixed streamed reply after
// reading the body, so that a benchmark measures building and sending the
// request, not a server.
type discardTransport struct{ reply string }

func (d discardTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader(d.reply)),
		Request:    r,
	}, nil
}

// BenchmarkSummaryRequest sends one summary request whose input is a single
// message of size bytes (the shape compact.Composer builds), streamed, to a
// transport that reads the body and replies at once.
func BenchmarkSummaryRequest(b *testing.B) {
	var sse strings.Builder
	for _, l := range []string{openaitest.RoleChunk(), openaitest.TextChunk("summary"), openaitest.FinishChunk("stop"), openaitest.UsageChunk(10, 2)} {
		sse.WriteString("data: " + l + "\n\n")
	}
	sse.WriteString("data: [DONE]\n\n")
	for _, tc := range []struct {
		kind string
		size int
	}{{"prose", 250_000}, {"prose", 2_500_000}, {"prose", 25_000_000}, {"code", 2_500_000}} {
		size := tc.size
		b.Run(fmt.Sprintf("%s/bytes=%d", tc.kind, size), func(b *testing.B) {
			p, err := New(WithModel("m"), WithBaseURL("http://bench.invalid/v1"),
				WithHTTPClient(&http.Client{Transport: discardTransport{reply: sse.String()}}))
			if err != nil {
				b.Fatal(err)
			}
			text := benchText(tc.kind, size)
			req := &provider.Request{
				Purpose:  provider.PurposeSummary,
				System:   "You summarize.",
				Messages: []history.Message{{ID: "in", Role: history.RoleUser, Text: text}},
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Complete(context.Background(), req, func(string) {})
				if err != nil || resp.Message.Text != "summary" {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

// benchText is size bytes of transcript-like text: "prose" is the peer
// benchmark's messages (ASCII words, a newline per 500-byte entry), "code"
// has a character to escape every 10 bytes and non-ASCII runes.
func benchText(kind string, size int) string {
	line := "[user] message 17: \"alpha\" bravo <charlie> delta & echo — foxtrot\n"
	if kind == "prose" {
		line = "[assistant] message 17:" + strings.Repeat(" alpha bravo charlie delta echo foxtrot", 12) + "\n"
	}
	var b strings.Builder
	b.Grow(size + len(line))
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.String()[:size]
}
