package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/sessionkit/sessionkit/acp/schema"
)

// A compaction's patch fields are tri-state: left out, null, or a value.
func ExampleCompactionUpdate() {
	started := &schema.CompactionUpdate{CompactionID: "cmp_1", Status: schema.CompactionInProgress}
	finished := &schema.CompactionUpdate{
		CompactionID: "cmp_1",
		Status:       schema.CompactionCompleted,
		Summary:      schema.Value([]schema.ContentBlock{schema.TextBlock("The user wants a Go SDK.")}),
	}
	failed := &schema.CompactionUpdate{
		CompactionID: "cmp_2",
		Status:       schema.CompactionFailed,
		Summary:      schema.Null[[]schema.ContentBlock](),
		Error:        schema.Value("provider timeout"),
	}
	for _, u := range []*schema.CompactionUpdate{started, finished, failed} {
		if err := u.Validate(); err != nil {
			fmt.Println(err)
			continue
		}
		b, _ := json.Marshal(schema.SessionNotification{SessionID: "s1", Update: u})
		fmt.Println(string(b))
	}
	// Output:
	// {"sessionId":"s1","update":{"sessionUpdate":"compaction_update","compactionId":"cmp_1","status":"in_progress"}}
	// {"sessionId":"s1","update":{"sessionUpdate":"compaction_update","compactionId":"cmp_1","status":"completed","summary":[{"type":"text","text":"The user wants a Go SDK."}]}}
	// {"sessionId":"s1","update":{"sessionUpdate":"compaction_update","compactionId":"cmp_2","status":"failed","summary":null,"error":"provider timeout"}}
}

// Session updates decode by their discriminator; kinds this package does not
// know are kept verbatim.
func ExampleDecodeSessionUpdate() {
	for _, in := range []string{
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"cmp_1","content":{"type":"text","text":"## Retained"}}`,
		`{"sessionUpdate":"_vendor_banner","message":"Refactor"}`,
		`{"sessionUpdate":"compaction_update","status":"completed"}`,
	} {
		u, err := schema.DecodeSessionUpdate([]byte(in))
		switch u := u.(type) {
		case *schema.CompactionSummaryChunk:
			fmt.Println("chunk for", u.CompactionID+":", u.Content.Text.Text)
		case *schema.UnknownSessionUpdate:
			fmt.Println("unknown", u.Kind, string(u.Raw))
		default:
			fmt.Println("error:", err)
		}
	}
	// Output:
	// chunk for cmp_1: ## Retained
	// unknown _vendor_banner {"sessionUpdate":"_vendor_banner","message":"Refactor"}
	// error: session update "compaction_update": missing required field "compactionId"
}

// Compaction updates may only go to a client that advertised
// clientCapabilities.session.compaction as an object.
func ExampleClientCapabilities_SupportsCompaction() {
	for _, params := range []string{
		`{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":true}}}`,
		`{"protocolVersion":1}`,
	} {
		var req schema.InitializeRequest
		if err := json.Unmarshal([]byte(params), &req); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(req.ClientCapabilities.SupportsCompaction())
	}
	// Output:
	// true
	// false
	// false
}
