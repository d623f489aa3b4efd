package schema

// Decoding of the wire types, shared by all of them.
//
// encoding/json alone is too lenient for the ACP schema: it matches keys
// case-insensitively ("CompactionID" would fill compactionId), decodes null
// into a required string as "", and cannot express the schema's
// x-deserialize-* annotations. So every wire struct decodes through
// decodeObject, which reads the struct's `json` tags for the exact member
// names and its `acp` tags for the schema rules:
//
//	required     the key must be present (JSON Schema "required"); null is
//	             an error unless combined with lenient or nulldefault
//	lenient      x-deserialize-default-on-error: an invalid value (wrong
//	             type, null where not allowed, malformed object) is treated
//	             as absent, or as empty for a required array
//	skipinvalid  x-deserialize-skip-invalid-items: array items that do not
//	             decode are dropped
//	nulldefault  x-deserialize-default-on-null: null decodes as the empty
//	             array or object
//
// These are exactly the rules the official TypeScript SDK applies with zod
// (defaultOnError, requiredDefaultOnError, vecSkipError, defaultOnNull), so a
// Go peer accepts and repairs what a TypeScript peer does. Anything else that
// does not match the schema is an error wrapping ErrMalformed, whose message
// says where and what: `field "update": session update "compaction_update":
// missing required field "compactionId"`.
//
// Unions are decoded by their discriminator ("sessionUpdate", "type"), never
// by shape. An unknown discriminator decodes into an Unknown variant that
// keeps the raw JSON; a known one with a malformed payload is an error.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// ErrMalformed is matched by every error returned when decoding a wire type
// from JSON that does not satisfy the ACP v1 schema.
var ErrMalformed = errors.New("acp: malformed wire value")

type malformedError struct{ msg string }

func (e *malformedError) Error() string        { return e.msg }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &malformedError{msg: fmt.Sprintf(format, args...)}
}

// DescribeError renders err (a decoding error of any origin) for a peer.
func DescribeError(err error) string {
	var m *malformedError
	if errors.As(err, &m) {
		return m.msg
	}
	return jsonrpc.DescribeJSONError(err)
}

func isNull(raw []byte) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// jsonKind names the JSON type of a valid JSON value.
var jsonKind = jsonrpc.JSONKind

// members splits a JSON object into its members.
func members(data []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		if err != nil && jsonKind(data) == "object" {
			return nil, malformed("%s", DescribeError(err))
		}
		return nil, malformed("expected object, got %s", jsonKind(data))
	}
	return m, nil
}

// canonicalRaw returns raw JSON in the form encoding/json produces when it
// re-encodes it (compact, HTML-escaped, valid UTF-8), so that a decoded raw
// value survives an encode/decode round trip unchanged.
func canonicalRaw(raw []byte) json.RawMessage {
	if !utf8.Valid(raw) {
		raw = fixUTF8(raw)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, compact.Bytes())
	return out.Bytes()
}

// fixUTF8 replaces every byte of an invalid UTF-8 sequence with U+FFFD.
var fixUTF8 = jsonrpc.FixUTF8

type fieldSpec struct {
	name        string
	index       int
	typ         reflect.Type
	required    bool
	lenient     bool
	skipInvalid bool
	nullDefault bool
}

var specCache sync.Map // reflect.Type -> []fieldSpec

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	sessionUpdateType = reflect.TypeFor[SessionUpdate]()
	optionalFieldType = reflect.TypeFor[optionalField]()
)

func specsOf(t reflect.Type) []fieldSpec {
	if s, ok := specCache.Load(t); ok {
		return s.([]fieldSpec)
	}
	var specs []fieldSpec
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := fieldSpec{name: name, index: i, typ: f.Type}
		for _, opt := range strings.Split(f.Tag.Get("acp"), ",") {
			switch opt {
			case "required":
				s.required = true
			case "lenient":
				s.lenient = true
			case "skipinvalid":
				s.skipInvalid = true
			case "nulldefault":
				s.nullDefault = true
			case "":
			default:
				panic(fmt.Sprintf("acp: unknown acp tag option %q on %s.%s", opt, t, f.Name))
			}
		}
		specs = append(specs, s)
	}
	specCache.Store(t, specs)
	return specs
}

