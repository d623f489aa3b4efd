package history

import "slices"

// Clone returns f with a Missing of its own (nil when empty).
func (f Fidelity) Clone() Fidelity {
	if len(f.Missing) == 0 {
		f.Missing = nil
	} else {
		f.Missing = slices.Clone(f.Missing)
	}
	return f
}
