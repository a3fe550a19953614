// Package downstream derives the idempotency keys of the calls an idempotent
// request makes to other idempotent APIs (a payment gateway, Stripe,
// another idemgen service), so that a chain of services runs each call once.
//
// A handler that calls another service while it serves a request with an
// idempotency key sends that service a key derived from the request's
// record and the call site:
//
//	key, err := downstream.Key(ctx, "refund")
//
// Every attempt of the request — a retry after a crash, a takeover of its
// lease, the retry of a rolled-back transaction or of a response the client
// never got — derives the same key for the same call site, so the downstream
// service answers the repeated call with its stored response instead of
// acting twice. Two call sites of one handler derive different keys, and so
// do two tenants that send the same key. The generated client
// (runtime/idemclient) does this by itself: called with the handler's
// context, it derives the key of each call from the operation it calls.
//
// # The derivation
//
// A derived key is HMAC-SHA256 under the service's secret
// (idem.Config.DownstreamSecret) of the request's record — its tenant, its
// operation and its idempotency key, as the engine keys the record — and
// the call-site name, each length-prefixed after a version label, written
// in the format the downstream expects (Format: a UUID by default).
//
// It cannot collide in practice: distinct records or call sites are
// distinct messages (the length prefixes make the encoding injective), so
// two of them derive one key only by an HMAC-SHA256 collision of the bits
// the format keeps — 122 for a UUID, where ten billion derived keys at one
// downstream give about one chance in 10^17 of any two sharing one.
//
// It cannot be reversed to the incoming key: the downstream sees a pseudo-
// random function of the key under a secret it does not know, and without
// the secret it cannot even test a guess. Without a secret the engine
// derives under a fixed public one, which leaves SHA-256's one-wayness: a
// UUID key (122 random bits) still cannot be recovered, but a key a third
// party can guess (an order number) can be confirmed by trying candidates,
// as from the key hashes in the engine's logs. Set the secret when keys
// are guessable.
//
// The secret must be the same in every replica of a service and must not
// change while requests may be retried (a record's ttl, at most 24 hours):
// a retry that derives under another secret sends the downstream a new key,
// and the downstream runs the call again.
//
// # The request must be the same on every attempt
//
// A derived key makes a repeated call safe only if the call repeats the same
// request: built from the incoming request and what the handler read, not
// from the clock or randomness. A downstream refuses another request under a
// key it already stored (an idemgen service answers 409
// CONFLICTING_IDEMPOTENT_REQUEST), and the generated client reports that as
// a conflict, never retried.
package downstream

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrNoRequest is returned by Key and KeyAs when the context carries no
// idempotent request: the code runs outside a handler the idempotency engine
// runs under a key (or its recovery hook), in a request whose optional key
// was absent, or in an operation that is not idempotent. There is then
// nothing to derive a stable key from; a random key would make every retry
// of the caller a new call.
var ErrNoRequest = errors.New("downstream: the context carries no idempotent request (derived keys exist only in a handler or recovery hook the idempotency engine runs under a key)")

// Record identifies an idempotency record: what a derived key is derived
// from, with the call site. It is the engine's record key (idem.Key without
// its Since).
type Record struct {
	Tenant    string
	Operation string // the operation's ID
	Key       string // the idempotency key, as the engine normalised it
}

type ctxKey struct{}

type source struct {
	secret []byte
	rec    Record
}

// NewContext returns ctx carrying rec: Key and KeyAs under it derive the
// keys of rec's outbound calls under secret (nil or empty: idemgen's fixed
// public key). The engine (runtime/idem) calls it before it runs a handler
// or a recovery hook; a test of a handler calls it to run the handler as
// the engine would. secret is not copied and must not change afterwards.
func NewContext(ctx context.Context, secret []byte, rec Record) context.Context {
	return context.WithValue(ctx, ctxKey{}, &source{secret: secret, rec: rec})
}

// Key returns the idempotency key of the outbound call named site of the
// idempotent request ctx carries, as a UUID (the format UUID). The same
// request derives the same key for site on every attempt; another site,
// record, tenant or secret derives another. It returns ErrNoRequest when
// ctx carries no idempotent request.
//
// site names the call in the handler ("charge", "refund",
// "stripe.refunds.create"): give each call of a handler a name of its own,
// unless two calls are meant to be one (a loop that must not run twice
// includes its index: "refund/3").
func Key(ctx context.Context, site string) (string, error) {
	return KeyAs(ctx, site, UUID)
}

