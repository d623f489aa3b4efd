package sqlstore

import "github.com/sessionkit/sessionkit/history"

// fileJSON is the stored form of a [history.FileAccess] and of a
// [history.FileState] (read and changed then set): a path that is not
// UTF-8 goes to its _base64 twin (Exact); times are unix nanoseconds.
type fileJSON struct {
	Path       string `json:"path,omitempty"`
	PathBase64 []byte `json:"path_base64,omitempty"`
	Op         string `json:"op"`
	Hash       string `json:"hash,omitempty"`
	Size       int64  `json:"size"`
	Line       int    `json:"line,omitempty"`
	Length     int64  `json:"length,omitempty"`
	At         *int64 `json:"at,omitempty"` // nil: the zero time
	Call       string `json:"call,omitempty"`
	CallBase64 []byte `json:"call_base64,omitempty"`
	Read       bool   `json:"read,omitempty"`
	Changed    bool   `json:"changed,omitempty"`
}

func fileOf(a *history.FileAccess) (fileJSON, error) {
	f := fileJSON{Op: string(a.Op), Hash: a.Hash, Size: a.Size, Line: a.Line, Length: a.Length}
	f.Path, f.PathBase64 = Exact(a.Path)
	f.Call, f.CallBase64 = Exact(a.ToolCallID)
	n, valid, err := UnixNano(a.At)
	if err != nil {
		return f, err
	}
	if valid {
		f.At = &n
	}
	return f, nil
}

func (f *fileJSON) access() history.FileAccess {
	var n int64
	if f.At != nil {
		n = *f.At
	}
	return history.FileAccess{
		Path: Unexact(f.Path, f.PathBase64), Op: history.FileOp(f.Op), Hash: f.Hash, Size: f.Size,
		Line: f.Line, Length: f.Length, At: FromUnixNano(n, f.At != nil), ToolCallID: Unexact(f.Call, f.CallBase64),
	}
}

// Files returns the stored form of a message's files, already validated:
// a JSON array, or nil for none.
func Files(in []history.FileAccess) ([]byte, error) {
	return MarshalEach(in, fileOf)
}

// FromFiles is the inverse of Files (nil for nil).
func FromFiles(b []byte) ([]history.FileAccess, error) {
	return Unmarshal(b, func(f fileJSON) history.FileAccess { return f.access() })
}

// FileStates returns the stored form of a Segment's files, already
// validated: a JSON array, or nil for none.
func FileStates(in []history.FileState) ([]byte, error) {
	return MarshalEach(in, func(st *history.FileState) (fileJSON, error) {
		f, err := fileOf(&st.FileAccess)
		f.Read, f.Changed = st.Read, st.Changed
		return f, err
	})
}

// FromFileStates is the inverse of FileStates (nil for nil).
func FromFileStates(b []byte) ([]history.FileState, error) {
	return Unmarshal(b, func(f fileJSON) history.FileState {
		return history.FileState{FileAccess: f.access(), Read: f.Read, Changed: f.Changed}
	})
}