// DecodeObject decodes the JSON object data into the struct v points to,
// following the struct's json and acp tags (see the top of this file).
func DecodeObject(data []byte, v any) error {
	fields, err := members(data)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	rv.SetZero()
	for _, f := range specsOf(rv.Type()) {
		raw, ok := fields[f.name]
		if !ok {
			if f.required {
				return malformed("missing required field %q", f.name)
			}
			continue
		}
		dst := rv.Field(f.index)
		if err := decodeField(dst, f, raw); err != nil {
			if !f.lenient {
				return malformed("field %q: %s", f.name, DescribeError(err))
			}
			dst.SetZero()
			if f.required && dst.Kind() == reflect.Slice {
				dst.Set(reflect.MakeSlice(dst.Type(), 0, 0))
			}
		}
	}
	return nil
}

func decodeField(dst reflect.Value, f fieldSpec, raw json.RawMessage) error {
	if isNull(raw) {
		switch {
		case f.nullDefault:
			setEmpty(dst)
			return nil
		case f.typ == rawMessageType:
			dst.SetBytes(json.RawMessage("null"))
			return nil
		case dst.Addr().Type().Implements(optionalFieldType):
			dst.Addr().Interface().(optionalField).setNull()
			return nil
		case f.required && f.typ == sessionUpdateType:
			return malformed("expected object, got null")
		case f.required:
			return malformed("expected %s, got null", jsonrpc.JSONTypeName(f.typ))
		}
		// Optional and not nullable: null is the same as absent (the schema
		// marks all such fields default-on-error or nullable).
		return nil
	}
	switch {
	case f.typ == rawMessageType:
		dst.SetBytes(canonicalRaw(raw))
		return nil
	case f.typ == sessionUpdateType:
		u, err := DecodeSessionUpdate(raw)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(u))
		return nil
	case dst.Addr().Type().Implements(optionalFieldType):
		opt := dst.Addr().Interface().(optionalField)
		vt := opt.valueType()
		if vt.Kind() == reflect.Slice {
			s, err := decodeSlice(raw, vt, f.skipInvalid)
			if err != nil {
				return err
			}
			opt.setValue(s)
			return nil
		}
		pv := reflect.New(vt)
		if err := json.Unmarshal(raw, pv.Interface()); err != nil {
			return err
		}
		opt.setValue(pv.Elem())
		return nil
	case f.typ.Kind() == reflect.Slice:
		s, err := decodeSlice(raw, f.typ, f.skipInvalid)
		if err != nil {
			return err
		}
		dst.Set(s)
		return nil
	}
	return json.Unmarshal(raw, dst.Addr().Interface())
}

// decodeSlice decodes a JSON array item by item, so that an error names the
// item and skipInvalid can drop bad ones. The result is never nil.
func decodeSlice(raw json.RawMessage, t reflect.Type, skipInvalid bool) (reflect.Value, error) {
	var items []json.RawMessage
	if jsonKind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		return reflect.Value{}, malformed("expected array, got %s", jsonKind(raw))
	}
	out := reflect.MakeSlice(t, 0, len(items))
	for i, item := range items {
		ev := reflect.New(t.Elem())
		var err error
		if isNull(item) {
			err = malformed("expected %s, got null", jsonrpc.JSONTypeName(t.Elem()))
		} else {
			err = json.Unmarshal(item, ev.Interface())
		}
		if err != nil {
			if skipInvalid {
				continue
			}
			return reflect.Value{}, malformed("item %d: %s", i, DescribeError(err))
		}
		out = reflect.Append(out, ev.Elem())
	}
	return out, nil
}

