package idemimpl

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// ErrMissing is the cause of an *idem.RequestError for a required body
// that is absent: `body: is required`.
var ErrMissing = errors.New("is required")

// ParseString returns s: the parse function of a string header.
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

// OneOf reports whether v is one of values: the Valid method of a generated
// enum type passes its constants.
func OneOf[E ~string](v E, values ...E) bool { return slices.Contains(values, v) }

// ParseEnum parses a parameter of enum type E, refusing undeclared values.
func ParseEnum[E Enum](s string) (E, error) {
	if !E(s).Valid() {
		return "", fmt.Errorf("%q is not an allowed value", s)
	}
	return E(s), nil
}
