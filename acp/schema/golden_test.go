package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

type goldenCase struct {
	name  string // testdata/<name>.json
	value any    // a pointer to a wire value
}

// goldenBack holds what a golden file decodes into when that is not the
// value it was written from.
var goldenBack = map[string]any{
	// A nil required array is sent as [].
	"available_commands_update_empty": &AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{}},
	"new_session_request_minimal":     &NewSessionRequest{Cwd: "/w", McpServers: []McpServer{}},
}

func ptr[T any](v T) *T { return &v }

// goldenOptions are the config options of the golden files: a mode and a
// model selector.
func goldenOptions() []SessionConfigOption {
	return []SessionConfigOption{
		{ID: "mode", Name: "Mode", Category: CategoryMode, CurrentValue: "ask", Options: []SessionConfigSelectOption{
			{Value: "ask", Name: "Ask", Description: "Ask before every change"}, {Value: "read-only", Name: "Read only"}}},
		{ID: "model", Name: "Model", Category: CategoryModel, CurrentValue: "small", Options: []SessionConfigSelectOption{
			{Value: "small", Name: "small"}, {Value: "large", Name: "Large"}}},
	}
}

func goldenOptionsV2() []SessionConfigOptionV2 {
	return convertAll(goldenOptions(), func(o SessionConfigOption) SessionConfigOptionV2 { return SessionConfigOptionV2(o) })
}

