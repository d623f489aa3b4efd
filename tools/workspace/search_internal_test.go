package workspace

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file whose reading fails part way is reported, with what was found
// in it before, and the search goes on with the next file. (The failure
// is injected: a read error cannot be caused through the public API on
// an ordinary file system, least of all as root.)
func TestSearchReportsAFileItCouldNotFinish(t *testing.T) {
	for _, long := range []bool{false, true} {
		s, err := newSearcher(tools{w: &Workspace{}, o: Options{}.withDefaults()}, "needle", false)
		require.NoError(t, err)
		first := "needle one\n"
		if long {
			first = strings.Repeat("x", 3*readBuffer) + "needle one\n" + strings.Repeat("y", 3*readBuffer)
		}
		s.scan(context.Background(), "broken.txt", io.MultiReader(strings.NewReader(first), iotest.ErrReader(errors.New("input/output error"))))
		s.scan(context.Background(), "fine.txt", strings.NewReader("a needle two\n"))
		out := s.result()
		assert.Contains(t, out, "broken.txt:1: ", "long %v", long)
		assert.Contains(t, out, "fine.txt:1: a needle two\n")
		assert.True(t, strings.HasSuffix(out, "[could not finish 1 file: broken.txt (input/output error)]\n"), "long %v: %s", long, out[max(0, len(out)-200):])
	}
}
