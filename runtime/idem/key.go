package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// KeyFormat is the accepted shape of an idempotency key.
type KeyFormat string

const (
	KeyFormatUUID   KeyFormat = "uuid"   // RFC 9562, any version, canonical 8-4-4-4-12 form
	KeyFormatUUIDv4 KeyFormat = "uuidv4" // RFC 9562 version 4
	KeyFormatUUIDv7 KeyFormat = "uuidv7" // RFC 9562 version 7
	KeyFormatOpaque KeyFormat = "opaque" // 1..255 visible ASCII characters
	// KeyFormatPrintable is Stripe's rule: 1..255 characters of any script,
	// spaces included but not only spaces, none a control, format or other
	// default-ignorable (invisible) character (see ParseKey); keys compare
	// byte for byte, unnormalised.
	KeyFormatPrintable KeyFormat = "printable"
)

// keyFormats lists every KeyFormat (PolicyEnums' keyFormat). A format is
// declared above, listed here and parsed by parseKey: a new one is added
// in this file, in x-idempotent's JSON Schema
// (schemas/x-idempotent.schema.json) and in the generator's table of
// runtime constants (generator's TestPolicyRulesAgree fails until both
// list it); idemclient's and conformance's tests fail until their own
// switches on a key format handle it.
var keyFormats = []KeyFormat{KeyFormatUUID, KeyFormatUUIDv4, KeyFormatUUIDv7, KeyFormatOpaque, KeyFormatPrintable}

// ParseKey validates one idempotency key header value against format and
// returns the key normalised (UUIDs lower-cased). The value may be bare or an
// RFC 8941 sf-string ("..." with \" and \\ escapes), as the default and ietf
// profiles read keys; surrounding spaces and tabs are ignored. Errors wrap
// ErrKeyMalformed. Policy.ParseKey reads a key as an operation's profile says.
func ParseKey(value string, format KeyFormat) (string, error) {
	return parseKey(value, format, true)
}

// ParseKey validates one idempotency key header value as p says: its
// KeyFormat, read with its profile's syntax. Under ProfileStripe a value in
// double quotes is taken as it is, quotes included (Stripe's keys are opaque
// strings); the other profiles read it as an RFC 8941 sf-string.
func (p *Policy) ParseKey(value string) (string, error) {
	return parseKey(value, p.KeyFormat, p.Profile != ProfileStripe)
}

// DefaultKeyFormat is the key format of an operation of profile p that sets
// none: printable for ProfileStripe, whose SDKs send keys such as
// "1732212345678901234_x7Fq2b", else uuid.
func (p Profile) DefaultKeyFormat() KeyFormat {
	if p == ProfileStripe {
		return KeyFormatPrintable
	}
	return KeyFormatUUID
}

// maxKeyChars bounds every key format (the records' CHECK constraint too).
const maxKeyChars = 255

func parseKey(value string, format KeyFormat, sfString bool) (string, error) {
	v := strings.Trim(value, " \t")
	if v == "" {
		return "", fmt.Errorf("%w: empty value", ErrKeyMalformed)
	}
	if sfString && v[0] == '"' {
		s, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		v = s
	}
	switch format {
	case KeyFormatUUID, KeyFormatUUIDv4, KeyFormatUUIDv7:
		return parseUUIDKey(v, format)
	case KeyFormatOpaque:
		if len(v) > maxKeyChars {
			return "", fmt.Errorf("%w: longer than 255 characters", ErrKeyMalformed)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x21 || v[i] > 0x7e {
				return "", fmt.Errorf("%w: character %d is not visible ASCII", ErrKeyMalformed, i+1)
			}
		}
		return v, nil
	case KeyFormatPrintable:
		if !utf8.ValidString(v) {
			return "", fmt.Errorf("%w: not UTF-8", ErrKeyMalformed)
		}
		n, blank := 0, true
		for _, r := range v {
			n++
			switch {
			case !unicode.IsGraphic(r):
				return "", fmt.Errorf("%w: character %d (%U) is a control or format character", ErrKeyMalformed, n, r)
			case invisible(r):
				return "", fmt.Errorf("%w: character %d (%U) is default-ignorable: it shows as nothing", ErrKeyMalformed, n, r)
			}
			blank = blank && unicode.IsSpace(r)
		}
		if n > maxKeyChars {
			return "", fmt.Errorf("%w: longer than 255 characters", ErrKeyMalformed)
		}
		if blank {
			return "", fmt.Errorf("%w: only blank characters", ErrKeyMalformed)
		}
		return v, nil
	default:
		return "", fmt.Errorf("idem: unknown key format %q", format)
	}
}

