package acp

import "testing"

// TestFirstLine: error text put in a notice keeps its first line only,
// with no control character (a carriage return, an escape), and at most
// 300 runes.
func TestFirstLine(t *testing.T) {
	if got, want := firstLine("boom\r\x1b[2Jgone\nsecond line"), "boom  [2Jgone"; got != want {
		t.Errorf("firstLine = %q, want %q", got, want)
	}
	long := make([]rune, 400)
	for i := range long {
		long[i] = 'é'
	}
	if got := []rune(firstLine(string(long))); len(got) != 301 || got[300] != '…' {
		t.Errorf("firstLine of 400 runes has %d runes", len(got))
	}
}
