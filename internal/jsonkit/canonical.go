package jsonkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
)

// ErrInvalidJSON is wrapped by Canonical when the text is not JSON.
var ErrInvalidJSON = errors.New("body is not valid JSON")

// Canonical returns the RFC 8785 (JCS) canonical form of a JSON text:
// members sorted by their UTF-16 code units, no white space, strings in
// their minimal escaping, numbers as ECMAScript prints the nearest double.
// The members and items at exclude (reference tokens, from ParsePointer)
// are removed first, in order; one that names nothing removes nothing.
// A text that is not JSON, holds invalid UTF-8 or a duplicate member name
// is an error wrapping ErrInvalidJSON.
//
// The canonicaliser is github.com/gowebpki/jcs, kept rather than written
// again: it implements RFC 8785 exactly (its number formatting is checked
// against the RFC's test vectors), parses strictly by itself (encoding/json
// would accept invalid UTF-8 and duplicate names), and has no dependencies
// at run time. It is the maintained, released fork of the RFC author's Go
// code (github.com/cyberphone/json-canonicalization, which has no Go module
// releases). Format v1 fingerprints (idem.Fingerprint) are its bytes, so it
// cannot be swapped without a new format version.
//
// Note what RFC 8785 does to integers past 2^53: they are rounded to the
// nearest double (9007199254740993 is 9007199254740992). Generated
// decoders therefore fingerprint their own value tree instead
// (idemimpl.AppendJSON, format v2), which keeps integers an int64 holds
// exactly and agrees with this function everywhere else.
func Canonical(text []byte, exclude [][]string) ([]byte, error) {
	canon, err := jcs.Transform(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if len(exclude) == 0 {
		return canon, nil
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber() // keep numbers as jcs wrote them
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	for _, toks := range exclude {
		doc = Remove(doc, toks)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return jcs.Transform(bytes.TrimRight(buf.Bytes(), "\n"))
}