func setEmpty(dst reflect.Value) {
	switch dst.Kind() {
	case reflect.Slice:
		dst.Set(reflect.MakeSlice(dst.Type(), 0, 0))
	case reflect.Map:
		dst.Set(reflect.MakeMap(dst.Type()))
	default:
		dst.SetZero()
	}
}

var plainCache sync.Map // reflect.Type -> reflect.Type

// plainOf returns the unnamed struct type with t's fields and tags: a value
// of t converted to it encodes with encoding/json's rules, without calling
// t's own MarshalJSON again.
func plainOf(t reflect.Type) reflect.Type {
	if p, ok := plainCache.Load(t); ok {
		return p.(reflect.Type)
	}
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		fields[i] = t.Field(i)
	}
	p := reflect.StructOf(fields)
	plainCache.Store(t, p)
	return p
}

// marshalObject encodes a wire struct (passed by value or by pointer; its
// own MarshalJSON, if any, is not called) after replacing nil required
// arrays and objects with empty ones, so that a required field never goes
// out as null.
func marshalObject(v any) ([]byte, error) {
	rv := reflect.Indirect(reflect.ValueOf(v))
	cp := reflect.New(plainOf(rv.Type())).Elem()
	cp.Set(rv.Convert(cp.Type()))
	for _, f := range specsOf(rv.Type()) {
		fv := cp.Field(f.index)
		if f.required && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil() {
			setEmpty(fv)
		}
	}
	return json.Marshal(cp.Interface())
}

// withTag puts "key":"value" first into the encoded object obj.
func withTag(key, value string, obj []byte) ([]byte, error) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, fmt.Errorf("acp: union variant encoded as %s, not an object", jsonKind(obj))
	}
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	out := make([]byte, 0, len(obj)+len(k)+len(v)+2)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, v...)
	if rest := bytes.TrimSpace(obj[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, obj[1:]...), nil
}

// marshalVariant encodes a union variant with its discriminator.
func marshalVariant(key, tag string, v any) ([]byte, error) {
	b, err := marshalObject(v)
	if err != nil {
		return nil, err
	}
	return withTag(key, tag, b)
}

// Discriminator returns the string discriminator key of a union value.
func Discriminator(data []byte, key, union string) (string, error) {
	fields, err := members(data)
	if err != nil {
		return "", malformed("%s: %s", union, DescribeError(err))
	}
	raw, ok := fields[key]
	if !ok {
		return "", malformed("%s: missing discriminator %q", union, key)
	}
	var tag string
	if jsonKind(raw) != "string" || json.Unmarshal(raw, &tag) != nil {
		return "", malformed("%s: discriminator %q must be a string, got %s", union, key, jsonKind(raw))
	}
	return tag, nil
}

// decodeUnion decodes the union value data by its discriminator key. variant
// returns where the payload of a known tag decodes, or nil for an unknown
// tag, which gives an UnknownVariant that keeps the raw JSON. union names the
// union in errors.
func decodeUnion(data []byte, key, union string, variant func(tag string) any) (*UnknownVariant, error) {
	tag, err := Discriminator(data, key, union)
	if err != nil {
		return nil, err
	}
	v := variant(tag)
	if v == nil {
		return &UnknownVariant{Tag: tag, Raw: canonicalRaw(data)}, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, malformed("%s %q: %s", union, tag, DescribeError(err))
	}
	return nil, nil
}

// unionCodec encodes and decodes a union held as one pointer field per
// variant, exactly one of them set (ContentBlock, ToolCallContent): key is
// the discriminator, name names the union in decoding errors and one in
// encoding errors, variants are the known variants and unknown the field
// that keeps any other tag.
type unionCodec[U any] struct {
	key, name, one string
	variants       []unionVariant[U]
	unknown        func(*U) **UnknownVariant
}

// unionVariant is one known variant of a unionCodec: get returns its field
// (nil when unset) and set stores a new one to decode into.
type unionVariant[U any] struct {
	tag      string
	get, set func(*U) any
}

