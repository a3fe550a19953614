package idemimpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idem"
)

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

// RawOrNull returns b, or the JSON null when b is nil: the MarshalJSON of a
// generated union type.
func RawOrNull(b json.RawMessage) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// ReadBody reads a request body bounded by limit; a larger body is a
// *http.MaxBytesError, which idem.WriteProblem answers with 413, and a
// failed read wraps idem.ErrBodyUnreadable (408 or 400, without the
// network error's text).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if err != nil && !errors.As(err, &mbe) {
		return b, fmt.Errorf("%w: %w", idem.ErrBodyUnreadable, err)
	}
	return b, err
}

// DecodeJSON decodes a JSON request body into v. An empty (or all white
// space) body leaves v alone, or is an *idem.RequestError when required.
// Unknown properties are accepted, as OpenAPI schemas allow them unless
// additionalProperties is false.
func DecodeJSON(body []byte, v any, required bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if required {
			return idem.InvalidRequest("body", ErrMissing)
		}
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return idem.InvalidRequest("body", err)
	}
	return nil
}

// RawBody returns a non-JSON request body as received; an empty one is an
// *idem.RequestError when required.
func RawBody(body []byte, required bool) ([]byte, error) {
	if required && len(body) == 0 {
		return nil, idem.InvalidRequest("body", ErrMissing)
	}
	return body, nil
}
