package idemimpl

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
)

// ErrMissing is the cause of an *idem.RequestError for a required parameter
// or body that is absent: `query parameter "limit": is required`.
var ErrMissing = errors.New("is required")

// lookup returns the raw values of a parameter; key is the spec name (the
// ServeMux wildcard for path parameters).
func lookup(r *http.Request, in, key string) []string {
	switch in {
	case "path":
		if v := r.PathValue(key); v != "" {
			return []string{v}
		}
	case "query":
		return r.URL.Query()[key]
	case "header":
		return r.Header.Values(key)
	case "cookie":
		if c, err := r.Cookie(key); err == nil {
			return []string{c.Value}
		}
	}
	return nil
}

func where(in, key string) string { return in + " parameter " + strconv.Quote(key) }

// ParamRequired parses the first value of a required parameter. in is path,
// query, header or cookie; key is the spec name (the ServeMux wildcard of a
// path parameter). A missing or unparsable value is an *idem.RequestError.
func ParamRequired[T any](r *http.Request, in, key string, parse func(string) (T, error)) (T, error) {
	var zero T
	vs := lookup(r, in, key)
	if len(vs) == 0 {
		return zero, idem.InvalidRequest(where(in, key), ErrMissing)
	}
	v, err := parse(vs[0])
	if err != nil {
		return zero, idem.InvalidRequest(where(in, key), err)
	}
	return v, nil
}

// ParamOptional parses the first value of an optional parameter; nil when it
// is absent. An unparsable value is an *idem.RequestError.
func ParamOptional[T any](r *http.Request, in, key string, parse func(string) (T, error)) (*T, error) {
	vs := lookup(r, in, key)
	if len(vs) == 0 {
		return nil, nil
	}
	v, err := parse(vs[0])
	if err != nil {
		return nil, idem.InvalidRequest(where(in, key), err)
	}
	return &v, nil
}

// ParamList parses an array parameter. An exploded query parameter repeats
// (`?tag=a&tag=b`); any other is comma-separated (`?tag=a,b`). Elements are
// trimmed of white space. Absent, it is nil, or an *idem.RequestError when
// required.
func ParamList[T any](r *http.Request, in, key string, required, explode bool, parse func(string) (T, error)) ([]T, error) {
	vs := lookup(r, in, key)
	if !explode || in != "query" {
		var split []string
		for _, v := range vs {
			split = append(split, strings.Split(v, ",")...)
		}
		vs = split
	}
	if len(vs) == 0 {
		if required {
			return nil, idem.InvalidRequest(where(in, key), ErrMissing)
		}
		return nil, nil
	}
	out := make([]T, 0, len(vs))
	for _, s := range vs {
		v, err := parse(strings.TrimSpace(s))
		if err != nil {
			return nil, idem.InvalidRequest(where(in, key), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseString returns s: the parse function of a string parameter.
func ParseString(s string) (string, error) { return s, nil }

// ParseBool parses a boolean parameter as strconv.ParseBool does.
func ParseBool(s string) (bool, error) { return strconv.ParseBool(s) }

// ParseInt32 parses a decimal int32; out of range is strconv.ErrRange.
func ParseInt32(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	return int32(v), numErr(err)
}

// ParseInt64 parses a decimal int64; out of range is strconv.ErrRange.
func ParseInt64(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, numErr(err)
}

// ParseFloat32 parses a float32.
func ParseFloat32(s string) (float32, error) {
	v, err := strconv.ParseFloat(s, 32)
	return float32(v), numErr(err)
}

// ParseFloat64 parses a float64.
func ParseFloat64(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	return v, numErr(err)
}

// ParseTime parses an RFC 3339 date-time.
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) }

// ParseUUID parses a UUID as uuid.Parse does.
func ParseUUID(s string) (uuid.UUID, error) { return uuid.Parse(s) }

// numErr drops strconv's wrapping, which repeats the input and the function
// name: the request error already says which parameter it is.
func numErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// Enum is the constraint of a generated string enum type.
type Enum interface {
	~string
	Valid() bool
}

// ParseEnum parses a parameter of enum type E, refusing undeclared values.
func ParseEnum[E Enum](s string) (E, error) {
	if !E(s).Valid() {
		return "", fmt.Errorf("%q is not an allowed value", s)
	}
	return E(s), nil
}
