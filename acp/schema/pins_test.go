package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinTargets are the union variants, unions and enums whose codecs share
// code: each is decoded from every pin input and encoded back.
func pinTargets() map[string]func() any {
	return map[string]func() any{
		// Session updates, v1 and v2.
		"UserMessageChunk":          func() any { return new(UserMessageChunk) },
		"AgentMessageChunk":         func() any { return new(AgentMessageChunk) },
		"AgentThoughtChunk":         func() any { return new(AgentThoughtChunk) },
		"ToolCall":                  func() any { return new(ToolCall) },
		"ToolCallUpdate":            func() any { return new(ToolCallUpdate) },
		"Plan":                      func() any { return new(Plan) },
		"AvailableCommandsUpdate":   func() any { return new(AvailableCommandsUpdate) },
		"CurrentModeUpdate":         func() any { return new(CurrentModeUpdate) },
		"UsageUpdate":               func() any { return new(UsageUpdate) },
		"CompactionUpdate":          func() any { return new(CompactionUpdate) },
		"CompactionSummaryChunk":    func() any { return new(CompactionSummaryChunk) },
		"SessionInfoUpdate":         func() any { return new(SessionInfoUpdate) },
		"ConfigOptionUpdate":        func() any { return new(ConfigOptionUpdate) },
		"ConfigOptionUpdateV2":      func() any { return new(ConfigOptionUpdateV2) },
		"Notice":                    func() any { return new(Notice) },
		"PlanUpdate":                func() any { return new(PlanUpdate) },
		"PlanRemoved":               func() any { return new(PlanRemoved) },
		"UserMessage":               func() any { return new(UserMessage) },
		"StateUpdate":               func() any { return new(StateUpdate) },
		"UserMessageChunkV2":        func() any { return new(UserMessageChunkV2) },
		"AgentMessageChunkV2":       func() any { return new(AgentMessageChunkV2) },
		"AgentThoughtChunkV2":       func() any { return new(AgentThoughtChunkV2) },
		"AvailableCommandsUpdateV2": func() any { return new(AvailableCommandsUpdateV2) },
		"SessionNotification":       func() any { return new(SessionNotification) },
		"SessionNotificationV2":     func() any { return new(SessionNotificationV2) },
		// Other unions and tagged types.
		"ContentBlock":          func() any { return new(ContentBlock) },
		"ToolCallContent":       func() any { return new(ToolCallContent) },
		"ResourceContents":      func() any { return new(ResourceContents) },
		"McpServer":             func() any { return new(McpServer) },
		"AuthMethod":            func() any { return new(AuthMethod) },
		"SessionConfigOption":   func() any { return new(SessionConfigOption) },
		"SessionConfigOptionV2": func() any { return new(SessionConfigOptionV2) },
		"CommandV2":             func() any { return new(CommandV2) },
		"TextCommandInput":      func() any { return new(TextCommandInput) },
		"PlanContent":           func() any { return new(PlanContent) },
		// Enums.
		"ToolKind":          func() any { return new(ToolKind) },
		"ToolCallStatus":    func() any { return new(ToolCallStatus) },
		"PlanEntryPriority": func() any { return new(PlanEntryPriority) },
		"PlanEntryStatus":   func() any { return new(PlanEntryStatus) },
		"StopReason":        func() any { return new(StopReason) },
		"Role":              func() any { return new(Role) },
	}
}