// variantField is the variant tag held in the field that field returns.
func variantField[U, V any](tag string, field func(*U) **V) unionVariant[U] {
	return unionVariant[U]{
		tag: tag,
		get: func(u *U) any {
			if p := *field(u); p != nil {
				return p
			}
			return nil
		},
		set: func(u *U) any {
			p := new(V)
			*field(u) = p
			return p
		},
	}
}

// variant returns the tag and field of the variant set in u (the last one
// when several are) and how many are set.
func (c *unionCodec[U]) variant(u *U) (tag string, v any, n int) {
	for _, vr := range c.variants {
		if p := vr.get(u); p != nil {
			tag, v = vr.tag, p
			n++
		}
	}
	if p := *c.unknown(u); p != nil {
		tag, v = p.Tag, p
		n++
	}
	return tag, v, n
}

// marshal encodes the variant set in u with its discriminator first; an
// unknown one is its raw JSON.
func (c *unionCodec[U]) marshal(u *U) ([]byte, error) {
	tag, v, n := c.variant(u)
	if n != 1 {
		return nil, fmt.Errorf("acp: %s needs exactly one variant set, has %d", c.one, n)
	}
	if unknown, ok := v.(*UnknownVariant); ok {
		return unknown.MarshalJSON()
	}
	return marshalVariant(c.key, tag, v)
}

// unmarshal decodes data into u by its discriminator; u is left zero on
// error.
func (c *unionCodec[U]) unmarshal(data []byte, u *U) error {
	var zero U
	*u = zero
	unknown, err := decodeUnion(data, c.key, c.name, func(tag string) any {
		for _, vr := range c.variants {
			if vr.tag == tag {
				return vr.set(u)
			}
		}
		return nil
	})
	*c.unknown(u) = unknown
	if err != nil {
		*u = zero
	}
	return err
}

// decodeSessionUpdate decodes a SessionUpdate by its "sessionUpdate"
// discriminator; newUpdate returns the variant of a known kind, or nil.
func decodeSessionUpdate(data []byte, newUpdate func(kind string) SessionUpdate) (SessionUpdate, error) {
	var u SessionUpdate
	unknown, err := decodeUnion(data, "sessionUpdate", "session update", func(kind string) any {
		if u = newUpdate(kind); u == nil {
			return nil
		}
		return u
	})
	switch {
	case err != nil:
		return nil, err
	case unknown != nil:
		return &UnknownSessionUpdate{Kind: unknown.Tag, Raw: unknown.Raw}, nil
	}
	return u, nil
}

// marshalUpdate encodes the session update u points to with its
// "sessionUpdate" discriminator first: the MarshalJSON of every variant.
func marshalUpdate(u SessionUpdate) ([]byte, error) {
	return marshalVariant("sessionUpdate", u.SessionUpdateKind(), u)
}

// decodeUpdate decodes the session update u points to; a "sessionUpdate"
// member, if present, must be u's kind: the UnmarshalJSON of every variant.
func decodeUpdate(data []byte, u SessionUpdate) error {
	return decodeVariant(data, u, "sessionUpdate", u.SessionUpdateKind())
}

// decodeVariant decodes the payload of a union variant whose discriminator
// is tag and checks that a discriminator present in data agrees.
func decodeVariant(data []byte, v any, key, tag string) error {
	if err := DecodeObject(data, v); err != nil {
		return err
	}
	fields, _ := members(data)
	if raw, ok := fields[key]; ok {
		var got string
		if json.Unmarshal(raw, &got) != nil || got != tag {
			return malformed("%q is %s, expected %q", key, raw, tag)
		}
	}
	return nil
}

// decodeEnum decodes a closed string enum of the schema.
func decodeEnum[T ~string](data []byte, dst *T, what string, allowed ...T) error {
	var s string
	if jsonKind(data) != "string" || json.Unmarshal(data, &s) != nil {
		return malformed("%s: expected string, got %s", what, jsonKind(data))
	}
	for _, a := range allowed {
		if T(s) == a {
			*dst = a
			return nil
		}
	}
	return malformed("unknown %s %q", what, s)
}
