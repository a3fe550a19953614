package idemimpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/internal/readall"
)

// Unmarshal decodes the JSON value b into v as encoding/json does, except
// that a number in an untyped value (an any, a map[string]any, a []any) is
// a json.Number holding its digits, not a float64: such a value may hold an
// integer past 2^53, which a float64 would round (9007199254740993 would
// reach the handler as 9007199254740992 while the fingerprint covered the
// exact digits). Generated decoders and the UnmarshalJSON methods of
// generated types decode through it, so a request reaches the handler as
// its fingerprint saw it; a typed number (int64, float64) is unaffected.
func Unmarshal(b []byte, v any) error {
	if !untyped(reflect.TypeOf(v)) {
		// No number can land in an untyped value, so UseNumber changes
		// nothing: encoding/json/v2 with v1's semantics (DefaultOptionsV1)
		// decodes alike, in one pass, without a Decoder and its copy of b.
		// Its errors read differently, so a failure is decoded again
		// below (the same fields get the same values).
		if jsonv2.Unmarshal(b, v, jsonv1.DefaultOptionsV1()) == nil {
			return nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// untypedTypes caches untyped by type.
var untypedTypes sync.Map // reflect.Type -> bool

// untyped reports whether encoding/json could decode a JSON number into an
// untyped value (an interface) somewhere inside a value of type t, not
// counting values that decode themselves (json.Unmarshaler): whether
// UseNumber can make a difference.
func untyped(t reflect.Type) bool {
	if t == nil {
		return true
	}
	if u, ok := untypedTypes.Load(t); ok {
		return u.(bool)
	}
	u := untypedIn(t, map[reflect.Type]bool{})
	untypedTypes.Store(t, u)
	return u
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func untypedIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other paths decide
	}
	seen[t] = true
	if t.Kind() != reflect.Interface && (t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)) {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return untypedIn(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if untypedIn(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// UnmarshalEnum decodes a JSON string into an enum type, refusing undeclared
// values: the UnmarshalJSON method of a generated enum.
func UnmarshalEnum[E Enum](b []byte, v *E) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !E(s).Valid() {
		return fmt.Errorf("%q is not an allowed value", s)
	}
	*v = E(s)
	return nil
}

// CheckRequired reports the first of names missing from the JSON object b.
// A value that is not an object (or is null) is left to json.Unmarshal.
func CheckRequired(b []byte, names ...string) error {
	if validatedRequired(b, names) {
		return nil
	}
	if missing, ok := missingName(b, names); ok {
		if missing != "" {
			return fmt.Errorf("property %q is required", missing)
		}
		return nil
	}
	// Not a well-formed object of unique names, or more than 64 names:
	// as encoding/json sees it.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return err
	}
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return fmt.Errorf("property %q is required", n)
		}
	}
	return nil
}

// missingName scans the members of the JSON object b for names without
// decoding their values: the first name missing ("" when none is), and
// whether b could be scanned so (a well-formed object with unique member
// names, at most 64 names asked for).
func missingName(b []byte, names []string) (string, bool) {
	if len(names) > 64 {
		return "", false
	}
	p := newParser(b)
	defer p.release()
	dec := p.dec
	if dec.PeekKind() != '{' {
		return "", false
	}
	if _, err := dec.ReadToken(); err != nil {
		return "", false
	}
	var seen uint64
	for dec.PeekKind() != '}' {
		raw, err := dec.ReadValue() // the member's name, quoted
		if err != nil {
			return "", false
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return "", false
			}
		}
		for i, n := range names {
			if string(name) == n {
				seen |= 1 << i
			}
		}
		if err := dec.SkipValue(); err != nil {
			return "", false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return "", false
	}
	if _, err := dec.ReadToken(); err != io.EOF { // data after the object
		return "", false
	}
	for i, n := range names {
		if seen&(1<<i) == 0 {
			return n, true
		}
	}
	return "", true
}

// UnmarshalRequired decodes b into v, then refuses an object that lacks one
// of names (CheckRequired): the UnmarshalJSON method of a generated struct
// with required properties, which passes itself as a type without methods.
func UnmarshalRequired(b []byte, v any, names ...string) error {
	if err := Unmarshal(b, v); err != nil {
		return err
	}
	return CheckRequired(b, names...)
}

// RawOrNull returns b, or the JSON null when b is nil: the MarshalJSON of a
// generated union type.
func RawOrNull(b json.RawMessage) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// ReadBody reads a request body bounded by limit (idem.LimitBody); a
// larger body is a *http.MaxBytesError, which Engine.WriteError answers
// with 413 — before a byte of it is read when its Content-Length says so
// — and a failed read wraps idem.ErrBodyUnreadable (408 or 400, without
// the network error's text).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := readall.ReadAll(idem.LimitBody(w, r, limit), r.ContentLength)
	var mbe *http.MaxBytesError
	if err != nil && !errors.As(err, &mbe) {
		return b, fmt.Errorf("%w: %w", idem.ErrBodyUnreadable, err)
	}
	return b, err
}

func bodyErr(err error) error { return idem.InvalidRequest("body", err) }

// unmarshalError describes an encoding/json error in terms of the request:
// a JSON pointer and the expected JSON type, not Go types and fields.
func unmarshalError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		ptr := "#"
		if te.Field != "" {
			ptr += "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return fmt.Errorf("at %s: %s is not %s", ptr, te.Value, jsonKind(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at byte %d", se.Offset)
	}
	// An UnmarshalJSON method of a generated type (an enum, a union):
	// its message is ours, but drop encoding/json's Go-type prefix.
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "json: ") {
		msg = msg[i+2:]
	}
	return errors.New(msg)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "the expected type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in the range of " + t.Kind().String()
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "the expected type"
}

// RawBody returns a non-JSON request body as received; an empty one is an
// *idem.RequestError when required.
func RawBody(body []byte, required bool) ([]byte, error) {
	if required && len(body) == 0 {
		return nil, idem.InvalidRequest("body", ErrMissing)
	}
	return body, nil
}

// DecodeJSON decodes a JSON body strictly (ParseJSON) into v, unmarshalling
// v from the canonical encoding of the decoded value. An empty body leaves v
// alone, or is an *idem.RequestError when required.
func DecodeJSON(body []byte, v any, required bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if required {
			return bodyErr(ErrMissing)
		}
		return nil
	}
	tree, err := ParseJSON(body)
	if err != nil {
		return bodyErr(fmt.Errorf("%w: %w", idem.ErrInvalidJSON, err))
	}
	if err := Unmarshal(AppendJSON(nil, &tree, nil), v); err != nil {
		return bodyErr(unmarshalError(err))
	}
	return nil
}
