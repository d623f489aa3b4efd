package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionkit/sessionkit/tools/workspace"
)

// The tools of a session in a project directory: read_file reads a file
// of it, and a path outside is refused with an error the model reads.
func Example() {
	dir, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644)

	ws, err := workspace.New(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	for _, tool := range ws.ReadTools(workspace.Options{}) {
		if tool.Name != "read_file" {
			continue
		}
		out, _ := tool.Run(context.Background(), json.RawMessage(`{"path":"notes.txt","start_line":2,"end_line":2}`))
		fmt.Printf("%q\n", out)
		_, err := tool.Run(context.Background(), json.RawMessage(`{"path":"../elsewhere.txt"}`))
		fmt.Println(errors.Is(err, workspace.ErrOutside))
	}
	_, err = workspace.New("/")
	fmt.Println(errors.Is(err, workspace.ErrBadRoot))
	// Output:
	// "two\n"
	// true
	// true
}
