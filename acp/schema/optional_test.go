package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionalStates(t *testing.T) {
	var o Optional[string]
	assert.True(t, o.IsZero())
	assert.False(t, o.IsNull())
	_, ok := o.Get()
	assert.False(t, ok)
	assert.Equal(t, "omitted", o.String())

	n := Null[string]()
	assert.False(t, n.IsZero())
	assert.True(t, n.IsNull())
	_, ok = n.Get()
	assert.False(t, ok)
	assert.Equal(t, "null", n.String())

	v := Value("")
	assert.False(t, v.IsZero())
	assert.False(t, v.IsNull())
	got, ok := v.Get()
	assert.True(t, ok)
	assert.Equal(t, "", got, "an empty value is still a value")
}

type patch struct {
	S Optional[string]         `json:"s,omitzero"`
	L Optional[[]int]          `json:"l,omitzero"`
	M Optional[map[string]any] `json:"m,omitzero"`
}

func TestOptionalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   patch
		json string
	}{
		{"omitted", patch{}, `{}`},
		{"null", patch{S: Null[string](), L: Null[[]int](), M: Null[map[string]any]()}, `{"s":null,"l":null,"m":null}`},
		{"value", patch{S: Value("x"), L: Value([]int{1}), M: Value(map[string]any{"k": "v"})}, `{"s":"x","l":[1],"m":{"k":"v"}}`},
		{"empty values", patch{S: Value(""), L: Value([]int{}), M: Value(map[string]any{})}, `{"s":"","l":[],"m":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.json, string(b))
			var back patch
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.in, back)
		})
	}

	// Value of a nil slice encodes as null, like encoding/json.
	b, err := json.Marshal(patch{L: Value([]int(nil))})
	require.NoError(t, err)
	assert.Equal(t, `{"l":null}`, string(b))

	// A wrong type is an error of the plain Optional (wire types are lenient
	// on top of it, see TestCompactionUpdateLenient).
	var p patch
	assert.Error(t, json.Unmarshal([]byte(`{"s":5}`), &p))
}

// Without omitzero an omitted Optional must not silently become null.
func TestOptionalOmittedWithoutOmitzeroFails(t *testing.T) {
	var bad struct {
		S Optional[string] `json:"s"`
	}
	_, err := json.Marshal(bad)
	assert.ErrorContains(t, err, "omitzero")
	bad.S = Null[string]()
	b, err := json.Marshal(bad)
	require.NoError(t, err)
	assert.Equal(t, `{"s":null}`, string(b))
}
