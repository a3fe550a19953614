package idemimpl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

// JSONKind returns the JSON type of the value b holds: "object", "array",
// "string", "number", "boolean" or "null"; "" for nothing. It looks only at
// the first byte: b is a value encoding/json already checked.
func JSONKind(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// DecodeVariant decodes b into a new T and stores it in *dst, only when it
// decodes without error: the member decoders of a generated union.
func DecodeVariant[T any](b []byte, dst **T) error {
	v := new(T)
	if err := Unmarshal(b, v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// NoVariant is the error of a union value that none of members accepts.
func NoVariant(b []byte, members ...string) error {
	return fmt.Errorf("%s value is none of %s", article(JSONKind(b)), strings.Join(members, ", "))
}

func article(kind string) string {
	if kind == "object" || kind == "array" {
		return "an " + kind
	}
	return "a " + kind
}

// Discriminator returns the value of the string property name of the JSON
// object b; ok is false for null. A value that is not an object, an object
// without the property and a property that is not a string are errors.
func Discriminator(b []byte, name string) (tag string, ok bool, err error) {
	switch kind := JSONKind(b); kind {
	case "null":
		return "", false, nil
	case "object":
	default:
		return "", false, fmt.Errorf("want an object with a %q property, got %s", name, article(kind))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", false, err
	}
	raw, found := m[name]
	if !found {
		return "", false, fmt.Errorf("property %q is required", name)
	}
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", false, fmt.Errorf("property %q: want a string, got %s", name, article(JSONKind(raw)))
	}
	return tag, true, nil
}

// UnknownDiscriminator is the error of a discriminator value that names no
// member.
func UnknownDiscriminator(name, tag string) error {
	return fmt.Errorf("property %q: %q is not one of the allowed values", name, tag)
}

// MarshalAdditional encodes the struct v (a type without MarshalJSON) and
// adds the members of extra, sorted by name, leaving out those that
// declared names: the MarshalJSON of a generated struct that keeps
// additionalProperties.
func MarshalAdditional[T any](v any, extra map[string]T, declared ...string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("additional properties of a %s value", JSONKind(b))
	}
	out := bytes.NewBuffer(b[:len(b)-1])
	first := bytes.Equal(b, []byte("{}"))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !slices.Contains(declared, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !first {
			out.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// UnmarshalAdditional decodes the members of the JSON object b that
// declared does not name into *dst (nil when there are none): the
// UnmarshalJSON of a generated struct that keeps additionalProperties.
func UnmarshalAdditional[T any](b []byte, dst *map[string]T, declared ...string) error {
	*dst = nil
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return err
	}
	for k, raw := range m {
		if slices.Contains(declared, k) {
			continue
		}
		var v T
		if err := Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("property %q: %w", k, err)
		}
		if *dst == nil {
			*dst = map[string]T{}
		}
		(*dst)[k] = v
	}
	return nil
}

// HeaderValue formats the value of a typed response header field; a nil
// pointer is "" (not sent). Times are RFC 3339, numbers in their shortest
// exact form.
func HeaderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case uuid.UUID:
		return x.String()
	case idemtype.Date:
		return x.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return ""
		}
		return HeaderValue(rv.Elem().Interface())
	case reflect.String:
		return rv.String() // an enum type
	}
	return fmt.Sprint(v)
}

// ParseHeader parses the typed response header name into *dst (a
// generated client's decoder); an absent header leaves *dst alone.
func ParseHeader[T any](h http.Header, name string, dst *T, parse func(string) (T, error)) error {
	s := h.Get(name)
	if s == "" {
		return nil
	}
	v, err := parse(s)
	if err != nil {
		return fmt.Errorf("response header %s: %w", name, err)
	}
	*dst = v
	return nil
}

// ParseHeaderPointer is ParseHeader for an optional header's field.
func ParseHeaderPointer[T any](h http.Header, name string, dst **T, parse func(string) (T, error)) error {
	if h.Get(name) == "" {
		return nil
	}
	v := new(T)
	if err := ParseHeader(h, name, v, parse); err != nil {
		return err
	}
	*dst = v
	return nil
}

// ParseDate parses a date parameter (RFC 3339 full-date).
func ParseDate(s string) (idemtype.Date, error) { return idemtype.ParseDate(s) }

// StripPointer, StripSlice, StripMap, StripNullable and StripOrEmpty apply
// f (a generated type's withoutWriteOnly) to what they hold, returning a
// copy: a response never sends a writeOnly member.
func StripPointer[T any](p *T, f func(T) T) *T {
	if p == nil {
		return nil
	}
	v := f(*p)
	return &v
}

// StripSlice: see StripPointer.
func StripSlice[T any](s []T, f func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i := range s {
		out[i] = f(s[i])
	}
	return out
}

// StripMap: see StripPointer.
func StripMap[T any](m map[string]T, f func(T) T) map[string]T {
	if m == nil {
		return nil
	}
	out := make(map[string]T, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

// StripNullable: see StripPointer.
func StripNullable[T any](n idemtype.Nullable[T], f func(T) T) idemtype.Nullable[T] {
	if v, ok := n.Value(); ok {
		return idemtype.NewNullable(f(v))
	}
	return n
}

// StripOrEmpty: see StripPointer.
func StripOrEmpty[T any](e idemtype.OrEmpty[T], f func(T) T) idemtype.OrEmpty[T] {
	if v, ok := e.Value(); ok {
		return idemtype.NewOrEmpty(f(v))
	}
	return e
}

// Named is a struct field whose JSON member name encoding/json cannot
// carry in a struct tag (a space, a comma, a quote, a backquote, a
// backslash, "-"): the generated field is tagged json:"-", and the type's
// MarshalJSON and UnmarshalJSON move it with AppendNamed and
// UnmarshalNamed under its exact name.
type Named struct {
	Name  string
	Value any // the field's value (MarshalJSON) or a pointer to it (UnmarshalJSON)
	// OmitZero leaves the member out when the value is its type's zero
	// value (or its IsZero method says so), as the omitzero tag option does.
	OmitZero bool
}

// AppendNamed adds the named members to b, the JSON object encoding/json
// made of the struct without them (err is its error, passed through).
func AppendNamed(b []byte, err error, members ...Named) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("members of a %s value", JSONKind(b))
	}
	out := bytes.NewBuffer(b[: len(b)-1 : len(b)-1])
	first := bytes.Equal(bytes.TrimSpace(b), []byte("{}"))
	if first {
		out = bytes.NewBufferString("{")
	}
	for _, m := range members {
		if m.OmitZero && isZero(m.Value) {
			continue
		}
		vb, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strconv.Quote(m.Name), err)
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(m.Name)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

func isZero(v any) bool {
	if z, ok := v.(interface{ IsZero() bool }); ok {
		rv := reflect.ValueOf(v)
		return (rv.Kind() != reflect.Pointer || !rv.IsNil()) && z.IsZero() || rv.Kind() == reflect.Pointer && rv.IsNil()
	}
	return v == nil || reflect.ValueOf(v).IsZero()
}

// UnmarshalNamed decodes the members of the JSON object b that members
// name into their Value pointers; absent members leave them alone.
func UnmarshalNamed(b []byte, members ...Named) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return err
	}
	for _, n := range members {
		raw, ok := m[n.Name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, n.Value); err != nil {
			return fmt.Errorf("property %q: %w", n.Name, err)
		}
	}
	return nil
}
