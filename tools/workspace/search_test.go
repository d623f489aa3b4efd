package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/workspace"
)

// sparseFiles makes n sparse files of size bytes in a new directory,
// each beginning with 8 KiB of text whose first line is "needle", the
// rest NUL bytes the disk does not hold; it returns the directory.
func sparseFiles(t *testing.T, n int, size int64) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	head := "needle\n" + strings.Repeat("text line\n", 8<<10/10+1) // more than the 8 KiB probed for a NUL
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("big%02d.txt", i)))
		require.NoError(t, err)
		_, err = f.WriteString(head)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		require.NoError(t, f.Close())
	}
	return dir
}

func searchTool(t *testing.T, dir string, o workspace.Options) func(pattern string) (string, error) {
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	for _, tool := range ws.Tools(o) {
		if tool.Name == "search" {
			return func(pattern string) (string, error) {
				return tool.Run(context.Background(), []byte(`{"pattern":"`+pattern+`"}`))
			}
		}
	}
	t.Fatal("no search tool")
	return nil
}

// A search of 20 sparse 1 GB files whose first 8 KiB are text stops
// after its byte budget: it answers the matches found until then and
// names the file it did not finish and the files it did not search.
func TestSearchStopsAtItsByteBudget(t *testing.T) {
	dir := sparseFiles(t, 20, 1<<30)
	search := searchTool(t, dir, workspace.Options{SearchBytes: 1 << 20})
	out, err := search("needle")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "big00.txt:1: needle\n"), out)
	assert.NotContains(t, out, "big01.txt:1:", "big00.txt spent the budget")
	assert.Contains(t, out, "[search stopped early: it read 1048576 bytes, its budget (SearchBytes); the matches shown are from the files searched until then]\n")
	assert.Contains(t, out, "[not searched to the end, for the budget: 1 file: big00.txt]\n")
	assert.Contains(t, out, "[not searched, for the budget: 19 files: big01.txt, big02.txt, big03.txt, big04.txt, big05.txt, big06.txt, big07.txt, big08.txt, big09.txt, big10.txt, …]\n")
	assert.NotContains(t, out, "not even counted", "the walk goes on to count while there is time")

}

// A search whose time is up stops before it reads anything more, and
// says so: the budget is checked before every file and every read.
func TestSearchStopsAtItsTimeBudget(t *testing.T) {
	dir := sparseFiles(t, 3, 1<<30)
	search := searchTool(t, dir, workspace.Options{SearchTime: 1})
	out, err := search("needle")
	require.NoError(t, err)
	assert.Equal(t, "no matches\n[search stopped early: it ran for 1ns, its budget (SearchTime); the matches shown are from the files searched until then]\n"+
		"[the search stopped walking the tree there: the files after it were not even counted]\n", out)
}
