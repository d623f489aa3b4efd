package schema

// convertAll returns conv of each of in (never nil).
func convertAll[F, T any](in []F, conv func(F) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}
