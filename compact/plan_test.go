package compact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
)

// conv builds Active from a compact notation: u = user, s = steer,
// a = assistant, A = assistant with one tool call, t = tool result.
func conv(spec string) []history.Message {
	var out []history.Message
	call := 0
	for i, r := range spec {
		id := fmt.Sprintf("%c%d", r, i)
		switch r {
		case 'u':
			out = append(out, history.Message{ID: id, Role: history.RoleUser, Text: "u"})
		case 's':
			out = append(out, history.Message{ID: id, Role: history.RoleUser, Text: "s", Steer: true})
		case 'a':
			out = append(out, history.Message{ID: id, Role: history.RoleAssistant, Text: "a"})
		case 'A':
			call++
			out = append(out, history.Message{ID: id, Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: fmt.Sprint("c", call), Name: "t"}}})
		case 't':
			out = append(out, history.Message{ID: id, Role: history.RoleTool, ToolCallID: fmt.Sprint("c", call), Text: "out"})
		}
	}
	return out
}

func TestCutFor(t *testing.T) {
	tests := []struct {
		spec          string
		n, k, archive int
		prefix        string // the archived prefix, as spec letters
	}{
		{"", 0, 0, 0, ""},
		{"u", 1, 0, 0, ""},
		{"t", 0, 0, 0, ""},
		{"ua", 2, 1, 1, "u"},
		{"uau", 3, 1, 1, "u"},
		{"uaua", 4, 2, 2, "ua"},
		{"uauau", 5, 2, 2, "ua"},
		// Tool results of the last archived assistant go with it.
		{"uAtta", 3, 1, 1, "u"},
		{"uAttua", 4, 2, 4, "uAtt"},
		{"uAtAtau", 5, 2, 3, "uAt"},
		// Tool results are not counted, wherever they stand.
		{"uAtAtAtAta", 6, 3, 5, "uAtAt"},
		// Steers count as user messages.
		{"usau", 4, 2, 2, "us"},
		{"uAtsa", 4, 2, 3, "uAt"},
		// Active that starts with a tool result (orphaned by an older store).
		{"tua", 2, 1, 2, "tu"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			active := conv(tt.spec)
			p := compact.CutFor(active)
			assert.Equal(t, compact.Cut{N: tt.n, K: tt.k, Archive: tt.archive}, p)
			var got strings.Builder
			for _, m := range active[:p.Archive] {
				got.WriteByte(m.ID[0])
			}
			assert.Equal(t, tt.prefix, got.String())
			// The prefix never ends between a tool call and its results.
			if p.K > 0 && p.Archive < len(active) {
				assert.NotEqual(t, history.RoleTool, active[p.Archive].Role)
			}
		})
	}
}

// TestCutConsecutive applies plans repeatedly, as consecutive compactions
// do, and checks that each archives floor(n/2) of what is left.
func TestCutConsecutive(t *testing.T) {
	active := conv("uAtauAtauasuaua")
	var counts []int
	for {
		p := compact.CutFor(active)
		if p.K == 0 {
			break
		}
		counts = append(counts, p.K)
		archived := 0
		for _, m := range active[:p.Archive] {
			if m.Counted() {
				archived++
			}
		}
		assert.Equal(t, p.K, archived)
		active = active[p.Archive:]
	}
	assert.Equal(t, []int{6, 3, 2, 1}, counts) // n = 13, 7, 4, 2
	assert.Len(t, active, 1)
}
