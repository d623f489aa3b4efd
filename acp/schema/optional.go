package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Optional is a tri-state value for the nullable patch fields of the ACP
// wire (CompactionUpdate.summary, .error, ._meta and the like): omitted,
// null, or a value. For a patch field, omitted leaves the stored value
// unchanged, null clears it and a value replaces it.
//
// The zero value is omitted. A field of this type must carry the `omitzero`
// JSON tag option, so that an omitted Optional produces no key at all:
//
//	Summary Optional[[]ContentBlock] `json:"summary,omitzero"`
//
// Encoding an omitted Optional in any other way is an error rather than a
// silent null. Decoding a JSON null gives the null state, any other value the
// value state, and a key absent from the JSON leaves the field omitted.
//
// Value of a nil slice or map encodes as null, like encoding/json does; use
// Value([]T{}) to send an empty array.
type Optional[T any] struct {
	state optionalState
	value T
}

type optionalState uint8

const (
	optionalOmitted optionalState = iota
	optionalNull
	optionalValue
)

// errOmittedOptional reports a misuse: an omitted Optional reached the
// encoder because its field lacks the omitzero tag option.
var errOmittedOptional = errors.New("acp: encoding an omitted Optional (the field needs the omitzero tag option)")

// Null returns an Optional holding an explicit null.
func Null[T any]() Optional[T] { return Optional[T]{state: optionalNull} }

// Value returns an Optional holding v.
func Value[T any](v T) Optional[T] { return Optional[T]{state: optionalValue, value: v} }

// IsZero reports whether o is omitted. encoding/json calls it for omitzero.
func (o Optional[T]) IsZero() bool { return o.state == optionalOmitted }

// IsNull reports whether o holds an explicit null.
func (o Optional[T]) IsNull() bool { return o.state == optionalNull }

// Get returns the value and true when o holds a value, and the zero T and
// false when o is omitted or null.
func (o Optional[T]) Get() (T, bool) {
	if o.state != optionalValue {
		var zero T
		return zero, false
	}
	return o.value, true
}

// String describes o for logs and test failures: "omitted", "null" or the
// value formatted with %v.
func (o Optional[T]) String() string {
	switch o.state {
	case optionalNull:
		return "null"
	case optionalValue:
		return fmt.Sprintf("%v", o.value)
	}
	return "omitted"
}

// MarshalJSON encodes null or the value. It fails for an omitted Optional,
// which only the omitzero tag option may leave out.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	switch o.state {
	case optionalNull:
		return []byte("null"), nil
	case optionalValue:
		return json.Marshal(o.value)
	}
	return nil, errOmittedOptional
}

// UnmarshalJSON decodes null into the null state and anything else into the
// value state.
func (o *Optional[T]) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		*o = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = Value(v)
	return nil
}

// optionalField lets the reflective decoder (wire_decode.go) fill an Optional of
// any T.
type optionalField interface {
	valueType() reflect.Type
	setValue(v reflect.Value)
	setNull()
}

var _ optionalField = (*Optional[int])(nil)

func (o *Optional[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }
func (o *Optional[T]) setValue(v reflect.Value) {
	*o = Value(v.Interface().(T))
}
func (o *Optional[T]) setNull() { *o = Null[T]() }