// pinInputs are the golden files plus hand-written malformed and
// borderline values: wrong discriminators, missing and mistyped members,
// nulls, non-objects, and every enum's strings.
func pinInputs(t *testing.T) map[string][]byte {
	in := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		in["file:"+filepath.Base(f)] = data
	}
	for i, s := range []string{
		`null`, `[]`, `{}`, `5`, `"x"`, `true`, `{"a":1`, `{"sessionUpdate":5}`, `{"sessionUpdate":null}`,
		`{"sessionUpdate":"nope"}`, `{"sessionUpdate":"plan"}`, `{"sessionUpdate":"plan","entries":null}`,
		`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"urgent","status":"pending"}]}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"bogus","status":7}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":null,"content":[{"type":"diff","path":"p"}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"messageId":null}`,
		`{"sessionUpdate":"agent_message_chunk","content":null}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"video"},"messageId":"m"}`,
		`{"sessionUpdate":"user_message_chunk","messageId":"m","content":{"type":"image","data":"d","mimeType":"image/png"}}`,
		`{"sessionUpdate":"user_message","messageId":"m","content":null}`,
		`{"sessionUpdate":"state_update","state":"paused","stopReason":"_x"}`,
		`{"sessionUpdate":"state_update"}`,
		`{"sessionUpdate":"notice","severity":"info"}`,
		`{"sessionUpdate":"notice","severity":"","title":"t"}`,
		`{"sessionUpdate":"notice","severity":"loud","title":"t"}`,
		`{"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"p","content":"# x"}}`,
		`{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p"}}`,
		`{"sessionUpdate":"plan_update"}`,
		`{"sessionUpdate":"plan_removed","planId":"p"}`,
		`{"sessionUpdate":"config_option_update","configOptions":[{"type":"boolean","id":"x"}]}`,
		`{"sessionUpdate":"config_option_update","configOptions":null}`,
		`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"a","description":"b"},{"type":"command","name":"c","description":"d","input":{"type":"text","hint":"h"}},{"type":"other","name":"e","description":"f"}]}`,
		`{"sessionUpdate":"usage_update","used":1}`,
		`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":"x"}}`,
		`{"sessionUpdate":"compaction_update","compactionId":"c","status":"_x","summary":[1,{"type":"text","text":"a"}],"error":5}`,
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":[]}`,
		`{"sessionUpdate":"session_info_update","title":null,"updatedAt":3}`,
		`{"sessionUpdate":"current_mode_update","currentModeId":null}`,
		`{"type":"text","text":"a","annotations":{"audience":["user","robot"],"priority":"high"}}`,
		`{"type":"text","text":null}`, `{"type":5}`, `{"type":"diff","path":"p","newText":"n","oldText":null}`,
		`{"type":"content","content":{"type":"text","text":"a"}}`, `{"type":"terminal","terminalId":"t"}`,
		`{"type":"terminal"}`, `{"type":"resource","resource":{"uri":"u"}}`,
		`{"type":"resource","resource":{"uri":"u","text":"t","blob":"b"}}`,
		`{"type":"resource_link","name":"n","uri":"u","size":"big"}`,
		`{"uri":"u","text":"t"}`, `{"uri":"u","blob":"b","mimeType":null}`, `{"uri":"u"}`,
		`{"type":"http","name":"n","url":"u","headers":null}`, `{"type":"sse","name":"n"}`,
		`{"type":7,"name":"n","command":"c","args":[],"env":[]}`, `{"name":"n","command":"c"}`,
		`{"id":"i","name":"n","type":"terminal","args":null,"env":{"A":"b"}}`, `{"id":"i","name":"n","type":"agent","args":["x"]}`,
		`{"type":"select","id":"i","configId":"j","name":"n","currentValue":"v","options":[{"value":"v","name":"n"},{"value":1}]}`,
		`{"type":"boolean","id":"i"}`, `{"id":"i"}`,
		`{"type":"command","name":"n","description":"d","input":{"type":"text","hint":"h"}}`, `{"type":"text","hint":"h"}`,
		`{"name":"n","description":"d"}`, `{"hint":"h"}`, `{"type":"file","planId":"p","uri":"u","entries":[]}`,
		`{"sessionId":"s","update":null}`, `{"sessionId":"s"}`,
		`{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"_vendor","x":1},"_meta":{"a":1}}`,
		`{"sessionUpdate":"plan","entries":[],"_meta":null}`, `{"sessionUpdate":"plan","entries":[],"_meta":[]}`,
		`{"sessionUpdate":"plan","entries":[],"_meta":{"z":1,"a":"<&>"}}`,
		`"_custom"`, `"READ"`, `""`,
	} {
		in[fmt.Sprintf("raw:%03d", i)] = []byte(s)
	}
	for i, s := range []string{
		"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other",
		"pending", "in_progress", "completed", "failed", "cancelled", "high", "medium", "low",
		"end_turn", "max_tokens", "max_turn_requests", "refusal", "error", "assistant", "user",
	} {
		in[fmt.Sprintf("enum:%02d", i)], _ = json.Marshal(s)
	}
	return in
}

