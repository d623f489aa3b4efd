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
// puts each content back in place of its placeholder. The content is not
// copied into a body buffer: the body is a reader that escapes it a chunk
// at a time as the HTTP transport sends it (a multi-megabyte buffer of
// fresh memory cost more in page faults than the escaping itself), and its
// length is counted up front. The body is byte for byte the one go-openai
// would have sent (TestSpliceMatchesGoOpenAI).

// spliceMin is the content size from which a content is spliced; a variable
// so that tests can splice small contents.
var spliceMin = 32 << 10

// spliceKey is the context key of a request's *splice.
type spliceKey struct{}

// splice is the texts one request's placeholders stand for.
type splice struct {
	nonce string   // random, so no other string of the body can equal a placeholder
	texts []string // texts[k] replaces placeholder k
}

// placeholder is the string that stands for texts[k] in go-openai's
// encoding; it needs no JSON escaping.
func (s *splice) placeholder(k int) string {
	return "sessionkit-splice-" + s.nonce + "-" + strconv.Itoa(k)
}

// add registers t and returns its placeholder.
func (s *splice) add(t string) string {
	s.texts = append(s.texts, t)
	return s.placeholder(len(s.texts) - 1)
}

// extractLarge replaces every message content of at least spliceMin bytes
// in creq with a placeholder and returns the splice, or nil when there is
// nothing to splice. creq's message slice is its own (buildRequest made it).
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
		m.Content = s.add(m.Content)
	}
	return s, nil
}

// errSplice reports a body in which a placeholder was not found; it means a
// change of go-openai's encoding, and the request is not sent.
var errSplice = errors.New("request body: a large message could not be put in place (go-openai changed its encoding?)")

// bodyPart is a run of a spliced body: a literal run of go-openai's body,
// or a text to escape (without its quotes, which the literals keep).
type bodyPart struct {
	lit    []byte
	text   string
	isText bool
}

// parts splits go-openai's body at the placeholders and returns the runs of
// the spliced body and its length.
func (s *splice) parts(body []byte) ([]bodyPart, int64, error) {
	parts := make([]bodyPart, 0, 2*len(s.texts)+1)
	var size int64
	rest := body
	for k, t := range s.texts {
		ph := `"` + s.placeholder(k) + `"`
		at := bytes.Index(rest, []byte(ph))
		if at < 0 {
			return nil, 0, errSplice
		}
		parts = append(parts, bodyPart{lit: rest[:at+1]}, bodyPart{text: t, isText: true})
		size += int64(at+1) + int64(escapedLen(t))
		rest = rest[at+len(ph)-1:] // from the closing quote
	}
	parts = append(parts, bodyPart{lit: rest})
	return parts, size + int64(len(rest)), nil
}

// nextChunk cuts the next chunk of up to spliceChunk bytes off the front of
// *t, on a rune boundary, so that every rune is escaped whole (a run of
// stray continuation bytes escapes the same however it is cut). A chunk is
// never empty while *t is not.
func nextChunk(t *string) string {
	s := *t
	n := len(s)
	if n > spliceChunk {
		n = runeCut(s[:spliceChunk])
		if n == 0 {
			// Shorter than one rune: take the rune whole.
			_, n = utf8.DecodeRuneInString(s)
		}
	}
	*t = s[n:]
	return s[:n]
}

// runeCut returns where to cut b so that it does not end inside a rune: before
// an incomplete rune at its end, else at its end.
func runeCut(b string) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRuneInString(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// apply returns the spliced body in one buffer (tests compare it).
func (s *splice) apply(body []byte) ([]byte, error) {
	parts, size, err := s.parts(body)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(newBodyReader(parts), size+1))
}

// spliceChunk is how many bytes of a content bodyReader escapes at a time;
// a variable so that tests can cut contents everywhere.
var spliceChunk = 16 << 10

// bodyReader reads a spliced body, escaping each content a chunk at a time
// into one small reused buffer.
type bodyReader struct {
	parts   []bodyPart
	i       int    // the current part
	off     int    // bytes of the current literal consumed
	buf     []byte // escaping buffer
	pending []byte // escaped bytes not yet read
	text    string // what is left of the current text part, once started
	started bool   // the current text part is started
}

func newBodyReader(parts []bodyPart) *bodyReader { return &bodyReader{parts: parts} }

// Read implements io.Reader.
func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.pending) > 0 {
			c := copy(p[n:], r.pending)
			r.pending = r.pending[c:]
			n += c
			continue
		}
		if r.i == len(r.parts) {
			if n == 0 {
				return 0, io.EOF
			}
			break
		}
		pt := &r.parts[r.i]
		if !pt.isText {
			c := copy(p[n:], pt.lit[r.off:])
			n += c
			r.off += c
			if r.off == len(pt.lit) {
				r.i, r.off = r.i+1, 0
			}
			continue
		}
		if !r.started {
			r.text, r.started = pt.text, true
		}
		if r.text == "" {
			r.i, r.started = r.i+1, false
			continue
		}
		r.buf = appendJSONBody(r.buf[:0], nextChunk(&r.text))
		r.pending = r.buf
	}
	return n, nil
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
	parts, size, err := s.parts(small)
	if err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(newBodyReader(parts))
	out.ContentLength = size
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(newBodyReader(parts)), nil }
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
func load8[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// needsEscape8 reports whether some byte of w is not in jsonSafe: a control
// byte, a byte of a multi-byte rune, or one of '"', '\\', '<', '>', '&'. A
// byte b of x is zero exactly when (x-ones)&^x has b's high bit set; '<'
// and '>' are tested at once (with bit 1 set both are '>'), and so are '"'
// and '&' (with bit 2 set both are '&'); a byte below 0x20 has its high bit
// set after w-ones*0x20. The tests are or-ed without branches. It may say
// true for a word that needs nothing (the byte loop then decides) but never
// false for one that does.
func needsEscape8(w uint64) bool {
	lg := (w | ones*0x02) ^ (ones * '>')
	qa := (w | ones*0x04) ^ (ones * '&')
	bs := w ^ (ones * '\\')
	return ((w-ones*0x20)|w|(lg-ones)&^lg|(qa-ones)&^qa|(bs-ones)&^bs)&highs != 0
}

// escapedLen is len(appendJSONBody(nil, s)), counted without writing.
func escapedLen[T string | []byte](s T) int {
	n := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && !needsEscape8(load8(s, i)) {
			i += 8
			n += 8
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case jsonSafe[b]:
				n++
			case b == '\\' || b == '"' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if (c == utf8.RuneError && size == 1) || c == '\u2028' || c == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// appendJSONBody appends s escaped as the inside of a JSON string. It skips
// eight plain ASCII bytes at a time and copies every run that needs no
// escaping whole.
func appendJSONBody[T string | []byte](dst []byte, s T) []byte {
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
			c, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
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
	return append(dst, s[start:]...)
}
