package session

import (
	"strings"
	"testing"

	"github.com/sessionkit/sessionkit/history"
)

// TestNeighborText: a neighbour's text is shown on one line and cut at
// recallNeighborRunes characters (not bytes), marked with an ellipsis.
func TestNeighborText(t *testing.T) {
	long := strings.Repeat("é", recallNeighborRunes+1)
	if got, want := neighborText(&history.Message{Text: long}), strings.Repeat("é", recallNeighborRunes)+"…"; got != want {
		t.Fatalf("cut to %d bytes, want %d", len(got), len(want))
	}
	exact := strings.Repeat("é", recallNeighborRunes)
	if got := neighborText(&history.Message{Text: exact}); got != exact {
		t.Fatalf("a text of exactly the bound is cut: %d bytes", len(got))
	}
	if got := neighborText(&history.Message{Text: "two\n  lines"}); got != "two lines" {
		t.Fatalf("not on one line: %q", got)
	}
	if got := neighborText(&history.Message{ToolCalls: []history.ToolCall{{Name: "read_file"}, {Name: "search"}}}); got != "(called read_file, search)" {
		t.Fatalf("calls: %q", got)
	}
}
