package acp

import (
	"encoding/json"
	"fmt"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
)

// recallDisplay is how a call of the session's built-in recall tool
// (session.Config.Recall) is shown, live and on replay alike (it reads the
// call's arguments only): a search, titled Recall "<query>", or a read of
// the message it names, titled Recall message <ID>.
func recallDisplay(c history.ToolCall) ToolCallDisplay {
	var in struct {
		Query     string `json:"query"`
		MessageID string `json:"message_id"`
	}
	_ = json.Unmarshal(c.Arguments, &in) // bad arguments: shown as a search without them
	if in.MessageID != "" && in.Query == "" {
		return ToolCallDisplay{Kind: schema.ToolKindRead, Title: "Recall message " + in.MessageID}
	}
	return ToolCallDisplay{Kind: schema.ToolKindSearch, Title: fmt.Sprintf("Recall %q", in.Query)}
}

// fidelityMeta is a Segment's fidelity as _meta.sessionkit.fidelity of the
// completed compaction_update carries it.
func fidelityMeta(f history.Fidelity) map[string]any {
	m := map[string]any{"facts": f.Facts, "kept": f.Kept}
	if len(f.Missing) > 0 {
		m["missing"] = f.Missing
	}
	return m
}

// maxMetaFiles bounds the files a compaction_update names.
const maxMetaFiles = 100

// filesMeta is a Segment's files as _meta.sessionkit.files of the
// completed compaction_update carries them: newest first, each
// {"path", "read", "changed"} (the flags only when true), at most
// maxMetaFiles, and then {"omitted": n} for the rest.
func filesMeta(files []history.FileState) []any {
	out := make([]any, 0, min(len(files), maxMetaFiles)+1)
	for i := range files[:min(len(files), maxMetaFiles)] {
		f := map[string]any{"path": files[i].Path}
		if files[i].Read {
			f["read"] = true
		}
		if files[i].Changed {
			f["changed"] = true
		}
		out = append(out, f)
	}
	if n := len(files) - maxMetaFiles; n > 0 {
		out = append(out, map[string]any{"omitted": n})
	}
	return out
}

// fidelityOf reads the fidelity a sessionkit agent puts in a completed
// compaction entity's _meta; zero for other agents.
func fidelityOf(meta map[string]any) history.Fidelity {
	m, _ := meta[schema.MetaKey].(map[string]any)
	f, _ := m["fidelity"].(map[string]any)
	num := func(k string) int { n, _ := f[k].(float64); return int(n) }
	out := history.Fidelity{Facts: num("facts"), Kept: num("kept")}
	if missing, ok := f["missing"].([]any); ok {
		for _, x := range missing[:min(len(missing), history.MaxFidelityMissing)] {
			if s, ok := x.(string); ok {
				out.Missing = append(out.Missing, s)
			}
		}
	}
	return out
}

// filesOf reads the files a sessionkit agent lists in a completed
// compaction entity's _meta (filesMeta: path, read, changed; a last entry
// counting the ones left out is skipped), at most history.MaxFiles; nil
// for other agents. A file changed is given as changed (the last access
// is not said).
func filesOf(meta map[string]any) []history.FileState {
	m, _ := meta[schema.MetaKey].(map[string]any)
	list, _ := m["files"].([]any)
	var out []history.FileState
	for _, x := range list[:min(len(list), history.MaxFiles)] {
		f, _ := x.(map[string]any)
		path, _ := f["path"].(string)
		if path == "" {
			continue
		}
		st := history.FileState{FileAccess: history.FileAccess{Path: path, Op: history.FileRead}}
		st.Read, _ = f["read"].(bool)
		st.Changed, _ = f["changed"].(bool)
		if st.Changed {
			st.Op = history.FileChanged
		}
		out = append(out, st)
	}
	return out
}

// withMeta returns meta with key set to value under _meta.sessionkit, the
// other keys of both kept.
func withMeta(meta schema.Optional[map[string]any], key string, value any) schema.Optional[map[string]any] {
	out := map[string]any{}
	ours := map[string]any{}
	if m, ok := meta.Get(); ok {
		for k, v := range m {
			out[k] = v
		}
		if mine, ok := m[schema.MetaKey].(map[string]any); ok {
			for k, v := range mine {
				ours[k] = v
			}
		}
	}
	ours[key] = value
	out[schema.MetaKey] = ours
	return schema.Value(out)
}