func goldenCases() []goldenCase {
	retained := []ContentBlock{TextBlock("## Retained context\n\nThe user is updating the ACP schema...")}
	meta := map[string]any{"vendor.example/tokensBefore": float64(120000), "vendor.example/manual": true}
	return []goldenCase{
		// CompactionUpdate: each patch field omitted, null and set.
		{"compaction_update_omitted", &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionInProgress}},
		{"compaction_update_null", &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionCancelled,
			Summary: Null[[]ContentBlock](), Error: Null[string](), Meta: Null[map[string]any]()}},
		{"compaction_update_value", &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionCompleted,
			Summary: Value(retained), Error: Value("partial: one message could not be summarized"), Meta: Value(meta)}},
		{"compaction_update_completed", &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionCompleted, Summary: Value(retained)}},
		{"compaction_update_failed", &CompactionUpdate{CompactionID: "cmp_002", Status: CompactionFailed,
			Summary: Null[[]ContentBlock](), Error: Value("the summary call failed: provider timeout")}},
		{"compaction_update_summary_cleared", &CompactionUpdate{CompactionID: "cmp_003", Status: CompactionCompleted,
			Summary: Value([]ContentBlock{})}},
		{"compaction_update_custom_status", &CompactionUpdate{CompactionID: "cmp_004", Status: "_sessionkit_waiting"}},
		{"compaction_summary_chunk", &CompactionSummaryChunk{CompactionID: "cmp_001", Content: TextBlock("## Retained context\n\n")}},
		{"compaction_summary_chunk_meta", &CompactionSummaryChunk{CompactionID: "cmp_001", Content: TextBlock("more"),
			Meta: map[string]any{"seq": float64(2)}}},
		{"session_notification_compaction", &SessionNotification{SessionID: "sess_1",
			Update: &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionInProgress}}},
		{"session_notification_meta", &SessionNotification{SessionID: "sess_1",
			Update: &AgentMessageChunk{Content: TextBlock("hi")}, Meta: map[string]any{"trace": "t1"}}},

		// The other session updates.
		{"notice", &Notice{Severity: NoticeInfo, Title: "Context overflow recovered by compaction"}},
		{"user_message_chunk", &UserMessageChunk{Content: TextBlock("What does this repo do?")}},
		{"agent_message_chunk", &AgentMessageChunk{Content: TextBlock("It is a Go SDK."), MessageID: "msg_7"}},
		{"agent_thought_chunk", &AgentThoughtChunk{Content: TextBlock("Reading the README first.")}},
		{"tool_call", &ToolCall{ToolCallID: "call_1", Title: "Reading go.mod", Name: "read_file", Kind: ToolKindRead,
			Status: ToolCallPending, RawInput: json.RawMessage(`{"path":"go.mod"}`),
			Locations: []ToolCallLocation{{Path: "/w/go.mod", Line: ptr(uint32(1))}}}},
		{"tool_call_content", &ToolCall{ToolCallID: "call_2", Title: "Editing main.go", Kind: ToolKindEdit, Status: ToolCallCompleted,
			Content: []ToolCallContent{
				{Content: &ToolContent{Content: TextBlock("done")}},
				{Diff: &ToolDiff{Path: "/w/main.go", OldText: "a", NewText: "b"}},
				{Terminal: &ToolTerminal{TerminalID: "term_1"}},
			}}},
		{"tool_call_update", &ToolCallUpdate{ToolCallID: "call_1", Status: Value(ToolCallCompleted), Title: Null[string](),
			Content:   Value([]ToolCallContent{{Content: &ToolContent{Content: TextBlock("module example")}}}),
			RawOutput: json.RawMessage(`"module example"`)}},
		{"plan", &Plan{Entries: []PlanEntry{
			{Content: "Read the code", Priority: PriorityHigh, Status: PlanCompleted},
			{Content: "Write the answer", Priority: PriorityMedium, Status: PlanInProgress},
		}}},
		{"available_commands_update", &AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{
			{Name: "compact", Description: "Summarize the conversation to free context", Input: &AvailableCommandInput{Hint: "optional instructions"}},
		}}},
		{"available_commands_update_empty", &AvailableCommandsUpdate{}},
		{"current_mode_update", &CurrentModeUpdate{CurrentModeID: "code"}},
		{"usage_update", &UsageUpdate{Used: 53000, Size: 200000}},
		{"usage_update_cost", &UsageUpdate{Used: 12000, Size: 200000, Cost: &Cost{Amount: 0.42, Currency: "USD"}}},
		{"unknown_session_update", &UnknownSessionUpdate{Kind: "_vendor_banner",
			Raw: json.RawMessage(`{"sessionUpdate":"_vendor_banner","severity":"info","message":"hello"}`)}},

		// Content blocks.
		{"content_text", &ContentBlock{Text: &TextContent{Text: "hello", Annotations: &Annotations{
			Audience: []Role{RoleUser}, Priority: ptr(0.5)}}}},
		{"content_image", &ContentBlock{Image: &ImageContent{Data: "iVBORw0KGgo=", MimeType: "image/png"}}},
		{"content_audio", &ContentBlock{Audio: &AudioContent{Data: "UklGRg==", MimeType: "audio/wav"}}},
		{"content_resource_link", &ContentBlock{ResourceLink: &ResourceLink{Name: "main.go", URI: "file:///w/main.go",
			MimeType: "text/x-go", Size: ptr(int64(1024))}}},
		{"content_resource_text", &ContentBlock{Resource: &EmbeddedResource{Resource: ResourceContents{
			URI: "file:///w/a.txt", MimeType: "text/plain", Text: ptr("contents")}}}},
		{"content_resource_blob", &ContentBlock{Resource: &EmbeddedResource{Resource: ResourceContents{
			URI: "file:///w/a.bin", Blob: ptr("AAEC")}}}},
		{"content_unknown", &ContentBlock{Unknown: &UnknownVariant{Tag: "video",
			Raw: json.RawMessage(`{"type":"video","uri":"file:///w/a.mp4"}`)}}},

		// Requests and responses.
		{"initialize_request", &InitializeRequest{ProtocolVersion: ProtocolVersion1,
			ClientCapabilities: ClientCapabilities{
				FS:       FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
				Terminal: true,
				Session:  json.RawMessage(`{"compaction":{}}`),
			},
			ClientInfo: &Implementation{Name: "zed", Title: "Zed", Version: "0.200.0"}}},
		{"initialize_request_minimal", &InitializeRequest{ProtocolVersion: ProtocolVersion1}},
		{"initialize_response", &InitializeResponse{ProtocolVersion: ProtocolVersion1,
			AgentCapabilities: AgentCapabilities{LoadSession: true, PromptCapabilities: PromptCapabilities{EmbeddedContext: true}},
			AgentInfo:         &Implementation{Name: "sessionkit", Version: "0.1.0"}}},
		{"initialize_response_auth", &InitializeResponse{ProtocolVersion: ProtocolVersion1,
			AgentCapabilities: AgentCapabilities{SessionCapabilities: SessionCapabilities{Resume: &Capability{}}},
			AuthMethods: []AuthMethod{
				{ID: "api-key", Name: "API key", Description: "Set OPENAI_API_KEY"},
				{ID: "login", Name: "Log in", Type: "terminal", Args: []string{"login"}},
			}}},
		{"authenticate_request", &AuthenticateRequest{MethodID: "api-key"}},
		{"authenticate_response", &AuthenticateResponse{}},
		{"new_session_request", &NewSessionRequest{Cwd: "/w", McpServers: []McpServer{
			{Name: "fs", Command: "/usr/bin/mcp-fs", Args: []string{"--root", "/w"}, Env: []EnvVariable{{Name: "DEBUG", Value: "1"}}},
			{Type: "http", Name: "docs", URL: "https://example.com/mcp", Headers: []HTTPHeader{{Name: "Authorization", Value: "Bearer x"}}},
		}}},
		{"new_session_request_minimal", &NewSessionRequest{Cwd: "/w"}},
		{"new_session_response", &NewSessionResponse{SessionID: "sess_1"}},
		{"new_session_response_modes", &NewSessionResponse{SessionID: "sess_1", Modes: &SessionModeState{
			CurrentModeID: "code", AvailableModes: []SessionMode{{ID: "code", Name: "Code"}, {ID: "ask", Name: "Ask", Description: "No edits"}}}}},
		{"new_session_response_config", &NewSessionResponse{SessionID: "sess_1",
			Modes:         &SessionModeState{CurrentModeID: "ask", AvailableModes: []SessionMode{{ID: "ask", Name: "Ask"}, {ID: "read-only", Name: "Read only"}}},
			ConfigOptions: goldenOptions()}},
		{"config_option_update", &ConfigOptionUpdate{ConfigOptions: goldenOptions()}},
		{"set_session_mode_request", &SetSessionModeRequest{SessionID: "sess_1", ModeID: "read-only"}},
		{"set_session_mode_response", &SetSessionModeResponse{}},
		{"set_config_option_request", &SetConfigOptionRequest{SessionID: "sess_1", ConfigID: "model", Value: json.RawMessage(`"large"`)}},
		{"set_config_option_response", &SetConfigOptionResponse{ConfigOptions: goldenOptions()}},
		{"load_session_request", &LoadSessionRequest{SessionID: "sess_1", Cwd: "/w", McpServers: []McpServer{}}},
		{"load_session_response", &LoadSessionResponse{}},
		{"delete_session_request", &DeleteSessionRequest{SessionID: "sess_1"}},
		{"delete_session_response", &DeleteSessionResponse{}},
		{"prompt_request", &PromptRequest{SessionID: "sess_1", Prompt: []ContentBlock{
			TextBlock("/compact keep the API decisions"),
			{ResourceLink: &ResourceLink{Name: "API.md", URI: "file:///w/API.md"}},
		}}},
		{"prompt_response", &PromptResponse{StopReason: StopEndTurn}},
		{"prompt_response_cancelled", &PromptResponse{StopReason: StopCancelled}},
		{"cancel_notification", &CancelNotification{SessionID: "sess_1"}},

		// ACP v2 (v2_*: session updates decode with DecodeSessionUpdateV2).
		{"v2_initialize_request", &InitializeRequestV2{ProtocolVersion: ProtocolVersion2,
			Info: Implementation{Name: "zed", Title: "Zed", Version: "0.300.0"}}},
		{"v2_initialize_response", &InitializeResponseV2{ProtocolVersion: ProtocolVersion2,
			Info: Implementation{Name: "sessionkit", Title: "sessionkit", Version: "0.1.0"},
			Capabilities: AgentCapabilitiesV2{
				Session: &SessionCapabilitiesV2{Prompt: &PromptCapabilitiesV2{EmbeddedContext: &Capability{}}},
				Meta:    map[string]any{"sessionkit": map[string]any{"compact": "_sessionkit/compact"}},
			}}},
		{"v2_unsupported_protocol_version", &UnsupportedProtocolVersionData{Requested: 0, Supported: []ProtocolVersion{1, 2}}},
		{"v2_new_session_request", &NewSessionRequestV2{Cwd: "/w"}},
		{"v2_new_session_response", &NewSessionResponseV2{SessionID: "sess_1"}},
		{"v2_new_session_response_config", &NewSessionResponseV2{SessionID: "sess_1", ConfigOptions: goldenOptionsV2()}},
		{"v2_config_option_update", &ConfigOptionUpdateV2{ConfigOptions: goldenOptionsV2()}},
		{"v2_set_config_option_request", &SetConfigOptionRequest{SessionID: "sess_1", ConfigID: "mode", Type: "id", Value: json.RawMessage(`"auto-edit"`)}},
		{"v2_set_config_option_response", &SetConfigOptionResponseV2{ConfigOptions: goldenOptionsV2()}},
		{"v2_resume_session_request", &ResumeSessionRequestV2{SessionID: "sess_1", Cwd: "/w", ReplayFrom: &ReplayFrom{Type: ReplayFromStart}}},
		{"v2_resume_session_request_no_replay", &ResumeSessionRequestV2{SessionID: "sess_1", Cwd: "/w"}},
		{"v2_resume_session_response", &ResumeSessionResponseV2{}},
		{"v2_prompt_response", &PromptResponseV2{MessageID: "msg_1"}},
		{"v2_user_message", &UserMessage{MessageID: "msg_1", Content: Value([]ContentBlock{TextBlock("What does this repo do?")})}},
		{"v2_user_message_chunk", &UserMessageChunkV2{MessageID: "msg_1", Content: TextBlock("What does")}},
		{"v2_agent_message_chunk", &AgentMessageChunkV2{MessageID: "msg_2", Content: TextBlock("It is a Go SDK."), Meta: map[string]any{"seq": float64(1)}}},
		{"v2_agent_thought_chunk", &AgentThoughtChunkV2{MessageID: "th_1", Content: TextBlock("Reading the README first.")}},
		{"v2_state_update_running", &StateUpdate{State: StateRunning}},
		{"v2_state_update_idle", &StateUpdate{State: StateIdle, StopReason: StopEndTurn}},
		{"v2_state_update_idle_cancelled", &StateUpdate{State: StateIdle, StopReason: StopCancelled}},
		{"v2_state_update_idle_error", &StateUpdate{State: StateIdle, StopReason: StopError,
			Error: &ErrorObject{Code: -32603, Message: "the turn failed: provider timeout"}}},
		{"v2_state_update_idle_current", &StateUpdate{State: StateIdle}},
		{"v2_tool_call_update_create", &ToolCallUpdate{ToolCallID: "call_1", Title: Value("echo"), Kind: Value(ToolKindOther),
			Status: Value(ToolCallInProgress), RawInput: json.RawMessage(`{"x":1}`)}},
		{"v2_tool_call_update_cancellable", &ToolCallUpdate{ToolCallID: "call_1", Title: Value("run_command"), Kind: Value(ToolKindExecute),
			Status: Value(ToolCallInProgress), Capabilities: Value(ToolCallCapabilities{Cancel: &Capability{}})}},
		{"v2_tool_call_update_cancelled", &ToolCallUpdate{ToolCallID: "call_1", Status: Value(ToolCallCancelled),
			Capabilities: Null[ToolCallCapabilities]()}},
		{"v2_cancel_tool_call_request", &CancelToolCallRequest{SessionID: "sess_1", ToolCallID: "call_1"}},
		{"v2_notice", &Notice{Severity: NoticeWarning, Title: "Automatic compaction suspended", Description: "3 automatic compactions in a row failed."}},
		{"v2_available_commands_update", &AvailableCommandsUpdateV2{AvailableCommands: []CommandV2{
			{Name: "compact", Description: "Summarize the conversation to free context", Input: &TextCommandInput{Hint: "optional instructions"}},
			{Name: "help", Description: "Show help"},
		}}},
		{"v2_compaction_update", &CompactionUpdate{CompactionID: "cmp_001", Status: CompactionInProgress,
			Meta: Value(map[string]any{"sessionkit": map[string]any{"trigger": "manual"}})}},
		{"v2_session_notification", &SessionNotificationV2{SessionID: "sess_1", Update: &StateUpdate{State: StateRunning}}},
		// What Dial sends: a v2 initialize with the v1 fields beside.
		{"v2_initialize_request_dual", &DualInitializeRequest{ProtocolVersion: ProtocolVersion2,
			Info:               Implementation{Name: "sessionkit", Version: "0.1.0"},
			ClientCapabilities: ClientCapabilities{Session: json.RawMessage(`{"compaction":{}}`)},
			ClientInfo:         &Implementation{Name: "sessionkit", Version: "0.1.0"}}},
		{"v2_initialize_request_capabilities", &InitializeRequestV2{ProtocolVersion: ProtocolVersion2,
			Info:         Implementation{Name: "zed", Version: "1"},
			Capabilities: ClientCapabilitiesV2{Auth: json.RawMessage(`{"terminal":{}}`), Meta: map[string]any{"x": "y"}}}},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.value)
			require.NoError(t, err)
			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, got, "", "  "))
			pretty.WriteByte('\n')

			path := filepath.Join("testdata", tc.name+".json")
			if *updateGolden {
				require.NoError(t, os.WriteFile(path, pretty.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./acp -update to create it")
			assert.Equal(t, string(want), pretty.String())

			// The golden file decodes back into the same value.
			file := want
			var back any
			if su, ok := tc.value.(SessionUpdate); ok {
				var tag struct {
					Kind string `json:"sessionUpdate"`
				}
				require.NoError(t, json.Unmarshal(file, &tag))
				assert.Equal(t, tag.Kind, su.SessionUpdateKind())
				if strings.HasPrefix(tc.name, "v2_") {
					back, err = DecodeSessionUpdateV2(file)
				} else {
					back, err = DecodeSessionUpdate(file)
				}
			} else {
				p := reflect.New(reflect.TypeOf(tc.value).Elem())
				err = json.Unmarshal(file, p.Interface())
				back = p.Interface()
			}
			require.NoError(t, err)
			expect := tc.value
			if b, ok := goldenBack[tc.name]; ok {
				expect = b
			}
			assert.Equal(t, expect, back)
		})
	}
}

// Every golden file is covered by a case, so stale files do not linger.
func TestGoldenFilesHaveCases(t *testing.T) {
	names := map[string]bool{}
	for _, tc := range goldenCases() {
		require.False(t, names[tc.name], "duplicate golden case %s", tc.name)
		names[tc.name] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		name := filepath.Base(f)
		assert.True(t, names[name[:len(name)-len(".json")]], "golden file %s has no case", f)
	}
}
