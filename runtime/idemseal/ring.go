package idemseal

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// Ring is a fixed set of keys: one current key and any number of retired
// ones. It implements Keys.
type Ring struct {
	current Key
	byID    map[string]Key
	ids     []string // current first
}

var _ Keys = (*Ring)(nil)

// NewRing returns a ring sealing with current and opening with current and
// retired. Ids must be distinct.
func NewRing(current Key, retired ...Key) (*Ring, error) {
	r := &Ring{current: current, byID: map[string]Key{}}
	for _, k := range append([]Key{current}, retired...) {
		if err := k.Validate(); err != nil {
			return nil, err
		}
		if _, dup := r.byID[k.ID]; dup {
			return nil, fmt.Errorf("idemseal: key id %q appears twice", k.ID)
		}
		r.byID[k.ID] = Key{ID: k.ID, Secret: append([]byte(nil), k.Secret...)}
		r.ids = append(r.ids, k.ID)
	}
	r.current = r.byID[current.ID]
	return r, nil
}

// Current implements Keys.
func (r *Ring) Current(context.Context) (Key, error) { return r.current, nil }

// Lookup implements Keys.
func (r *Ring) Lookup(_ context.Context, id string) (Key, error) {
	k, ok := r.byID[id]
	if !ok {
		return Key{}, ErrUnknownKey
	}
	return k, nil
}

// IDs returns the ring's key ids, the current one first, the retired ones in
// the order they were given.
func (r *Ring) IDs() []string { return append([]string(nil), r.ids...) }

// ParseRing reads keys written as ID:BASE64 (standard base64 of the 32-byte
// secret), separated by commas, whitespace or newlines; the first is current,
// the others retired. Lines starting with # are comments. where names the
// source in errors (an environment variable, a file).
//
//	IDEM_SEAL_KEYS="2026-03:q7v…=,2026-01:Zr4…="
func ParseRing(where, s string) (*Ring, error) {
	var keys []Key
	sc := bufio.NewScanner(strings.NewReader(s))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for _, field := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			id, b64, ok := strings.Cut(field, ":")
			if !ok {
				return nil, fmt.Errorf("idemseal: %s line %d: %q is not ID:BASE64", where, line, redactField(field))
			}
			secret, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return nil, fmt.Errorf("idemseal: %s line %d: key %q: secret is not standard base64", where, line, id)
			}
			k := Key{ID: id, Secret: secret}
			if err := k.Validate(); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", where, line, err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("idemseal: %s holds no keys", where)
	}
	r, err := NewRing(keys[0], keys[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return r, nil
}

// redactField keeps what precedes a possible secret out of error messages.
func redactField(s string) string {
	if len(s) > 12 {
		return s[:4] + "…"
	}
	return s
}

// RingFromEnv parses the environment variable name with ParseRing. ok is
// false when the variable is unset or empty (no sealing configured).
func RingFromEnv(name string) (r *Ring, ok bool, err error) {
	v := os.Getenv(name)
	if strings.TrimSpace(v) == "" {
		return nil, false, nil
	}
	r, err = ParseRing("$"+name, v)
	return r, err == nil, err
}

// RingFromFile parses the file at path with ParseRing, one or more keys per
// line. The file holds secrets: keep it readable by the service alone.
func RingFromFile(path string) (*Ring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("idemseal: %w", err)
	}
	return ParseRing(path, string(b))
}
