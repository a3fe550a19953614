package idem

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idem/internal/sealcodec"
)

// Sealer encrypts what a record stores at rest: the response replayed to
// retries (status, headers and body) and lease-mode recovery data.
// runtime/idemseal implements it with AES-256-GCM and rotating keys. Every
// value is sealed with additional data naming its record (tenant, operation,
// key) and field, so a value copied into another record, or into another
// field, does not open.
type Sealer interface {
	Seal(ctx context.Context, plaintext, additionalData []byte) ([]byte, error)
	Open(ctx context.Context, sealed, additionalData []byte) ([]byte, error)
	// IsSealed reports whether a stored value was sealed, as opposed to
	// written in plaintext before sealing was turned on (such values are
	// still read, until they expire or `idemgen records reseal` seals them).
	IsSealed(value []byte) bool
}

// ErrSealed is returned (wrapped) when a record holds sealed values and no
// Sealer was given to open them.
var ErrSealed = sealcodec.ErrSealed

// ErrRecordAltered is returned (wrapped) when a sealed record's columns
// disagree with what was sealed: someone changed the table.
var ErrRecordAltered = sealcodec.ErrRecordAltered

// The engine's side of the codec of sealed columns (internal/sealcodec,
// shared with the admin API).

func sealed(k Key) sealcodec.Record {
	return sealcodec.Record{Tenant: k.Tenant, Operation: k.Operation, Key: k.Value}
}

func encodeResponse(ctx context.Context, s Sealer, k Key, status int, headersJSON, body []byte) (headersCol, bodyCol []byte, err error) {
	return sealcodec.EncodeResponse(ctx, s, sealed(k), status, headersJSON, body)
}

func decodeResponse(ctx context.Context, s Sealer, k Key, status int, headersCol, bodyCol []byte) (headersJSON, body []byte, err error) {
	return sealcodec.DecodeResponse(ctx, s, sealed(k), status, headersCol, bodyCol)
}

func encodeRecoveryData(ctx context.Context, s Sealer, k Key, data []byte) ([]byte, error) {
	return sealcodec.EncodeRecoveryData(ctx, s, sealed(k), data)
}

func decodeRecoveryData(ctx context.Context, s Sealer, k Key, col []byte) ([]byte, error) {
	return sealcodec.DecodeRecoveryData(ctx, s, sealed(k), col)
}
