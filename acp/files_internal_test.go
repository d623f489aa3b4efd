package acp

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/history"
)

// filesMeta names at most maxMetaFiles files, then how many it left out.
func TestFilesMetaBound(t *testing.T) {
	files := make([]history.FileState, maxMetaFiles+7)
	for i := range files {
		files[i] = history.FileState{FileAccess: history.FileAccess{Path: fmt.Sprintf("f%d", i)}, Read: true}
	}
	got := filesMeta(files)
	assert.Len(t, got, maxMetaFiles+1)
	assert.Equal(t, map[string]any{"path": "f0", "read": true}, got[0])
	assert.Equal(t, map[string]any{"omitted": 7}, got[maxMetaFiles])
	assert.Len(t, filesMeta(files[:3]), 3, "no omitted entry when all fit")
}
