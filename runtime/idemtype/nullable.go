package idemtype

import (
	"bytes"
	"encoding/json"
)

// presence is the state of a Nullable or an OrEmpty; the zero value is
// absent.
type presence uint8

const (
	absent  presence = iota
	special          // null for Nullable, "" for OrEmpty
	present
)

// Nullable is an optional member that may also be null: it keeps absent,
// null and a value apart, which a pointer cannot (a PATCH that sets a field
// to null is not one that leaves it alone). Generated types use it for
// optional nullable members, with the `omitzero` JSON option, so that an
// absent member is left out when encoded:
//
//	Note idemtype.Nullable[string] `json:"note,omitzero"`
//
// The zero value is absent. JSON null decodes to null and a value to a
// value; encoding/json never calls UnmarshalJSON for a member that is
// absent.
type Nullable[T any] struct {
	value T
	state presence
}

// NewNullable returns a Nullable set to v.
func NewNullable[T any](v T) Nullable[T] { return Nullable[T]{value: v, state: present} }

// Null returns a Nullable set to null.
func Null[T any]() Nullable[T] { return Nullable[T]{state: special} }

// Set sets n to v.
func (n *Nullable[T]) Set(v T) { *n = NewNullable(v) }

// SetNull sets n to null.
func (n *Nullable[T]) SetNull() { *n = Null[T]() }

// Unset makes n absent.
func (n *Nullable[T]) Unset() { *n = Nullable[T]{} }

// Value returns the value and true when n holds one; the zero value and
// false when it is null or absent.
func (n Nullable[T]) Value() (T, bool) { return n.value, n.state == present }

// IsNull reports whether n is null.
func (n Nullable[T]) IsNull() bool { return n.state == special }

// Present reports whether n is null or holds a value (a JSON member that was
// sent).
func (n Nullable[T]) Present() bool { return n.state != absent }

// IsZero reports whether n is absent; the `omitzero` JSON option leaves such
// a member out.
func (n Nullable[T]) IsZero() bool { return n.state == absent }

// MarshalJSON encodes the value, or null when n is null (or absent, for a
// field without omitzero).
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.state != present {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON decodes JSON null as null and anything else as a value.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	if isJSONNull(b) {
		n.SetNull()
		return nil
	}
	var v T
	if err := unmarshalExact(b, &v); err != nil {
		return err
	}
	n.Set(v)
	return nil
}

// OrEmpty is a member that holds a value of T or the empty string, which
// some APIs take to mean "unset this" (Stripe's `anyOf: [X, {enum: [""]}]`:
// `metadata: ""` clears the metadata). It keeps absent, empty and a value
// apart; generated types use it with `omitzero`. The zero value is absent.
type OrEmpty[T any] struct {
	value T
	state presence
}

// NewOrEmpty returns an OrEmpty set to v.
func NewOrEmpty[T any](v T) OrEmpty[T] { return OrEmpty[T]{value: v, state: present} }

// Empty returns an OrEmpty set to the empty string.
func Empty[T any]() OrEmpty[T] { return OrEmpty[T]{state: special} }

// Set sets e to v.
func (e *OrEmpty[T]) Set(v T) { *e = NewOrEmpty(v) }

// SetEmpty sets e to the empty string.
func (e *OrEmpty[T]) SetEmpty() { *e = Empty[T]() }

// Unset makes e absent.
func (e *OrEmpty[T]) Unset() { *e = OrEmpty[T]{} }

// Value returns the value and true when e holds one.
func (e OrEmpty[T]) Value() (T, bool) { return e.value, e.state == present }

// IsEmpty reports whether e is the empty string.
func (e OrEmpty[T]) IsEmpty() bool { return e.state == special }

// Present reports whether e is empty or holds a value.
func (e OrEmpty[T]) Present() bool { return e.state != absent }

// IsZero reports whether e is absent; the `omitzero` JSON option leaves such
// a member out.
func (e OrEmpty[T]) IsZero() bool { return e.state == absent }

// MarshalJSON encodes the value, or "" when e is empty; an absent e (in a
// field without omitzero) encodes as null.
func (e OrEmpty[T]) MarshalJSON() ([]byte, error) {
	switch e.state {
	case special:
		return []byte(`""`), nil
	case absent:
		return []byte("null"), nil
	}
	return json.Marshal(e.value)
}

// UnmarshalJSON decodes "" as empty and anything else as a value; null
// leaves e absent.
func (e *OrEmpty[T]) UnmarshalJSON(b []byte) error {
	switch {
	case isJSONNull(b):
		e.Unset()
		return nil
	case bytes.Equal(bytes.TrimSpace(b), []byte(`""`)):
		e.SetEmpty()
		return nil
	}
	var v T
	if err := unmarshalExact(b, &v); err != nil {
		return err
	}
	e.Set(v)
	return nil
}

// unmarshalExact is json.Unmarshal of one JSON value with the numbers of
// untyped values (T any) as json.Number, as idemimpl.Unmarshal decodes the
// rest of a request: an integer past 2^53 is not rounded through a float64.
func unmarshalExact(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func isJSONNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }
