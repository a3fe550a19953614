// Package sealcodec is the codec of the record columns that may be sealed
// at rest (the stored response, lease-mode recovery data): the frames, the
// additional data naming a record and field, and the refusal of a sealed
// value without a Sealer. The engine (runtime/idem) and its admin API
// (runtime/idem/admin) both read and write records through it.
package sealcodec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sealer is idem.Sealer (see there).
type Sealer interface {
	Seal(ctx context.Context, plaintext, additionalData []byte) ([]byte, error)
	Open(ctx context.Context, sealed, additionalData []byte) ([]byte, error)
	IsSealed(value []byte) bool
}

// Record names the record a value belongs to; it is part of the additional
// data, so a value copied into another record does not open.
type Record struct {
	Tenant, Operation, Key string
}

// ErrSealed is idem.ErrSealed.
var ErrSealed = errors.New("idem: the record is sealed and no Sealer is configured")

// Fields of a record that may be sealed, part of the additional data.
const (
	sealedResponse = "response"
	sealedRecovery = "recovery"
)

// sealAAD is the additional data of field in k's record: NUL-separated,
// like idem.Key.Hash, since no part can contain NUL.
func sealAAD(field string, k Record) []byte {
	b := make([]byte, 0, 24+len(field)+len(k.Tenant)+len(k.Operation)+len(k.Key))
	b = append(b, "idemgen record v1"...)
	for _, s := range []string{field, k.Tenant, k.Operation, k.Key} {
		b = append(b, 0)
		b = append(b, s...)
	}
	return b
}

// The frame of a sealed response, inside the seal. Version 2 (since the
// status was sealed too):
//
//	0x00 0x02 uvarint(status) uvarint(len(headers)) headers body
//
// Version 1, which records sealed before it still hold, has no status and
// no marker: uvarint(len(headers)) headers body. Its first byte is never 0,
// since the headers are a JSON object ("{}" at least), so the 0 tells the
// two apart; and since the marker is inside the seal, a version-2 value
// cannot be passed off as a version-1 one.
const (
	frameMarker = 0x00
	frameV2     = 0x02
)

// EncodeResponse returns the values of the response_headers and
// response_body columns for a stored response: headersJSON (a JSON object
// of name -> values) and body as they are without a Sealer; with one, no
// headers column (nil) and one sealed value holding the status, the headers
// and the body, so that none of what a replay sends can be altered in the
// table without the replay refusing it (the status column stays, for
// queries; DecodeResponse checks it against the sealed one).
func EncodeResponse(ctx context.Context, s Sealer, k Record, status int, headersJSON, body []byte) (headersCol, bodyCol []byte, err error) {
	if s == nil {
		return headersJSON, body, nil
	}
	plain := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(headersJSON)+len(body))
	plain = append(plain, frameMarker, frameV2)
	plain = binary.AppendUvarint(plain, uint64(status))
	plain = binary.AppendUvarint(plain, uint64(len(headersJSON)))
	plain = append(plain, headersJSON...)
	plain = append(plain, body...)
	sealed, err := s.Seal(ctx, plain, sealAAD(sealedResponse, k))
	if err != nil {
		return nil, nil, fmt.Errorf("idem: seal stored response: %w", err)
	}
	return nil, sealed, nil
}

// ErrRecordAltered is idem.ErrRecordAltered.
var ErrRecordAltered = errors.New("the record was altered after it was sealed")

// DecodeResponse is EncodeResponse's inverse: the stored headers (JSON) and
// body of k's record, whose response_status column holds status. A plaintext
// record reads as it is, with or without a Sealer; a sealed one needs the
// Sealer (ErrSealed otherwise), and is refused (ErrRecordAltered) when its
// status column is not the sealed status or its headers column is set. A
// record sealed before the status was (frame version 1) still opens; its
// status column is taken as it is.
func DecodeResponse(ctx context.Context, s Sealer, k Record, status int, headersCol, bodyCol []byte) (headersJSON, body []byte, err error) {
	if s == nil || !s.IsSealed(bodyCol) {
		// A sealed response has no headers column (NULL, which the record
		// read turns into {}); a plaintext one has its headers there.
		if s == nil && looksSealed(bodyCol) && emptyHeaders(headersCol) {
			return nil, nil, fmt.Errorf("stored response: %w", ErrSealed)
		}
		return headersCol, bodyCol, nil
	}
	if !emptyHeaders(headersCol) {
		return nil, nil, fmt.Errorf("idem: open stored response: %w: the headers column is set beside a sealed response", ErrRecordAltered)
	}
	plain, err := s.Open(ctx, bodyCol, sealAAD(sealedResponse, k))
	if err != nil {
		return nil, nil, fmt.Errorf("idem: open stored response: %w", err)
	}
	if len(plain) > 0 && plain[0] == frameMarker {
		if len(plain) < 2 || plain[1] != frameV2 {
			return nil, nil, errors.New("idem: open stored response: unknown frame version")
		}
		sealed, w := binary.Uvarint(plain[2:])
		if w <= 0 {
			return nil, nil, errors.New("idem: open stored response: malformed frame")
		}
		if sealed != uint64(status) {
			return nil, nil, fmt.Errorf("idem: open stored response: %w: the status column says %d, the sealed status is %d", ErrRecordAltered, status, sealed)
		}
		plain = plain[2+w:]
	}
	n, w := binary.Uvarint(plain)
	if w <= 0 || uint64(len(plain)-w) < n {
		return nil, nil, errors.New("idem: open stored response: malformed frame")
	}
	return plain[w : w+int(n)], plain[w+int(n):], nil
}

// emptyHeaders reports whether a headers column holds nothing: NULL, or the
// {} the record read puts in its place.
func emptyHeaders(col []byte) bool {
	return len(col) == 0 || string(bytes.TrimSpace(col)) == "{}"
}

// EncodeRecoveryData returns the value of the recovery_data column for data.
func EncodeRecoveryData(ctx context.Context, s Sealer, k Record, data []byte) ([]byte, error) {
	if s == nil || data == nil {
		return data, nil
	}
	sealed, err := s.Seal(ctx, data, sealAAD(sealedRecovery, k))
	if err != nil {
		return nil, fmt.Errorf("idem: seal recovery data: %w", err)
	}
	return sealed, nil
}

// DecodeRecoveryData is EncodeRecoveryData's inverse.
func DecodeRecoveryData(ctx context.Context, s Sealer, k Record, col []byte) ([]byte, error) {
	if s == nil || !s.IsSealed(col) {
		if s == nil && looksSealed(col) {
			return nil, fmt.Errorf("recovery data: %w", ErrSealed)
		}
		return col, nil
	}
	data, err := s.Open(ctx, col, sealAAD(sealedRecovery, k))
	if err != nil {
		return nil, fmt.Errorf("idem: open recovery data: %w", err)
	}
	return data, nil
}

// looksSealed recognises runtime/idemseal's prefix when no Sealer is
// configured, so a sealed record is refused rather than sent as garbage.
func looksSealed(v []byte) bool {
	return len(v) >= 4 && v[0] == 0 && v[1] == 'I' && v[2] == 'S' && v[3] == 1
}
