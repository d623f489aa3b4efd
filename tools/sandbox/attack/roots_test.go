//go:build linux

package attack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/sandbox/sandboxtest"
)

// movedRoot is the attack of a command that replaces a session directory
// nested in another by a symbolic link out: the session's directories
// work and work/nested, held open; the first command has run
// `mv nested nested.old && ln -s OUTSIDE nested`.
type movedRoot struct {
	work, nested, outside string
	policy                sandbox.Policy
	workDir, nestedDir    *os.File
}

func newMovedRoot(t *testing.T) *movedRoot {
	t.Helper()
	sandboxtest.RequireLandlock(t)
	m := &movedRoot{work: filepath.Join(t.TempDir(), "work"), outside: t.TempDir()}
	m.nested = filepath.Join(m.work, "nested")
	require.NoError(t, os.MkdirAll(m.nested, 0o755))
	var err error
	m.workDir, err = os.Open(m.work)
	require.NoError(t, err)
	t.Cleanup(func() { m.workDir.Close() })
	m.nestedDir, err = os.Open(m.nested)
	require.NoError(t, err)
	t.Cleanup(func() { m.nestedDir.Close() })
	m.policy = sandbox.Policy{Mode: sandbox.Required, WritableDirs: []*os.File{m.workDir, m.nestedDir}}

	code, out := runAt(t, m.policy, `mv nested nested.old && ln -s "$1" nested && echo swapped`, m.workDir, m.outside)
	if sandbox.Available().Contained {
		// In the command's mount namespace the session's directories
		// are mount points, which mv cannot move (EBUSY). Another
		// program can (the user, a command where namespaces cannot be
		// made): the swap is made from here, and what follows must hold
		// all the same.
		require.NotEqual(t, 0, code, out)
		require.Contains(t, out, "Device or resource busy")
		require.NoError(t, os.Rename(m.nested, m.nested+".old"))
		require.NoError(t, os.Symlink(m.outside, m.nested))
		return m
	}
	require.Equal(t, 0, code, out)
	require.Equal(t, "swapped\n", out)
	return m
}

// outsideEmpty asserts that nothing was made in the outside directory.
func (m *movedRoot) outsideEmpty(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(m.outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written outside the session's directories")
}

// runAt runs line (with the positional parameters args) under p, started
// in dir.
func runAt(t *testing.T, p sandbox.Policy, line string, dir *os.File, args ...string) (int, string) {
	t.Helper()
	c, err := p.PrepareAt(shellArgs(line, args), dir)
	require.NoError(t, err)
	defer c.Close()
	return runCommand(t, c)
}

// shellArgs returns line with args set as its positional parameters.
func shellArgs(line string, args []string) string {
	if len(args) == 0 {
		return line
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return "set -- " + strings.Join(quoted, " ") + "\n" + line
}

// After the swap, the next command's rules still hold the directories the
// session opened: it cannot write through the link to the outside, and
// it writes into the moved directory where the session's is now.
func TestMovedRootCannotRedirectWrites(t *testing.T) {
	m := newMovedRoot(t)
	code, out := runAt(t, m.policy, `echo pwned > nested/x && echo wrote-through-link
		mkdir nested/d && echo made-dir-through-link
		echo kept > nested.old/y && echo wrote-moved`, m.workDir)
	assert.NotEqual(t, 126, code, out)
	assert.NotContains(t, out, "wrote-through-link")
	assert.NotContains(t, out, "made-dir-through-link")
	assert.Contains(t, out, "wrote-moved")
	m.outsideEmpty(t)
}

// A command prepared to start in the nested directory starts in it
// (moved), not where its name leads.
func TestMovedRootCannotMoveTheWorkingDirectory(t *testing.T) {
	m := newMovedRoot(t)
	code, out := runAt(t, m.policy, `pwd -P; echo here > here.txt && echo wrote-here`, m.nestedDir)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, filepath.Join(m.work, "nested.old")+"\nwrote-here\n", resolved(t, out))
	b, err := os.ReadFile(filepath.Join(m.work, "nested.old", "here.txt"))
	require.NoError(t, err)
	assert.Equal(t, "here\n", string(b))
	m.outsideEmpty(t)
}

// resolved returns out with the first line (a path) resolved as the test
// resolves its own (t.TempDir may lie below a symbolic link).
func resolved(t *testing.T, out string) string {
	t.Helper()
	first, rest, _ := strings.Cut(out, "\n")
	dir, base := filepath.Split(first)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		first = filepath.Join(d, base)
	}
	return first + "\n" + rest
}

// In an editor's terminal (Path, Args, Env and Dir, no inherited
// descriptor) the helper opens each directory's name once and refuses
// the command, saying which directory moved, when the name leads to
// another directory now: as a writable directory and as the working one.
func TestMovedRootRefusedInTerminal(t *testing.T) {
	m := newMovedRoot(t)
	for name, dir := range map[string]*os.File{"writable": m.workDir, "working": m.nestedDir} {
		t.Run(name, func(t *testing.T) {
			c, err := m.policy.PrepareAt("echo pwned > nested/x; echo ran; echo here > here.txt", dir)
			require.NoError(t, err)
			defer c.Close()
			cmd := exec.Command(c.Path, c.Args...)
			cmd.Env, cmd.Dir = c.Env, c.Dir
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, string(out))
			assert.Equal(t, 126, ee.ExitCode(), string(out))
			assert.Contains(t, string(out), "the session directory "+m.nested+" was moved or replaced")
			assert.Contains(t, string(out), "the session's directories must stay where they were")
			assert.Contains(t, string(out), "(the command was not run)")
			assert.NotContains(t, string(out), "ran")
			m.outsideEmpty(t)
		})
	}
}

// The same command in the terminal runs when nothing moved.
func TestTerminalRunsWhereNothingMoved(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	work := t.TempDir()
	dir, err := os.Open(work)
	require.NoError(t, err)
	defer dir.Close()
	c, err := sandbox.Policy{Mode: sandbox.Required, WritableDirs: []*os.File{dir}}.PrepareAt("echo ran > ran.txt && echo ran", dir)
	require.NoError(t, err)
	defer c.Close()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "ran\n", string(out))
	_, err = os.Stat(filepath.Join(work, "ran.txt"))
	assert.NoError(t, err)
}