// KeyAs is Key in the format f.
func KeyAs(ctx context.Context, site string, f Format) (string, error) {
	s, ok := ctx.Value(ctxKey{}).(*source)
	if !ok {
		return "", ErrNoRequest
	}
	return Derive(s.secret, s.rec, site, f)
}

// Derive returns the key Key and KeyAs derive for the call named site of
// the request whose record is rec, under secret, in the format f: what a
// test or an operator computes to find the downstream call of a given
// request.
func Derive(secret []byte, rec Record, site string, f Format) (string, error) {
	if site == "" {
		return "", errors.New("downstream: empty call-site name")
	}
	if f == nil {
		return "", errors.New("downstream: nil Format")
	}
	if len(secret) == 0 {
		secret = publicKey[:]
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	var n [8]byte
	for _, s := range [...]string{rec.Tenant, rec.Operation, rec.Key, site} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	var sum [sha256.Size]byte
	m.Sum(sum[:0])
	key, err := f(sum)
	if err != nil {
		return "", fmt.Errorf("downstream: call site %q: %w", site, err)
	}
	return key, nil
}

// label versions the derivation: changing what is hashed changes it.
const label = "idemgen downstream key v1\x00"

// publicKey is the HMAC key of a service without a secret (random bytes,
// fixed forever: changing them changes every key derived without a
// secret).
var publicKey = [32]byte{
	0x3e, 0x91, 0x0c, 0x5a, 0xd7, 0x24, 0x88, 0x6f, 0x1b, 0xe2, 0x47, 0x9d, 0x50, 0xc3, 0x7a, 0x16,
	0xa9, 0x0f, 0x64, 0xdb, 0x32, 0x85, 0xfe, 0x1c, 0x77, 0x4b, 0xe0, 0x29, 0x9a, 0x53, 0xc6, 0x08,
}

// A Format writes a derived key in the form a downstream accepts, from the
// 32 bytes of the derivation (uniformly distributed: keep as many as the
// form allows). UUID, UUIDv4, UUIDv7 and Opaque are the common ones; a
// service whose downstream wants another writes its own.
type Format func(sum [32]byte) (string, error)

// UUID writes the key as an RFC 9562 UUIDv8, the version of UUIDs whose
// bits are the application's (here 122 bits of the derivation): what an
// idemgen service of keyFormat uuid, Stripe and most APIs accept.
var UUID Format = func(sum [32]byte) (string, error) { return uuidOf(sum, 8), nil }

// UUIDv4 writes the key as a UUID of version 4 (random), for a downstream
// that accepts only those (keyFormat uuidv4): 122 bits of the derivation,
// as indistinguishable from random ones as the derivation is.
var UUIDv4 Format = func(sum [32]byte) (string, error) { return uuidOf(sum, 4), nil }

// UUIDv7 writes the key as a UUID of version 7, for a downstream that
// accepts only those (keyFormat uuidv7). Its 48-bit time field holds bits
// of the derivation, not a time (a key that is the same on every attempt
// cannot carry the time of one): a downstream that only checks the version
// accepts it; one that reads the time to bound a key's age does not.
var UUIDv7 Format = func(sum [32]byte) (string, error) { return uuidOf(sum, 7), nil }

// Opaque writes the key as prefix followed by the 32 bytes in unpadded
// base64url (43 characters of A-Z a-z 0-9 - _): for a downstream whose keys
// are opaque strings (Stripe-style, or an idemgen service of keyFormat
// opaque). prefix may be empty; it must be at most 64 visible ASCII
// characters.
func Opaque(prefix string) Format {
	return func(sum [32]byte) (string, error) {
		if len(prefix) > 64 {
			return "", fmt.Errorf("opaque prefix %q is longer than 64 bytes", prefix)
		}
		for i := 0; i < len(prefix); i++ {
			if prefix[i] < 0x21 || prefix[i] > 0x7e {
				return "", fmt.Errorf("opaque prefix %q: byte %d is not visible ASCII", prefix, i+1)
			}
		}
		return prefix + base64.RawURLEncoding.EncodeToString(sum[:]), nil
	}
}

// uuidOf is the first 16 bytes of sum as a UUID of the given version and
// the RFC 9562 variant, in its canonical lower-case form.
func uuidOf(sum [32]byte, version byte) string {
	var u uuid.UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | version<<4
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}
