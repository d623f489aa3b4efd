package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanUpdates_RoundTrip: plan_update with each content type (only its
// own members; items' entries as [] when empty) and plan_removed, decoded
// back by their discriminators, in v1 and v2.
func TestPlanUpdates_RoundTrip(t *testing.T) {
	entries := []PlanEntry{{Content: "a", Priority: PriorityHigh, Status: PlanInProgress}}
	for _, tt := range []struct {
		u    SessionUpdate
		want string
	}{
		{&PlanUpdate{Plan: PlanContent{Type: PlanTypeItems, PlanID: "p", Entries: entries, Content: "dropped"}},
			`{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p","entries":[{"content":"a","priority":"high","status":"in_progress"}]}}`},
		{&PlanUpdate{Plan: PlanContent{Type: PlanTypeItems, PlanID: "p"}},
			`{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p","entries":[]}}`},
		{&PlanUpdate{Plan: PlanContent{Type: PlanTypeMarkdown, PlanID: "p", Content: "# x", Entries: entries}},
			`{"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"p","content":"# x"}}`},
		{&PlanRemoved{PlanID: "p"}, `{"sessionUpdate":"plan_removed","planId":"p"}`},
	} {
		b, err := json.Marshal(tt.u)
		require.NoError(t, err)
		assert.JSONEq(t, tt.want, string(b))
		back, err := DecodeSessionUpdate(b)
		require.NoError(t, err)
		assert.IsType(t, tt.u, back)
		if _, removed := tt.u.(*PlanRemoved); !removed {
			v2, err := DecodeSessionUpdateV2(b)
			require.NoError(t, err)
			assert.IsType(t, tt.u, v2)
		}
	}
}

func TestSupportsPlans(t *testing.T) {
	for caps, want := range map[string]bool{`{}`: false, `{"plan":{}}`: true, `{"plan":null}`: false, `{"plan":true}`: false} {
		var c ClientCapabilities
		require.NoError(t, json.Unmarshal([]byte(caps), &c))
		assert.Equal(t, want, c.SupportsPlans(), caps)
	}
}
