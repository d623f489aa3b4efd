package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

func decodeCompaction(t *testing.T, s string) *CompactionUpdate {
	t.Helper()
	u, err := DecodeSessionUpdate([]byte(s))
	require.NoError(t, err)
	cu, ok := u.(*CompactionUpdate)
	require.True(t, ok, "decoded as %T", u)
	return cu
}

func TestCompactionUpdateTriStateDecode(t *testing.T) {
	const head = `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"`
	omitted := decodeCompaction(t, head+`}`)
	assert.True(t, omitted.Summary.IsZero())
	assert.True(t, omitted.Error.IsZero())
	assert.True(t, omitted.Meta.IsZero())

	null := decodeCompaction(t, head+`,"summary":null,"error":null,"_meta":null}`)
	assert.True(t, null.Summary.IsNull())
	assert.True(t, null.Error.IsNull())
	assert.True(t, null.Meta.IsNull())

	value := decodeCompaction(t, head+`,"summary":[{"type":"text","text":"s"}],"error":"e","_meta":{"k":1}}`)
	summary, ok := value.Summary.Get()
	require.True(t, ok)
	assert.Equal(t, []ContentBlock{TextBlock("s")}, summary)
	e, ok := value.Error.Get()
	require.True(t, ok)
	assert.Equal(t, "e", e)
	m, ok := value.Meta.Get()
	require.True(t, ok)
	assert.Equal(t, map[string]any{"k": float64(1)}, m)

	empty := decodeCompaction(t, head+`,"summary":[]}`)
	summary, ok = empty.Summary.Get()
	require.True(t, ok, "summary: [] is a value (it clears)")
	assert.Empty(t, summary)
	assert.NotNil(t, summary)
}

// docs/design.md §7.4: nothing but what was set goes on the wire.
func TestCompactionUpdateEmitsOnlyWhatWasSet(t *testing.T) {
	tests := []struct {
		name string
		u    SessionUpdate
		want string
	}{
		{"in_progress", &CompactionUpdate{CompactionID: "c", Status: CompactionInProgress},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"in_progress"}`},
		{"completed keeps chunks", &CompactionUpdate{CompactionID: "c", Status: CompactionCompleted},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed"}`},
		{"failed clears summary", &CompactionUpdate{CompactionID: "c", Status: CompactionFailed, Summary: Null[[]ContentBlock](), Error: Value("boom")},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"failed","summary":null,"error":"boom"}`},
		{"explicit empty summary", &CompactionUpdate{CompactionID: "c", Status: CompactionCompleted, Summary: Value([]ContentBlock{})},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed","summary":[]}`},
		{"chunk without meta", &CompactionSummaryChunk{CompactionID: "c", Content: TextBlock("x")},
			`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"text","text":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.u)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
		})
	}
	// Empty strings and maps in optional places never produce null either.
	b, err := json.Marshal(&CompactionUpdate{CompactionID: "c", Status: CompactionInProgress})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "null")
	assert.NotContains(t, string(b), "[]")
}

// What the official SDK repairs (x-deserialize-default-on-error and
// -skip-invalid-items) is repaired the same way, not rejected.
func TestCompactionUpdateLenient(t *testing.T) {
	const head = `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"`
	tests := []struct {
		name  string
		extra string
		check func(t *testing.T, u *CompactionUpdate)
	}{
		{"summary not an array is omitted", `,"summary":"oops"`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Summary.IsZero())
		}},
		{"summary object is omitted", `,"summary":{"type":"text","text":"x"}`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Summary.IsZero())
		}},
		{"invalid summary items are dropped", `,"summary":[{"type":"text","text":"ok"},{"type":"text"},5,null,{"text":"no type"}]`, func(t *testing.T, u *CompactionUpdate) {
			s, ok := u.Summary.Get()
			require.True(t, ok)
			assert.Equal(t, []ContentBlock{TextBlock("ok")}, s)
		}},
		{"all items invalid leaves [] which clears", `,"summary":[{"type":"image"}]`, func(t *testing.T, u *CompactionUpdate) {
			s, ok := u.Summary.Get()
			require.True(t, ok)
			assert.Empty(t, s)
		}},
		{"unknown block types are kept", `,"summary":[{"type":"video","uri":"x"}]`, func(t *testing.T, u *CompactionUpdate) {
			s, ok := u.Summary.Get()
			require.True(t, ok)
			require.Len(t, s, 1)
			require.NotNil(t, s[0].Unknown)
			assert.Equal(t, "video", s[0].Type())
		}},
		{"error not a string is omitted", `,"error":5`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Error.IsZero())
		}},
		{"meta array is omitted", `,"_meta":[1]`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Meta.IsZero())
		}},
		{"meta string is omitted", `,"_meta":"x"`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Meta.IsZero())
		}},
		{"unknown keys are ignored", `,"extra":{"a":1},"summaryX":null`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Summary.IsZero())
		}},
		{"keys are case-sensitive", `,"Summary":null,"ERROR":"x"`, func(t *testing.T, u *CompactionUpdate) {
			assert.True(t, u.Summary.IsZero())
			assert.True(t, u.Error.IsZero())
		}},
		{"unknown status kept verbatim", `,"status":"paused_for_review"`, func(t *testing.T, u *CompactionUpdate) {
			assert.Equal(t, CompactionStatus("paused_for_review"), u.Status)
			assert.False(t, u.Status.Known())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, decodeCompaction(t, head+tt.extra+`}`))
		})
	}
}

func TestDecodeSessionUpdateMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"array", `[]`, `session update: expected object, got array`},
		{"string", `"compaction_update"`, `session update: expected object, got string`},
		{"null", `null`, `session update: expected object, got null`},
		{"missing discriminator", `{"compactionId":"c","status":"completed"}`, `session update: missing discriminator "sessionUpdate"`},
		{"discriminator number", `{"sessionUpdate":5}`, `session update: discriminator "sessionUpdate" must be a string, got number`},
		{"discriminator null", `{"sessionUpdate":null,"compactionId":"c","status":"completed"}`, `must be a string, got null`},
		{"compactionId missing", `{"sessionUpdate":"compaction_update","status":"completed"}`,
			`session update "compaction_update": missing required field "compactionId"`},
		{"compactionId null", `{"sessionUpdate":"compaction_update","compactionId":null,"status":"completed"}`,
			`session update "compaction_update": field "compactionId": expected string, got null`},
		{"compactionId number", `{"sessionUpdate":"compaction_update","compactionId":7,"status":"completed"}`,
			`session update "compaction_update": field "compactionId": expected string, got number`},
		{"compactionId wrong case", `{"sessionUpdate":"compaction_update","CompactionId":"c","status":"completed"}`,
			`missing required field "compactionId"`},
		{"status missing", `{"sessionUpdate":"compaction_update","compactionId":"c"}`,
			`session update "compaction_update": missing required field "status"`},
		{"status null", `{"sessionUpdate":"compaction_update","compactionId":"c","status":null}`,
			`field "status": expected string, got null`},
		{"status number", `{"sessionUpdate":"compaction_update","compactionId":"c","status":1}`,
			`field "status": expected string, got number`},
		{"chunk content array", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":[{"type":"text","text":"x"}]}`,
			`session update "compaction_summary_chunk": field "content": content block: expected object, got array`},
		{"chunk content missing", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c"}`,
			`session update "compaction_summary_chunk": missing required field "content"`},
		{"chunk content null", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":null}`,
			`field "content": expected object, got null`},
		{"chunk content without type", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"text":"x"}}`,
			`field "content": content block: missing discriminator "type"`},
		{"chunk content invalid text block", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"text"}}`,
			`field "content": content block "text": missing required field "text"`},
		{"chunk compactionId missing", `{"sessionUpdate":"compaction_summary_chunk","content":{"type":"text","text":"x"}}`,
			`missing required field "compactionId"`},
		{"message chunk text number", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}`,
			`session update "agent_message_chunk": field "content": content block "text": field "text": expected string, got number`},
		{"image without mimeType", `{"sessionUpdate":"user_message_chunk","content":{"type":"image","data":"AA=="}}`,
			`content block "image": missing required field "mimeType"`},
		{"resource without text or blob", `{"sessionUpdate":"user_message_chunk","content":{"type":"resource","resource":{"uri":"file:///a"}}}`,
			`resource contents: neither text contents`},
		{"usage negative", `{"sessionUpdate":"usage_update","used":-1,"size":10}`,
			`session update "usage_update": field "used": expected non-negative integer, got number -1`},
		{"usage fractional", `{"sessionUpdate":"usage_update","used":1.5,"size":10}`, `field "used": expected non-negative integer`},
		{"usage size missing", `{"sessionUpdate":"usage_update","used":1}`, `missing required field "size"`},
		{"commands missing", `{"sessionUpdate":"available_commands_update"}`, `missing required field "availableCommands"`},
		{"tool call without title", `{"sessionUpdate":"tool_call","toolCallId":"t"}`, `session update "tool_call": missing required field "title"`},
		{"tool call update without id", `{"sessionUpdate":"tool_call_update","status":"completed"}`, `missing required field "toolCallId"`},
		{"plan without entries", `{"sessionUpdate":"plan"}`, `missing required field "entries"`},
		{"plan_update without plan", `{"sessionUpdate":"plan_update","entries":"<b>"}`, `missing required field "plan"`},
		{"plan_update without planId", `{"sessionUpdate":"plan_update","plan":{"type":"items","entries":[]}}`, `missing required field "planId"`},
		{"plan_removed without planId", `{"sessionUpdate":"plan_removed"}`, `missing required field "planId"`},
		{"mode id number", `{"sessionUpdate":"current_mode_update","currentModeId":3}`, `field "currentModeId": expected string, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := DecodeSessionUpdate([]byte(tt.in))
			require.Error(t, err)
			assert.Nil(t, u)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestDecodeSessionUpdateUnknownKinds(t *testing.T) {
	tests := []struct{ in, kind, raw string }{
		{`{"sessionUpdate":"_vendor_banner","severity":"info","message":"m"}`, "_vendor_banner", `{"sessionUpdate":"_vendor_banner","severity":"info","message":"m"}`},
		{`{ "sessionUpdate" : "future_kind", "x" : [1, 2] }`, "future_kind", `{"sessionUpdate":"future_kind","x":[1,2]}`},
		{`{"sessionUpdate":"Compaction_Update","compactionId":"c"}`, "Compaction_Update", `{"sessionUpdate":"Compaction_Update","compactionId":"c"}`},
		{`{"sessionUpdate":"plan_moved","entries":"<b>"}`, "plan_moved", `{"sessionUpdate":"plan_moved","entries":"\u003cb\u003e"}`},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			u, err := DecodeSessionUpdate([]byte(tt.in))
			require.NoError(t, err)
			unk, ok := u.(*UnknownSessionUpdate)
			require.True(t, ok, "decoded as %T", u)
			assert.Equal(t, tt.kind, unk.SessionUpdateKind())
			assert.Equal(t, tt.raw, string(unk.Raw))
			b, err := json.Marshal(&SessionNotification{SessionID: "s", Update: u})
			require.NoError(t, err)
			assert.Equal(t, `{"sessionId":"s","update":`+tt.raw+`}`, string(b))
		})
	}
}

