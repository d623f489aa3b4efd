package offline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

var recallSpec = provider.ToolSpec{Name: recallTool}

func turn(t *testing.T, req *provider.Request) history.Message {
	t.Helper()
	req.Purpose = provider.PurposeTurn
	resp, err := New().Complete(context.Background(), req, nil)
	require.NoError(t, err)
	return resp.Message
}

func TestRecall_QuestionTheContextCannotAnswerGoesToTheArchive(t *testing.T) {
	msgs := []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "Add a -version flag."},
		{ID: "2", Role: history.RoleAssistant, Text: "Added it."},
		{ID: "3", Role: history.RoleUser, Text: "How are releases tagged and built?"},
	}
	// The summary shares one of the question's three content words: not
	// enough to answer from.
	const summary = "- a CLI in Go; releases happen in May"
	reply := turn(t, &provider.Request{Summary: summary, Messages: msgs, Tools: []provider.ToolSpec{recallSpec}})
	require.Len(t, reply.ToolCalls, 1)
	assert.Equal(t, recallTool, reply.ToolCalls[0].Name)
	assert.JSONEq(t, `{"query":"How are releases tagged and built?"}`, string(reply.ToolCalls[0].Arguments))
	assert.Equal(t, "Calling recall.", reply.Text)

	// Without recall among the tools: as before.
	reply = turn(t, &provider.Request{Summary: summary, Messages: msgs})
	assert.Empty(t, reply.ToolCalls)
	assert.Equal(t, `From the summary of earlier conversation: "a CLI in Go; releases happen in May"`, reply.Text)

	// Not a question: no search.
	msgs[2].Text = "Tag the release."
	reply = turn(t, &provider.Request{Messages: msgs, Tools: []provider.ToolSpec{recallSpec}})
	assert.Empty(t, reply.ToolCalls)
}

func TestRecall_AnsweredFromTheContextWhenItCan(t *testing.T) {
	msgs := []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "Releases are tagged vMAJOR.MINOR.PATCH."},
		{ID: "2", Role: history.RoleAssistant, Text: "Noted."},
		{ID: "3", Role: history.RoleUser, Text: "How are releases tagged?"},
	}
	reply := turn(t, &provider.Request{Messages: msgs, Tools: []provider.ToolSpec{recallSpec}})
	assert.Empty(t, reply.ToolCalls, "half the question's words are in context")
	assert.Equal(t, `Earlier you said: "Releases are tagged vMAJOR.MINOR.PATCH."`, reply.Text)
}

func TestRecall_AnswersFromTheToolResult(t *testing.T) {
	question := history.Message{ID: "3", Role: history.RoleUser, Text: "How are releases tagged and built?"}
	call := history.Message{ID: "4", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: recallTool, Arguments: []byte(`{"query":"x"}`)}}}
	hits := history.Message{ID: "5", Role: history.RoleTool, ToolCallID: "c1", Text: "2 messages match \"How are releases tagged and built?\", best first (read one in full with ...):\n" +
		"- message m-7 [user], archived by compaction 1: «Releases» are «tagged» vMAJOR.MINOR.PATCH and «built» with -trimpath. Or so?\n" +
		"- message m-9 [assistant], in the active history: I «built» it.\n"}
	reply := turn(t, &provider.Request{Messages: []history.Message{question, call, hits}, Tools: []provider.ToolSpec{recallSpec}})
	assert.Empty(t, reply.ToolCalls)
	assert.Equal(t, `From the archive (message m-7, archived by compaction 1): "Releases are tagged vMAJOR.MINOR.PATCH and built with -trimpath."`, reply.Text)

	read := hits
	read.Text = "2 messages around message m-7, verbatim:\n\n[message m-7, user]\nReleases are tagged vMAJOR.MINOR.PATCH and built with -trimpath.\n\n[message m-8, assistant]\nNoted.\n"
	reply = turn(t, &provider.Request{Messages: []history.Message{question, call, read}, Tools: []provider.ToolSpec{recallSpec}})
	assert.Equal(t, `From the archive (message m-7, user): "Releases are tagged vMAJOR.MINOR.PATCH and built with -trimpath."`, reply.Text)

	none := hits
	none.Text = `No earlier message matches "How are releases tagged and built?".`
	reply = turn(t, &provider.Request{Messages: []history.Message{question, call, none}, Tools: []provider.ToolSpec{recallSpec}})
	assert.Equal(t, "The archive holds nothing about: How are releases tagged and built?", reply.Text)

	failed := hits
	failed.Text = "error: tool recall failed: no index"
	reply = turn(t, &provider.Request{Messages: []history.Message{question, call, failed}, Tools: []provider.ToolSpec{recallSpec}})
	assert.Equal(t, "I could not search the archive: error: tool recall failed: no index", reply.Text)
}

// Hits whose snippets hold too little of the question: the best hit is read
// in full first.
func TestRecall_WeakSnippetsReadTheBestHit(t *testing.T) {
	question := history.Message{ID: "3", Role: history.RoleUser, Text: "What file mode does copyFile create dst with?"}
	call := history.Message{ID: "4", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: recallTool, Arguments: []byte(`{"query":"x"}`)}}}
	hits := history.Message{ID: "5", Role: history.RoleTool, ToolCallID: "c1", Text: "1 message matches \"x\", best first:\n" +
		"- message m-7 [tool read_file], archived by compaction 1: // falcon copies «files», the slow way.\n"}
	reply := turn(t, &provider.Request{Messages: []history.Message{question, call, hits}, Tools: []provider.ToolSpec{recallSpec}})
	require.Len(t, reply.ToolCalls, 1)
	assert.Equal(t, recallTool, reply.ToolCalls[0].Name)
	assert.JSONEq(t, `{"message_id":"m-7"}`, string(reply.ToolCalls[0].Arguments))

	call2 := history.Message{ID: "6", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c2", Name: recallTool, Arguments: reply.ToolCalls[0].Arguments}}}
	read := history.Message{ID: "7", Role: history.RoleTool, ToolCallID: "c2", Text: "1 message around message m-7, verbatim:\n\n[message m-7, result of read_file]\n" +
		"// falcon copies files, the slow way.\n// copyFile copies src to dst, creating dst with mode 0644 or truncating it.\nfunc copyFile(src, dst string) (int64, error) {\n"}
	reply = turn(t, &provider.Request{Messages: []history.Message{question, call, hits, call2, read}, Tools: []provider.ToolSpec{recallSpec}})
	assert.Empty(t, reply.ToolCalls)
	assert.Equal(t, `From the archive (message m-7, result of read_file): "// copyFile copies src to dst, creating dst with mode 0644 or truncating it."`, reply.Text)
}