// pinResult is what decoding data into target gives: the error (and
// whether it wraps ErrMalformed), or the value encoded again.
func pinResult(target any, data []byte) string {
	var err error
	if su, ok := target.(*SessionUpdate); ok {
		*su, err = DecodeSessionUpdate(data)
	} else if su, ok := target.(*[2]SessionUpdate); ok {
		su[1], err = DecodeSessionUpdateV2(data)
	} else {
		err = json.Unmarshal(data, target)
	}
	if err != nil {
		left := "zero"
		if !reflect.ValueOf(target).Elem().IsZero() {
			left = "set"
		}
		return fmt.Sprintf("err malformed=%t left %s: %s", errors.Is(err, ErrMalformed), left, err)
	}
	if su, ok := target.(*[2]SessionUpdate); ok {
		target = su[1]
	}
	if su, ok := target.(*SessionUpdate); ok {
		target = *su
	}
	out, err := json.Marshal(target)
	if err != nil {
		return fmt.Sprintf("ok, encode err %s", err)
	}
	if rv := reflect.ValueOf(target); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		// The value receiver encodes the same bytes.
		if v, err := json.Marshal(rv.Elem().Interface()); err != nil || !bytes.Equal(v, out) {
			return fmt.Sprintf("ok, value encodes differently: %s %v", v, err)
		}
	}
	return fmt.Sprintf("ok %T %s", target, out)
}

// TestPins pins, for every target and input, what decoding gives and what
// the decoded value encodes to (testdata/pins.txt, rewritten by -update),
// and what the zero value of every target encodes to, so that the shared
// codecs keep the wire bytes and the errors exactly.
func TestPins(t *testing.T) {
	targets, inputs := pinTargets(), pinInputs(t)
	targets["DecodeSessionUpdate"] = func() any { return new(SessionUpdate) }
	targets["DecodeSessionUpdateV2"] = func() any { return new([2]SessionUpdate) }
	var names, ins []string
	for n := range targets {
		names = append(names, n)
	}
	for n := range inputs {
		ins = append(ins, n)
	}
	sort.Strings(names)
	sort.Strings(ins)
	var b strings.Builder
	for _, n := range names {
		zero := targets[n]()
		if _, ok := zero.(*SessionUpdate); !ok {
			if _, ok := zero.(*[2]SessionUpdate); !ok {
				out, err := json.Marshal(zero)
				fmt.Fprintf(&b, "%s zero: %s %v\n", n, out, err)
			}
		}
		for _, in := range ins {
			res := pinResult(targets[n](), inputs[in])
			if len(res) > 120 {
				res = fmt.Sprintf("%s... sha256 %.12x", res[:80], sha256.Sum256([]byte(res)))
			}
			fmt.Fprintf(&b, "%s %s: %s\n", n, in, res)
		}
	}
	two := &ContentBlock{Text: &TextContent{Text: "a"}, Image: &ImageContent{}}
	for i, v := range []any{two, *two, &ContentBlock{Unknown: &UnknownVariant{Tag: "x", Raw: json.RawMessage(`5`)}},
		&ToolCallContent{Diff: &ToolDiff{Path: "p"}, Terminal: &ToolTerminal{}}, ToolCallContent{Unknown: &UnknownVariant{Tag: "x"}},
		&ToolCallContent{Unknown: &UnknownVariant{Tag: "x", Raw: json.RawMessage(`{"type":"x","b":1}`)}},
		&McpServer{Type: "ws"}, &AgentMessageChunk{Content: *two}, &Notice{Severity: "loud", Title: "t"},
		&SessionNotification{SessionID: "s", Update: &UnknownSessionUpdate{Kind: "k", Raw: json.RawMessage(`[]`)}},
	} {
		out, err := json.Marshal(v)
		fmt.Fprintf(&b, "encode %d %T: %s %v\n", i, v, out, err)
	}
	path := filepath.Join("testdata", "pins.txt")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./acp/schema -run TestPins -update to create it")
	assert.Equal(t, string(want), b.String())
}
