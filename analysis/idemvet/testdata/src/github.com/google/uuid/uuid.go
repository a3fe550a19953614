// Package uuid is a stub of github.com/google/uuid.
package uuid

type UUID [16]byte

func (u UUID) String() string { return "" }

func New() UUID { return UUID{} }

func NewString() string { return "" }

func MustParse(s string) UUID { return UUID{} }