// Decoding is by discriminator, never by shape: a compaction_summary_chunk is
// not a message chunk although both carry a content block.
func TestDecodeByDiscriminatorNotShape(t *testing.T) {
	u, err := DecodeSessionUpdate([]byte(`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"text","text":"x"}}`))
	require.NoError(t, err)
	assert.IsType(t, &CompactionSummaryChunk{}, u)

	u, err = DecodeSessionUpdate([]byte(`{"sessionUpdate":"user_message_chunk","compactionId":"c","content":{"type":"text","text":"x"}}`))
	require.NoError(t, err)
	assert.IsType(t, &UserMessageChunk{}, u)

	// A variant decoded directly checks a discriminator that is present.
	var cu CompactionUpdate
	err = json.Unmarshal([]byte(`{"sessionUpdate":"usage_update","compactionId":"c","status":"completed"}`), &cu)
	assert.ErrorContains(t, err, `"sessionUpdate" is "usage_update", expected "compaction_update"`)
	require.NoError(t, json.Unmarshal([]byte(`{"compactionId":"c","status":"completed"}`), &cu))
}

func TestSessionNotificationDecode(t *testing.T) {
	var n SessionNotification
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"text","text":"x"},"_meta":null}}`), &n))
	assert.Equal(t, "s", n.SessionID)
	assert.Equal(t, &CompactionSummaryChunk{CompactionID: "c", Content: TextBlock("x")}, n.Update)

	err := json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":null,"status":"completed"}}`), &n)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.EqualError(t, err, `field "update": session update "compaction_update": field "compactionId": expected string, got null`)

	err = json.Unmarshal([]byte(`{"update":{"sessionUpdate":"plan","entries":[]}}`), &n)
	assert.EqualError(t, err, `missing required field "sessionId"`)
	err = json.Unmarshal([]byte(`{"sessionId":"s","update":null}`), &n)
	assert.EqualError(t, err, `field "update": expected object, got null`)

	_, err = json.Marshal(SessionNotification{SessionID: "s"})
	assert.ErrorContains(t, err, "needs an update")
}

