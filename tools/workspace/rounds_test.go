package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// TestGuardRounds interleaves, for 100 seeded rounds, the agent's reads,
// edits and writes (through a session, as a model would call the tools),
// edits made behind its back, compactions and reopenings of the session
// (another process, another Workspace): no edit or write of a file the
// agent has not seen as it is lands, and none that it has is refused. The
// model's knowledge is what it last read or wrote of each file.
// GUARD_ROUNDS_SEED picks another seed.
func TestGuardRounds(t *testing.T) {
	seed := uint64(41)
	if s := os.Getenv("GUARD_ROUNDS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "GUARD_ROUNDS_SEED")
		seed = v
	}
	r := rand.New(rand.NewPCG(seed, 0))
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	const nFiles = 12
	paths := make([]string, nFiles)
	for i := range paths {
		paths[i] = fmt.Sprintf("f%d.txt", i)
		var b strings.Builder
		for j := range 12 {
			fmt.Fprintf(&b, "file %d line %d v0\n", i, j)
		}
		require.NoError(t, os.WriteFile(filepath.Join(root, paths[i]), []byte(b.String()), 0o644))
	}
	disk := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(t, err)
		return string(b)
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := providertest.New()
	open := func(create bool) *session.Session {
		ws, err := workspace.New(root)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ws.Close() })
		cfg := session.Config{ID: "rounds", Provider: fake, Store: store, Tools: ws.Tools(workspace.Options{AllowAll: true})}
		var s *session.Session
		if create {
			s, err = session.New(context.Background(), cfg)
		} else {
			s, err = session.Open(context.Background(), cfg)
		}
		require.NoError(t, err)
		return s
	}
	s := open(true)
	t.Cleanup(func() { _ = s.Close() })

	// callTool runs one tool call in a turn and returns its result.
	n := 0
	callTool := func(name string, args map[string]any) string {
		n++
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: fmt.Sprintf("c%d", n), Name: name, Arguments: raw}}}, providertest.Reply{Text: "ok"})
		h, err := s.Prompt(context.Background(), session.PromptRequest{Text: fmt.Sprintf("round %d", n)})
		require.NoError(t, err)
		res, err := h.Wait(context.Background())
		require.NoError(t, err)
		require.NoError(t, res.Err)
		for _, m := range res.Messages {
			if m.Role == history.RoleTool {
				return m.Text
			}
		}
		t.Fatalf("no tool result in round %d", n)
		return ""
	}

	known := map[string]string{} // what the model last saw of each file, whole
	var landed, refused, staleLanded, rightRefusals, outside, compactions, reopens int
	for round := range 100 {
		p := paths[r.IntN(nFiles)]
		switch k := r.IntN(10); {
		case k < 3: // read
			out := callTool("read_file", map[string]any{"path": "./" + p})
			require.Equal(t, disk(p), out, "round %d", round)
			known[p] = out
		case k < 6: // edit a line the model knows
			seen, ok := known[p]
			if !ok {
				seen = disk(p) // a model guessing at a file it never read
			}
			lines := strings.SplitAfter(strings.TrimSuffix(seen, "\n"), "\n")
			old := lines[r.IntN(len(lines))]
			old = strings.TrimSuffix(old, "\n")
			repl := old + " e" + strconv.Itoa(round)
			before := disk(p)
			fresh := ok && before == seen
			out := callTool("edit_file", map[string]any{"path": p, "old_text": old, "new_text": repl})
			if strings.HasPrefix(out, "edited ") {
				landed++
				if !fresh {
					staleLanded++
					t.Errorf("round %d: edit of %s landed on a file the model had not seen as it was", round, p)
				}
				known[p] = strings.Replace(before, old, repl, 1)
				require.Equal(t, known[p], disk(p))
				continue
			}
			refused++
			require.Equal(t, before, disk(p), "round %d: a refused edit changed nothing", round)
			if fresh && strings.Count(before, old) == 1 {
				t.Errorf("round %d: edit of %s refused though the model saw it as it is: %s", round, p, out)
			} else {
				rightRefusals++
				if !ok {
					require.Contains(t, out, "has not been read in this session", "round %d", round)
				} else if before != seen {
					require.Contains(t, out, "changed on disk since you", "round %d", round)
				}
			}
		case k == 6: // write the whole file from what the model knows
			seen, ok := known[p]
			if !ok {
				continue
			}
			content := seen + "written " + strconv.Itoa(round) + "\n"
			before := disk(p)
			out := callTool("write_file", map[string]any{"path": "x/../" + p, "content": content})
			if strings.HasPrefix(out, "wrote ") {
				landed++
				if before != seen {
					staleLanded++
					t.Errorf("round %d: write of %s landed over a change the model had not seen", round, p)
				}
				known[p] = content
				continue
			}
			refused++
			require.NotEqual(t, before, seen, "round %d: write refused though the model saw the file as it is: %s", round, out)
			rightRefusals++
		case k == 7: // someone else edits the file: a formatter, the user
			outside++
			before := disk(p)
			var after string
			if r.IntN(2) == 0 { // same size
				i := r.IntN(len(before) - 1)
				c := byte('a' + r.IntN(26))
				if before[i] == c || before[i] == '\n' {
					c = '#'
				}
				after = before[:i] + string(c) + before[i+1:]
				if before[i] == '\n' {
					after = before // a newline kept: the lines stay
				}
			} else {
				after = before + fmt.Sprintf("outside %d\n", round)
			}
			require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(after), 0o644))
		case k == 8: // compaction
			fake.QueueSummary(providertest.Reply{Text: "summary " + strconv.Itoa(round)})
			h, err := s.Compact(context.Background(), session.CompactRequest{})
			require.NoError(t, err)
			res, err := h.Wait(context.Background())
			require.NoError(t, err)
			if res.Compacted {
				compactions++
			}
		default: // another process takes the session over
			require.NoError(t, s.Close())
			s = open(false)
			reopens++
		}
	}
	require.NoError(t, s.Close())
	t.Logf("seed %d: %d changes landed, %d refused (all rightly: %d), %d stale landed; %d outside edits, %d compactions, %d reopenings",
		seed, landed, refused, rightRefusals, staleLanded, outside, compactions, reopens)
	require.Zero(t, staleLanded)
	require.Positive(t, landed)
	require.Positive(t, refused)
	require.Positive(t, compactions)
}
