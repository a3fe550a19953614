package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// ErrInvalidJSON is wrapped by Fingerprint when a JSON body does not parse.
var ErrInvalidJSON = jsonkit.ErrInvalidJSON

// PathParam is one path parameter of a request, by name.
type PathParam struct {
	Name  string
	Value string
}

// FingerprintInput is what a request fingerprint covers.
type FingerprintInput struct {
	Method     string      // e.g. "POST"
	Pattern    string      // route template, e.g. "/payments/{id}/capture"
	PathParams []PathParam // in template order
	// RawQuery is the URL's query. It is canonicalised: parameters sorted by
	// name, values kept in the order given, percent-encoding normalised.
	RawQuery    string
	ContentType string // Content-Type header; only the media type and charset count
	Body        []byte
	// Exclude lists RFC 6901 JSON pointers removed from a JSON body before it
	// is hashed, applied in order.
	Exclude []string
}

// Fingerprint returns the SHA-256 fingerprint of a request: a length-prefixed
// encoding of method, route template, path parameters, canonical query, media
// type and body. JSON bodies (application/json and any +json media type) are
// canonicalised per RFC 8785 after the Exclude pointers are removed, so
// whitespace, member order and number spelling do not matter; other bodies are
// hashed as bytes. A JSON body that does not parse is an error wrapping
// ErrInvalidJSON.
func Fingerprint(in FingerprintInput) ([32]byte, error) {
	mediaType := canonicalMediaType(in.ContentType)
	body := in.Body
	// The set of JSON media types is part of format v1: the aliases
	// jsonkit.IsJSON also knows (text/json) have always been hashed as
	// bytes here.
	if len(body) > 0 && jsonkit.IsStandardJSON(mediaType) {
		var err error
		body, err = canonicalJSON(body, in.Exclude)
		if err != nil {
			return [32]byte{}, err
		}
	}
	h := sha256.New()
	var n [8]byte
	field := func(s []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	field([]byte("idem-fingerprint-v1"))
	field([]byte(in.Method))
	field([]byte(in.Pattern))
	binary.BigEndian.PutUint64(n[:], uint64(len(in.PathParams)))
	h.Write(n[:])
	for _, p := range in.PathParams {
		field([]byte(p.Name))
		field([]byte(p.Value))
	}
	field([]byte(canonicalQuery(in.RawQuery)))
	field([]byte(mediaType))
	field(body)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// FingerprintCanonical returns the SHA-256 fingerprint of a request from its
// canonical form (Prepared.Canonical): a length-prefixed encoding of a
// version tag, the method, the route template and canonical. It cannot
// collide with Fingerprint, whose version tag differs.
func FingerprintCanonical(method, pattern string, canonical []byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, s := range [][]byte{[]byte("idem-fingerprint-v2"), []byte(method), []byte(pattern), canonical} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// requestFingerprint hashes prepare's canonical request, or the raw request
// when prepare gave none (see Prepared.Canonical).
func requestFingerprint(r *http.Request, op *Operation, body, canonical []byte) ([32]byte, error) {
	if canonical != nil {
		return FingerprintCanonical(r.Method, op.Pattern, canonical), nil
	}
	in := FingerprintInput{
		Method:      r.Method,
		Pattern:     op.Pattern,
		RawQuery:    r.URL.RawQuery,
		ContentType: r.Header.Get("Content-Type"),
		Body:        body,
		Exclude:     op.Policy.FingerprintExclude,
	}
	for _, name := range op.PathParams {
		in.PathParams = append(in.PathParams, PathParam{Name: name, Value: r.PathValue(name)})
	}
	fp, err := Fingerprint(in)
	if errors.Is(err, ErrInvalidJSON) {
		return fp, InvalidRequest("body", err)
	}
	return fp, err
}

func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		// Not decodable: hash it as given, marked so it cannot collide with
		// a canonical encoding (which never contains a NUL).
		return "\x00raw\x00" + raw
	}
	return v.Encode() // sorted by key
}

// canonicalMediaType is the media type as format v1 records it: the
// essence and the charset parameter (which changes what the bytes mean),
// both lower-cased; one that does not parse is kept as sent, marked.
func canonicalMediaType(ct string) string {
	mt, params, err := jsonkit.ParseMediaType(ct)
	if err != nil {
		return "\x00raw\x00" + strings.ToLower(strings.TrimSpace(ct))
	}
	if cs, ok := params["charset"]; ok {
		return mt + ";charset=" + strings.ToLower(cs)
	}
	return mt
}

// canonicalJSON is the body as format v1 hashes it: RFC 8785 after the
// exclusions are removed.
func canonicalJSON(body []byte, exclude []string) ([]byte, error) {
	toks := make([][]string, len(exclude))
	for i, p := range exclude {
		var err error
		if toks[i], err = jsonkit.ParsePointer(p); err != nil {
			return nil, err
		}
	}
	return jsonkit.Canonical(body, toks)
}
