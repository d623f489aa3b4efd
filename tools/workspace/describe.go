package workspace

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sessionkit/sessionkit/acp"
	acpschema "github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
)

// Describe returns how the calls of the workspace tools of a session in cwd
// are shown to an ACP client (acp.Toolset.Describe): their kind (read,
// edit, search, execute), a title, the files they touch and, for an edit,
// its diff. It derives everything from the call's arguments and the
// result's text, which history keeps, so a replay shows each call as it
// was shown live. cwd need not exist (a replay on another machine).
//
// The diff of edit_file is the replaced text and its replacement; that of
// write_file is the new content with oldText null: for a new file the whole
// file (an "add" with its patch on ACP v2, as its permission request
// showed it), for a replaced one a partial diff, as history does not keep
// the previous content (its permission request showed the whole change). A call that failed or that
// the user declined shows no diff.
func Describe(cwd string) func(call history.ToolCall, result *history.Message) acp.ToolCallDisplay {
	cwd = filepath.Clean(cwd)
	abs := func(p string) string {
		if p == "" {
			return cwd
		}
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(cwd, p)
	}
	return func(call history.ToolCall, result *history.Message) acp.ToolCallDisplay {
		var in struct {
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
			Content   string `json:"content"`
			OldText   string `json:"old_text"`
			NewText   string `json:"new_text"`
			Pattern   string `json:"pattern"`
			Command   string `json:"command"`
		}
		_ = json.Unmarshal(call.Arguments, &in) // bad arguments: shown without them
		failed := result != nil && history.ToolFailed(result.Text)
		declined := result != nil && strings.HasPrefix(result.Text, Declined)
		var d acp.ToolCallDisplay
		if declined {
			d.Status = acpschema.ToolCallFailed
		}
		here := func(line int) []acpschema.ToolCallLocation { return locations(abs(in.Path), line) }
		diff := func(oldText, newText string) {
			if !failed && !declined {
				// Partial: the texts of the arguments are not known to be
				// the whole file (the running tool shows the whole files).
				d.Content = []acpschema.ToolCallContent{{Diff: &acpschema.ToolDiff{Path: abs(in.Path), OldText: oldText, NewText: newText, Partial: true}}}
			}
		}
		switch call.Name {
		case "read_file":
			d.Kind, d.Title, d.Locations = acpschema.ToolKindRead, "Read "+shownName(in.Path), here(in.StartLine)
		case "write_file":
			d.Kind, d.Title, d.Locations = acpschema.ToolKindEdit, "Write "+shownName(in.Path), here(0)
			diff("", in.Content)
			if created(result) && len(d.Content) == 1 {
				// A new file: the content is the whole file, and the diff
				// an "add", as the permission request showed it.
				d.Content[0].Diff.Partial = false
			}
		case "edit_file":
			d.Kind, d.Title, d.Locations = acpschema.ToolKindEdit, "Edit "+shownName(in.Path), here(editedLine(result))
			diff(in.OldText, in.NewText)
		case "list_files":
			d.Kind, d.Title, d.Locations = acpschema.ToolKindSearch, "List "+shownName(or(in.Path, ".")), here(0)
		case "search":
			d.Kind, d.Title, d.Locations = acpschema.ToolKindSearch, fmt.Sprintf("Search for %q in %s", in.Pattern, shownName(or(in.Path, "."))), here(0)
		case "run_command":
			d.Kind, d.Title = acpschema.ToolKindExecute, "Run "+shownName(in.Command)
		default:
			return acp.ToolCallDisplay{}
		}
		return d
	}
}

// created reports whether a write_file result says it made a new file
// ("wrote PATH (N bytes)"; one that replaced a file says so).
func created(result *history.Message) bool {
	return result != nil && createdRE.MatchString(result.Text)
}

// createdRE is write_file's result for a new file, anchored at its end:
// a path the model chose cannot make a replaced file's result look new.
var createdRE = regexp.MustCompile(`^wrote .* \(\d+ bytes\)$`)

var editedRE = regexp.MustCompile(`^edited .* at line (\d+)$`)

// editedLine is the line an edit_file result names, 0 for none.
func editedLine(result *history.Message) int {
	if result == nil {
		return 0
	}
	if m := editedRE.FindStringSubmatch(result.Text); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
