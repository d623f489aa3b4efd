package acp

// The functions that were methods of the schema's types, for the
// external tests.
var (
	CompactResultOf = compactResultOf
)
