package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeSessionUpdate checks that decoding never panics, that every
// error wraps ErrMalformed, and that whatever decodes survives a round trip:
// decode, encode, decode gives an equal value and a stable encoding.
func FuzzDecodeSessionUpdate(f *testing.F) {
	seedUpdates(f, "*.json")
	for _, s := range []string{
		`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed","summary":[{"type":"text","text":"ok"},{"type":"text"},5],"error":7,"_meta":[]}`,
		`{"sessionUpdate":"compaction_update","compactionId":null,"status":"completed"}`,
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":[{"type":"text","text":"x"}]}`,
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"resource","resource":{"uri":"u","blob":"AA==","text":"t"}}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{"type":"diff","path":"p","newText":"n"},{"type":"weird"}],"rawInput":{ "a" : [1, 2] }}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t","kind":null,"content":null,"locations":[{"path":"p","line":-1}]}`,
		`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1e400,"currency":"X"},"_meta":{"n":1.0,"s":"\u2028<"}}`,
		`{"sessionUpdate":"available_commands_update","availableCommands":"x"}`,
		`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending","_meta":{}}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\xff"},"messageId":null}`,
		`{"sessionUpdate":"future","nested":{"a":[true,null]}}`,
		`{"sessionUpdate":5}`, `[]`, `null`, `{`, `{"sessionUpdate":"plan","ENTRIES":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkRoundTrip(t, DecodeSessionUpdate, data) })
}

// seedUpdates adds the golden files matching pattern that hold a session
// update to f's corpus.
func seedUpdates(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil && bytes.Contains(b, []byte(`"sessionUpdate"`)) {
			var compact bytes.Buffer
			if json.Compact(&compact, b) == nil {
				f.Add(compact.Bytes())
			}
		}
	}
}

// checkRoundTrip decodes data with decode: an error must wrap ErrMalformed;
// what decodes must survive decode, encode, decode equal, with a stable
// encoding.
func checkRoundTrip(t *testing.T, decode func([]byte) (SessionUpdate, error), data []byte) {
	u1, err := decode(data)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error does not wrap ErrMalformed: %v", err)
		}
		return
	}
	b1, err := json.Marshal(u1)
	if err != nil {
		t.Fatalf("encoding a decoded %T: %v", u1, err)
	}
	u2, err := decode(b1)
	if err != nil {
		t.Fatalf("decoding the re-encoded %s: %v", b1, err)
	}
	if !reflect.DeepEqual(u1, u2) {
		t.Fatalf("round trip changed the update:\n%#v\n%#v\n(from %s)", u1, u2, b1)
	}
	b2, err := json.Marshal(u2)
	if err != nil || !bytes.Equal(b1, b2) {
		t.Fatalf("encoding is not stable: %s -> %s (%v)", b1, b2, err)
	}
}
