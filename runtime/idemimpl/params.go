package idemimpl

import "errors"

// ErrMissing is the cause of an *idem.RequestError for a required body that
// is absent: `body: is required`.
var ErrMissing = errors.New("is required")

// Enum is the constraint of a generated string enum type.
type Enum interface {
	~string
	Valid() bool
}
