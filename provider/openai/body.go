package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
)

// Large message contents bypass go-openai's JSON encoding.
//
// go-openai encodes a request with encoding/json, through a MarshalJSON
// method on every message: the content is escaped once, copied, then scanned
// and copied again by encoding/json's check of the method's output. For the
// one multi-megabyte message of a summary request that cost about 30 ms per
// 2.5 MB (78 MB/s), most of a compaction's own time. So Complete hands
// go-openai a placeholder string for every content of at least spliceMin
// bytes, and the transport, which sees the small body go-openai produced,
// puts each content back in place of its quoted placeholder, escaped by
// appendJSONString into one buffer of the final size. The body is byte for
// byte the one go-openai would have sent (TestSpliceMatchesGoOpenAI).

// spliceMin is the content size from which a content is spliced; a variable
// so that tests can splice small contents.
var spliceMin = 32 << 10

// spliceKey is the context key of a request's *splice.
type spliceKey struct{}

// splice is the contents one request's placeholders stand for.
type splice struct {
	nonce    string   // random, so no other string of the body can equal a placeholder
	contents []string // contents[k] replaces placeholder k
	size     int      // sum of len(contents)
}

// placeholder is the string that stands for contents[k] in go-openai's
// encoding; it needs no JSON escaping.
func (s *splice) placeholder(k int) string {
	return "sessionkit-splice-" + s.nonce + "-" + strconv.Itoa(k)
}

// extractLarge replaces every message content of at least spliceMin bytes
// in creq with a placeholder and returns the splice, or nil when there is
// none. creq's message slice is its own (buildRequest made it).
func extractLarge(creq *goopenai.ChatCompletionRequest) (*splice, error) {
	var s *splice
	for i := range creq.Messages {
		m := &creq.Messages[i]
		if len(m.Content) < spliceMin {
			continue
		}
		if s == nil {
			var nonce [16]byte
			if _, err := rand.Read(nonce[:]); err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			s = &splice{nonce: hex.EncodeToString(nonce[:])}
		}
		s.contents = append(s.contents, m.Content)
		s.size += len(m.Content)
		m.Content = s.placeholder(len(s.contents) - 1)
	}
	return s, nil
}

// errSplice reports a body in which a placeholder was not found; it means a
// change of go-openai's encoding, and the request is not sent.
var errSplice = errors.New("request body: a large message could not be put in place (go-openai changed its encoding?)")

// apply returns the request body with every quoted placeholder replaced by
// its content as a JSON string.
func (s *splice) apply(body []byte) ([]byte, error) {
	out := make([]byte, 0, len(body)+s.size+s.size/8+64)
	rest := body
	for k, content := range s.contents {
		ph := `"` + s.placeholder(k) + `"`
		at := bytes.Index(rest, []byte(ph))
		if at < 0 {
			return nil, errSplice
		}
		out = append(out, rest[:at]...)
		out = appendJSONString(out, content)
		rest = rest[at+len(ph):]
	}
	return append(out, rest...), nil
}

// spliceRequest returns r with its body spliced when r's context carries a
// splice, and r itself otherwise. It never modifies r.
func spliceRequest(r *http.Request) (*http.Request, error) {
	s, ok := r.Context().Value(spliceKey{}).(*splice)
	if !ok || r.Body == nil {
		return r, nil
	}
	small, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	body, err := s.apply(small)
	if err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return out, nil
}

// jsonSafe marks the ASCII bytes encoding/json writes unescaped with HTML
// escaping on (its htmlSafeSet): printable ASCII except '"', '\\', '<', '>'
// and '&'.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Word-at-a-time tests over the eight bytes of a uint64.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load8 reads s[i:i+8] as a little-endian uint64 (the compiler makes this
// one load).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// needsEscape8 reports whether some byte of w is not in jsonSafe: a control
// byte, a byte of a multi-byte rune, or one of '"', '\\', '<', '>', '&'. A
// byte b of x is zero exactly when (x-ones)&^x has b's high bit set; the
// tests are or-ed without branches. It may say true for a word that needs
// nothing (the byte loop then decides) but never false for one that does.
func needsEscape8(w uint64) bool {
	q, bs, lt, gt, amp := w^(ones*'"'), w^(ones*'\\'), w^(ones*'<'), w^(ones*'>'), w^(ones*'&')
	return ((w-ones*0x20)&^w|w|
		(q-ones)&^q|(bs-ones)&^bs|(lt-ones)&^lt|(gt-ones)&^gt|(amp-ones)&^amp)&highs != 0
}

// appendJSONString appends s as a JSON string exactly as encoding/json's
// Marshal writes it (HTML escaping on, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped). It skips eight plain ASCII bytes at a time and copies
// every run that needs no escaping whole.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && !needsEscape8(load8(s, i)) {
			i += 8
			continue
		}
		// Byte by byte through the next eight bytes (a rune may end past them).
		for end := min(i+8, len(s)); i < end; {
			b := s[i]
			if b < utf8.RuneSelf {
				if jsonSafe[b] {
					i++
					continue
				}
				dst = append(dst, s[start:i]...)
				switch b {
				case '\\', '"':
					dst = append(dst, '\\', b)
				case '\b':
					dst = append(dst, '\\', 'b')
				case '\f':
					dst = append(dst, '\\', 'f')
				case '\n':
					dst = append(dst, '\\', 'n')
				case '\r':
					dst = append(dst, '\\', 'r')
				case '\t':
					dst = append(dst, '\\', 't')
				default:
					dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
				}
				i++
				start = i
				continue
			}
			c, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case c == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
			case c == '\u2028' || c == '\u2029':
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			default:
				i += size
				continue
			}
			i += size
			start = i
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
