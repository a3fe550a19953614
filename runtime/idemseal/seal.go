// Package idemseal encrypts stored idempotency data at rest: AES-256-GCM
// with random nonces, the id of the key that sealed a value written in the
// value itself, and additional data that binds each value to the record it
// belongs to, so a value copied into another record fails to open.
//
// Keys come from the service through the Keys interface; Ring is a fixed set
// of keys read from an environment variable or a file. Rotation: put a new
// key first (it seals everything written from then on) and keep the old ones
// as retired keys (they still open what they sealed) until no record uses
// them; `idemgen records reseal` re-seals records under the current key.
//
// A sealed value is
//
//	0x00 'I' 'S' 0x01 | len(id) | id | nonce (12 bytes) | ciphertext | tag (16 bytes)
//
// so sealing costs 33 bytes plus the key id per value. Stored response
// bodies never start with a NUL byte followed by "IS" in practice; a value
// that does not start with the prefix is not sealed (see IsSealed).
package idemseal

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// KeySize is the size of an AES-256 key in bytes.
const KeySize = 32

// magic starts every sealed value: a NUL byte, "IS", format version 1.
var magic = []byte{0x00, 'I', 'S', 0x01}

// overhead is what NewGCMWithRandomNonce adds: a 12-byte nonce and a 16-byte tag.
const overhead = 12 + 16

// ErrUnknownKey is returned (wrapped) when a value names a key that Keys does
// not hold, e.g. a retired key that was dropped too early.
var ErrUnknownKey = errors.New("idemseal: unknown key id")

// ErrNotSealed is returned by Open for a value without the sealed prefix.
var ErrNotSealed = errors.New("idemseal: value is not sealed")

// ErrOpen is returned (wrapped) when authentication fails: the value was
// altered, sealed under other additional data (copied from another record),
// or the key with its id has another secret than the one that sealed it.
var ErrOpen = errors.New("idemseal: value does not open (altered, moved from another record, or wrong key)")

// Key is one AES-256 key.
type Key struct {
	// ID names the key in every value it seals: 1 to 64 characters out of
	// A-Z a-z 0-9 . _ -. Never reuse an id for another secret.
	ID string
	// Secret is the key, KeySize bytes.
	Secret []byte
}

// Validate reports what is wrong with k.
func (k Key) Validate() error {
	if err := validID(k.ID); err != nil {
		return err
	}
	if len(k.Secret) != KeySize {
		return fmt.Errorf("idemseal: key %q: secret is %d bytes, want %d (AES-256)", k.ID, len(k.Secret), KeySize)
	}
	return nil
}

func validID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("idemseal: key id %q: want 1 to 64 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("idemseal: key id %q: character %q at %d is not one of A-Z a-z 0-9 . _ -", id, c, i)
		}
	}
	return nil
}

// Keys supplies keys to a Sealer. Implementations must be safe for
// concurrent use; a Sealer calls them on every Seal and Open, so they should
// answer from memory (cache what a key manager returns).
type Keys interface {
	// Current returns the key new values are sealed with.
	Current(ctx context.Context) (Key, error)
	// Lookup returns the key named id, current or retired; an error wrapping
	// ErrUnknownKey when there is none.
	Lookup(ctx context.Context, id string) (Key, error)
}

// Sealer seals and opens values with AES-256-GCM. It is safe for concurrent
// use.
type Sealer struct {
	keys  Keys
	aeads sync.Map // key id -> *keyAEAD
}

type keyAEAD struct {
	secret []byte
	aead   cipher.AEAD
}

// New returns a Sealer over keys.
func New(keys Keys) *Sealer { return &Sealer{keys: keys} }

// aead returns the AEAD of k, cached by id (and rebuilt if the secret under
// an id changes).
func (s *Sealer) aead(k Key) (cipher.AEAD, error) {
	if v, ok := s.aeads.Load(k.ID); ok {
		if ka := v.(*keyAEAD); bytes.Equal(ka.secret, k.Secret) {
			return ka.aead, nil
		}
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k.Secret)
	if err != nil {
		return nil, fmt.Errorf("idemseal: key %q: %w", k.ID, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("idemseal: key %q: %w", k.ID, err)
	}
	s.aeads.Store(k.ID, &keyAEAD{secret: bytes.Clone(k.Secret), aead: aead})
	return aead, nil
}

// Seal encrypts plaintext under the current key, authenticating aad (which
// is not stored: Open needs the same aad).
func (s *Sealer) Seal(ctx context.Context, plaintext, aad []byte) ([]byte, error) {
	k, err := s.keys.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("idemseal: current key: %w", err)
	}
	aead, err := s.aead(k)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(magic)+1+len(k.ID)+overhead+len(plaintext))
	out = append(out, magic...)
	out = append(out, byte(len(k.ID)))
	out = append(out, k.ID...)
	return aead.Seal(out, nil, plaintext, s.additional(k.ID, aad)), nil
}

// additional is what GCM authenticates: the key id (so a value's header
// cannot be edited to name another key) and the caller's aad.
func (s *Sealer) additional(id string, aad []byte) []byte {
	b := make([]byte, 0, 8+len(id)+len(aad))
	b = binary.BigEndian.AppendUint32(b, uint32(len(id)))
	b = append(b, id...)
	return append(b, aad...)
}

// Open decrypts a value sealed by Seal with the same aad, under whichever
// key (current or retired) its header names.
func (s *Sealer) Open(ctx context.Context, sealed, aad []byte) ([]byte, error) {
	id, body, err := split(sealed)
	if err != nil {
		return nil, err
	}
	k, err := s.keys.Lookup(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("idemseal: key %q: %w", id, err)
	}
	if k.ID != id {
		return nil, fmt.Errorf("idemseal: Keys.Lookup(%q) returned key %q", id, k.ID)
	}
	aead, err := s.aead(k)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, nil, body, s.additional(id, aad))
	if err != nil {
		return nil, fmt.Errorf("%w (key %q)", ErrOpen, id)
	}
	return plain, nil
}

// Current returns the id of the key Seal uses now.
func (s *Sealer) Current(ctx context.Context) (string, error) {
	k, err := s.keys.Current(ctx)
	if err != nil {
		return "", fmt.Errorf("idemseal: current key: %w", err)
	}
	return k.ID, nil
}

// IsSealed reports whether v starts like a sealed value.
func IsSealed(v []byte) bool { return bytes.HasPrefix(v, magic) }

// KeyID returns the id of the key that sealed v; false when v is not a
// well-formed sealed value.
func KeyID(v []byte) (string, bool) {
	id, _, err := split(v)
	return id, err == nil
}

func split(v []byte) (id string, body []byte, err error) {
	if !IsSealed(v) {
		return "", nil, ErrNotSealed
	}
	rest := v[len(magic):]
	if len(rest) < 1 || len(rest) < 1+int(rest[0])+overhead || rest[0] == 0 {
		return "", nil, errors.New("idemseal: sealed value is truncated")
	}
	n := int(rest[0])
	return string(rest[1 : 1+n]), rest[1+n:], nil
}

// IsSealed reports whether v is a sealed value (idem.Sealer).
func (s *Sealer) IsSealed(v []byte) bool { return IsSealed(v) }
