package schema

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeSessionUpdateV2 is FuzzDecodeSessionUpdate for the v2 decoder:
// no panic, every error wraps ErrMalformed, and a stable round trip.
func FuzzDecodeSessionUpdateV2(f *testing.F) {
	seedUpdates(f, "v2_*.json")
	for _, s := range []string{
		`{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{"code":"x","message":5}}`,
		`{"sessionUpdate":"state_update","state":"_paused","stopReason":7,"_meta":[]}`,
		`{"sessionUpdate":"state_update"}`,
		`{"sessionUpdate":"user_message","messageId":"m","content":[{"type":"text","text":"a"},{"type":"text"},3]}`,
		`{"sessionUpdate":"user_message","messageId":null}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}`,
		`{"sessionUpdate":"agent_message_chunk","messageId":"m","content":[{"type":"text","text":"x"}]}`,
		`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"a","description":"d"},{"type":"command","name":"b","description":"d","input":{"type":"other"}},{"type":"_x","name":"c","description":"d"}]}`,
		`{"sessionUpdate":"tool_call","toolCallId":"t","title":"x"}`,
		`{"sessionUpdate":"compaction_update","compactionId":"c"}`,
		`{"sessionUpdate":"_vendor_thing","x":{"y":[null]}}`,
		`{"sessionUpdate":5}`, `[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkRoundTrip(t, DecodeSessionUpdateV2, data) })
}

// FuzzDecodeRequestsV2 checks the decoders of what a v2 client sends: no
// panic, and every error wraps ErrMalformed.
func FuzzDecodeRequestsV2(f *testing.F) {
	for _, s := range []string{
		`{"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{"auth":5}}`,
		`{"protocolVersion":2,"capabilities":"x"}`,
		`{"protocolVersion":-1,"info":null}`,
		`{"cwd":"/w","mcpServers":null,"additionalDirectories":null}`,
		`{"sessionId":"s","cwd":"/w","replayFrom":{"type":"start"}}`,
		`{"sessionId":"s","cwd":"/w","replayFrom":{"type":5}}`,
		`{"sessionId":"s","cwd":"/w","replayFrom":null}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []any{new(InitializeRequestV2), new(NewSessionRequestV2), new(ResumeSessionRequestV2), new(PromptResponseV2), new(InitializeResponseV2)} {
			if err := json.Unmarshal(data, v); err != nil {
				var syn *json.SyntaxError
				if !errors.Is(err, ErrMalformed) && !errors.As(err, &syn) {
					t.Fatalf("%T: error does not wrap ErrMalformed: %v", v, err)
				}
			}
		}
	})
}