// invisible reports whether r is a Default_Ignorable_Code_Point that
// unicode.IsGraphic lets through (the others are format characters, Cf,
// which it refuses): a combining grapheme joiner, a variation selector, a
// Hangul filler. Such a character shows as nothing, so two keys that look
// the same would be two records.
func invisible(r rune) bool {
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)
}

// parseSFString decodes an RFC 8941 sf-string: DQUOTE *chr DQUOTE, where chr
// is printable ASCII (0x20-0x7E) other than DQUOTE and backslash, or one of
// them escaped with a backslash.
func parseSFString(v string) (string, error) {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", fmt.Errorf("%w: unterminated quoted string", ErrKeyMalformed)
	}
	var b strings.Builder
	in := v[1 : len(v)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 >= len(in) || (in[i+1] != '"' && in[i+1] != '\\') {
				return "", fmt.Errorf("%w: bad escape in quoted string", ErrKeyMalformed)
			}
			i++
			b.WriteByte(in[i])
		case c == '"':
			return "", fmt.Errorf("%w: unescaped quote in quoted string", ErrKeyMalformed)
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: character %d of the quoted string is not printable ASCII", ErrKeyMalformed, i+2)
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty quoted string", ErrKeyMalformed)
	}
	return b.String(), nil
}

var errNotCanonicalUUID = errors.New("not a UUID in 8-4-4-4-12 form")

func parseUUIDKey(v string, format KeyFormat) (string, error) {
	// uuid.Parse also accepts braces, urn:uuid: and 32 bare hex digits; keys
	// must be the canonical 36-character form.
	if len(v) != 36 || v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' {
		return "", fmt.Errorf("%w: %v", ErrKeyMalformed, errNotCanonicalUUID)
	}
	u, err := uuid.Parse(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKeyMalformed, errNotCanonicalUUID)
	}
	// The RFC 9562 variant excludes the nil and max UUIDs as well.
	if u.Variant() != uuid.RFC4122 {
		return "", fmt.Errorf("%w: not an RFC 9562 UUID (variant)", ErrKeyMalformed)
	}
	ver := int(u.Version())
	switch format {
	case KeyFormatUUIDv4:
		if ver != 4 {
			return "", fmt.Errorf("%w: UUID version %d, want 4", ErrKeyMalformed, ver)
		}
	case KeyFormatUUIDv7:
		if ver != 7 {
			return "", fmt.Errorf("%w: UUID version %d, want 7", ErrKeyMalformed, ver)
		}
	default:
		if ver < 1 || ver > 8 {
			return "", fmt.Errorf("%w: UUID version %d is not defined by RFC 9562", ErrKeyMalformed, ver)
		}
	}
	return strings.ToLower(v), nil
}

// Hash identifies k's record without revealing the key: the first 16 hex
// digits of SHA-256(tenant NUL operation NUL key), which are the first 8
// bytes of the record's id (recordID). Logs, audit records and trace spans
// carry it instead of the key; `idemgen records get` prints it, and
// `idemgen records list -hash` finds the record by it (a range of the
// primary key). None of the three parts can contain NUL (PostgreSQL text
// cannot), so distinct records never share an encoding. A UUID key's hash
// cannot be reversed; an opaque key that is easy to guess (an order
// number) can be recovered by trying candidates, as from any unkeyed hash.
func (k Key) Hash() string {
	sum := k.sum()
	return hex.EncodeToString(sum[:8])
}

// sum is SHA-256(tenant NUL operation NUL key): the record's id (its first
// half), the key's hash in logs (its first quarter) and its cache key.
func (k Key) sum() [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(k.Tenant))
	h.Write([]byte{0})
	h.Write([]byte(k.Operation))
	h.Write([]byte{0})
	h.Write([]byte(k.Value))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// recordID is the primary key of k's record: the first 16 bytes of sum, as
// the SQL function idem_record_id computes them (migration 0005), so that
// every statement finds a record by one narrow key. Sixteen bytes make an
// accidental collision negligible (about 1 in 10^19 with ten billion
// records at once), and a deliberate one of another tenant's key takes
// 2^128 hashes; two keys that do share an id are told apart by the
// readable tenant, operation and key each row keeps, and refused, never
// merged (docs/design.md).
func (k Key) recordID() pgtype.UUID {
	sum := k.sum()
	var id pgtype.UUID
	copy(id.Bytes[:], sum[:16])
	id.Valid = true
	return id
}