func TestSupportsCompaction(t *testing.T) {
	tests := []struct {
		caps string // clientCapabilities; "" = absent
		want bool
	}{
		{"", false},
		{`{}`, false},
		{`{"session":null}`, false},
		{`{"session":true}`, false},
		{`{"session":1}`, false},
		{`{"session":"compaction"}`, false},
		{`{"session":[{"compaction":{}}]}`, false},
		{`{"session":{}}`, false},
		{`{"session":{"compaction":null}}`, false},
		{`{"session":{"compaction":true}}`, false},
		{`{"session":{"compaction":false}}`, false},
		{`{"session":{"compaction":1}}`, false},
		{`{"session":{"compaction":"yes"}}`, false},
		{`{"session":{"compaction":[]}}`, false},
		{`{"session":{"compaction":[{}]}}`, false},
		{`{"session":{"Compaction":{}}}`, false},
		{`{"session":{"compaction":{}}}`, true},
		{`{"session":{"compaction":{"_meta":{"x":1}}}}`, true},
		{`{"session":{"compaction":{"future":true}, "configOptions":{}}}`, true},
		{`{"session":{"compaction":{},"compaction":null}}`, false}, // the last duplicate wins, as in JSON.parse
		{`{"fs":{"readTextFile":"yes"},"terminal":"no","session":{"compaction":{}}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.caps, func(t *testing.T) {
			in := `{"protocolVersion":1}`
			if tt.caps != "" {
				in = `{"protocolVersion":1,"clientCapabilities":` + tt.caps + `}`
			}
			var req InitializeRequest
			require.NoError(t, json.Unmarshal([]byte(in), &req))
			assert.Equal(t, tt.want, req.ClientCapabilities.SupportsCompaction())
		})
	}

	var typed ClientSessionCapabilities
	require.NoError(t, json.Unmarshal([]byte(`{"compaction":{"_meta":{"v":2}},"notices":{}}`), &typed))
	assert.Equal(t, ClientSessionCapabilities{Compaction: &CompactionCapabilities{Meta: map[string]any{"v": float64(2)}}}, typed)
	require.NoError(t, json.Unmarshal([]byte(`{"compaction":true}`), &typed))
	assert.Nil(t, typed.Compaction, "a non-object compaction is not advertised")

	var caps ClientCapabilities
	assert.False(t, caps.SupportsCompaction())
	require.NoError(t, caps.SetSession(ClientSessionCapabilities{Compaction: &CompactionCapabilities{}}))
	assert.True(t, caps.SupportsCompaction())
	assert.JSONEq(t, `{"compaction":{}}`, string(caps.Session))
	require.NoError(t, caps.SetSession(ClientSessionCapabilities{}))
	assert.False(t, caps.SupportsCompaction())
}

// Capability fields carry x-deserialize-default-on-error: a bad value is the
// default, not a failed initialize.
func TestInitializeRequestLenientCapabilities(t *testing.T) {
	var req InitializeRequest
	require.NoError(t, json.Unmarshal([]byte(`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":"yes","writeTextFile":true},"terminal":"no"},"clientInfo":{"name":5}}`), &req))
	assert.Equal(t, FileSystemCapabilities{WriteTextFile: true}, req.ClientCapabilities.FS)
	assert.False(t, req.ClientCapabilities.Terminal)
	assert.Nil(t, req.ClientInfo)

	require.NoError(t, json.Unmarshal([]byte(`{"protocolVersion":1,"clientCapabilities":"bogus"}`), &req))
	assert.Equal(t, ClientCapabilities{}, req.ClientCapabilities)

	for in, msg := range map[string]string{
		`{}`:                        `missing required field "protocolVersion"`,
		`{"protocolVersion":"1"}`:   `field "protocolVersion": expected non-negative integer, got string`,
		`{"protocolVersion":70000}`: `field "protocolVersion": expected non-negative integer, got number 70000`,
		`{"protocolVersion":null}`:  `field "protocolVersion": expected non-negative integer, got null`,
		`[]`:                        `expected object, got array`,
	} {
		err := json.Unmarshal([]byte(in), &req)
		assert.ErrorIs(t, err, ErrMalformed, in)
		assert.EqualError(t, err, msg, in)
	}
}

// Requests decoded the way the agent decodes them, through
// jsonrpc.UnmarshalParams: errors tell the client what was wrong.
func TestRequestParamsErrors(t *testing.T) {
	tests := []struct {
		name   string
		params string
		into   any
		msg    string
	}{
		{"cwd number", `{"cwd":5,"mcpServers":[]}`, &NewSessionRequest{}, `invalid params: field "cwd": expected string, got number`},
		{"cwd missing", `{"mcpServers":[]}`, &NewSessionRequest{}, `invalid params: missing required field "cwd"`},
		{"mcpServers missing", `{"cwd":"/w"}`, &NewSessionRequest{}, `invalid params: missing required field "mcpServers"`},
		{"mcpServers object", `{"cwd":"/w","mcpServers":{}}`, &NewSessionRequest{}, `invalid params: field "mcpServers": expected array, got object`},
		{"stdio server without command", `{"cwd":"/w","mcpServers":[{"name":"x","args":[],"env":[]}]}`, &NewSessionRequest{},
			`invalid params: field "mcpServers": item 0: MCP server (stdio): missing required field "command"`},
		{"http server without url", `{"cwd":"/w","mcpServers":[{"type":"http","name":"x","headers":[]}]}`, &NewSessionRequest{},
			`invalid params: field "mcpServers": item 0: MCP server "http": missing required field "url"`},
		{"absent params", ``, &PromptRequest{}, `invalid params: missing required field "sessionId"`},
		{"prompt not array", `{"sessionId":"s","prompt":"hi"}`, &PromptRequest{}, `invalid params: field "prompt": expected array, got string`},
		{"prompt bad block", `{"sessionId":"s","prompt":[{"type":"text","text":"ok"},{"type":"text"}]}`, &PromptRequest{},
			`invalid params: field "prompt": item 1: content block "text": missing required field "text"`},
		{"prompt null block", `{"sessionId":"s","prompt":[null]}`, &PromptRequest{},
			`invalid params: field "prompt": item 0: expected object, got null`},
		{"load without session", `{"cwd":"/w","mcpServers":[]}`, &LoadSessionRequest{}, `invalid params: missing required field "sessionId"`},
		{"cancel session number", `{"sessionId":1}`, &CancelNotification{}, `invalid params: field "sessionId": expected string, got number`},
		{"authenticate", `{}`, &AuthenticateRequest{}, `invalid params: missing required field "methodId"`},
		{"unknown stop reason", `{"stopReason":"done"}`, &PromptResponse{}, `invalid params: field "stopReason": unknown stop reason "done"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := jsonrpc.UnmarshalParams(json.RawMessage(tt.params), tt.into)
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, jsonrpc.InvalidParams, e.Code)
			assert.Equal(t, tt.msg, e.Message)
		})
	}
}

func TestRequestDecodeDefaults(t *testing.T) {
	var ns NewSessionRequest
	require.NoError(t, json.Unmarshal([]byte(`{"cwd":"/w","mcpServers":null,"additionalDirectories":null}`), &ns))
	assert.Equal(t, []McpServer{}, ns.McpServers, "mcpServers: null is the empty list (x-deserialize-default-on-null)")
	assert.Equal(t, []string{}, ns.AdditionalDirectories)

	require.NoError(t, json.Unmarshal([]byte(`{"cwd":"/w","mcpServers":[{"type":"ws","name":"x","command":"c","args":null,"env":[]}]}`), &ns))
	assert.Equal(t, []McpServer{{Name: "x", Command: "c", Args: []string{}, Env: []EnvVariable{}}}, ns.McpServers,
		"an unknown type is read as stdio")

	var pr PromptRequest
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","prompt":[{"type":"text","text":"hi","annotations":"bad"}],"_meta":7}`), &pr))
	assert.Equal(t, PromptRequest{SessionID: "s", Prompt: []ContentBlock{TextBlock("hi")}}, pr)

	var resp InitializeResponse
	require.NoError(t, json.Unmarshal([]byte(`{"protocolVersion":1,"authMethods":[{"id":"a","name":"A","type":"env_var","args":["x"]},{"id":5},{"id":"t","name":"T","type":"terminal","args":null}]}`), &resp))
	assert.Equal(t, []AuthMethod{{ID: "a", Name: "A"}, {ID: "t", Name: "T", Type: "terminal", Args: []string{}}}, resp.AuthMethods)
}

func TestContentBlockEncodingNeedsOneVariant(t *testing.T) {
	_, err := json.Marshal(ContentBlock{})
	assert.ErrorContains(t, err, "exactly one variant set, has 0")
	_, err = json.Marshal(ContentBlock{Text: &TextContent{}, Image: &ImageContent{}})
	assert.ErrorContains(t, err, "exactly one variant set, has 2")
	assert.Equal(t, "", ContentBlock{}.Type())
	assert.Equal(t, ContentText, TextBlock("x").Type())
	_, err = json.Marshal(ContentBlock{Resource: &EmbeddedResource{}})
	assert.ErrorContains(t, err, "exactly one of Text and Blob")
}

func TestCompactionUpdateValidate(t *testing.T) {
	tests := []struct {
		name string
		u    CompactionUpdate
		msg  string // "" = valid
	}{
		{"in progress", CompactionUpdate{CompactionID: "c", Status: CompactionInProgress}, ""},
		{"completed with summary", CompactionUpdate{CompactionID: "c", Status: CompactionCompleted, Summary: Value([]ContentBlock{TextBlock("s")})}, ""},
		{"failed", CompactionUpdate{CompactionID: "c", Status: CompactionFailed, Summary: Null[[]ContentBlock](), Error: Value("e")}, ""},
		{"cancelled", CompactionUpdate{CompactionID: "c", Status: CompactionCancelled}, ""},
		{"custom status", CompactionUpdate{CompactionID: "c", Status: "_mine"}, ""},
		{"empty id", CompactionUpdate{Status: CompactionCompleted}, "without a compactionId"},
		{"empty status", CompactionUpdate{CompactionID: "c"}, "without a status"},
		{"reserved status", CompactionUpdate{CompactionID: "c", Status: "paused"}, `status "paused" is reserved`},
		{"empty summary block", CompactionUpdate{CompactionID: "c", Status: CompactionCompleted, Summary: Value([]ContentBlock{{}})},
			"summary item 0: a content block needs exactly one variant set, has 0"},
		{"unknown summary block", CompactionUpdate{CompactionID: "c", Status: CompactionCompleted, Summary: Value([]ContentBlock{
			TextBlock("ok"), {Unknown: &UnknownVariant{Tag: "video", Raw: json.RawMessage(`{"type":"video"}`)}}})},
			`summary item 1: content block type "video" is not part of ACP v1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.u.Validate()
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidUpdate)
			assert.ErrorContains(t, err, tt.msg)
		})
	}

	assert.NoError(t, (&CompactionSummaryChunk{CompactionID: "c", Content: TextBlock("x")}).Validate())
	assert.ErrorIs(t, (&CompactionSummaryChunk{Content: TextBlock("x")}).Validate(), ErrInvalidUpdate)
	assert.ErrorContains(t, (&CompactionSummaryChunk{CompactionID: "c"}).Validate(), "exactly one variant")
}

func TestCompactionStatus(t *testing.T) {
	for _, s := range []CompactionStatus{CompactionInProgress, CompactionCompleted, CompactionFailed, CompactionCancelled} {
		assert.True(t, s.Known(), s)
		assert.Equal(t, s != CompactionInProgress, s.Terminal(), s)
	}
	assert.False(t, CompactionStatus("_x").Known())
	assert.False(t, CompactionStatus("_x").Terminal())
}

func TestEnumsAreClosed(t *testing.T) {
	var tc ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"toolCallId":"t","title":"x","kind":"teleport","status":"done"}`), &tc))
	assert.Equal(t, ToolKind(""), tc.Kind, "an unknown kind is dropped (default-on-error)")
	assert.Equal(t, ToolCallStatus(""), tc.Status)

	var p Plan
	require.NoError(t, json.Unmarshal([]byte(`{"entries":[{"content":"a","priority":"urgent","status":"pending"},{"content":"b","priority":"low","status":"pending"}]}`), &p))
	assert.Equal(t, []PlanEntry{{Content: "b", Priority: PriorityLow, Status: PlanPending}}, p.Entries)

	var tu ToolCallUpdate
	require.NoError(t, json.Unmarshal([]byte(`{"toolCallId":"t","kind":null,"status":"bogus","title":"x"}`), &tu))
	assert.True(t, tu.Kind.IsNull())
	assert.True(t, tu.Status.IsZero())
	title, _ := tu.Title.Get()
	assert.Equal(t, "x", title)
}

func TestRawFieldsAreCanonical(t *testing.T) {
	var tc ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"toolCallId":"t","title":"x","rawInput":{ "a" : "<b>" },"rawOutput":null}`), &tc))
	assert.Equal(t, `{"a":"\u003cb\u003e"}`, string(tc.RawInput))
	assert.Equal(t, `null`, string(tc.RawOutput))
	b, err := json.Marshal(tc)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), `"rawInput":{"a":"\u003cb\u003e"},"rawOutput":null`), string(b))
}
