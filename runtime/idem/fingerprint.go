package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// ErrInvalidJSON is wrapped by Fingerprint when a JSON body does not parse.
var ErrInvalidJSON = errors.New("body is not valid JSON")

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
	if len(body) > 0 && isJSON(mediaType) {
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

// canonicalMediaType lower-cases the media type and keeps only the charset
// parameter, which changes what the bytes mean.
func canonicalMediaType(ct string) string {
	if strings.TrimSpace(ct) == "" {
		return ""
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "\x00raw\x00" + strings.ToLower(strings.TrimSpace(ct))
	}
	if cs, ok := params["charset"]; ok {
		return mt + ";charset=" + strings.ToLower(cs)
	}
	return mt
}

func isJSON(mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func canonicalJSON(body []byte, exclude []string) ([]byte, error) {
	// jcs validates (UTF-8, duplicate members, nesting depth) and canonicalises.
	canon, err := jcs.Transform(body)
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
	for _, p := range exclude {
		doc, err = removePointer(doc, p)
		if err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return jcs.Transform(bytes.TrimRight(buf.Bytes(), "\n"))
}

// parsePointer splits an RFC 6901 JSON pointer into its unescaped reference
// tokens. The empty pointer (the whole document) is refused: excluding the
// whole body is never what a policy means.
func parsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q must start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 >= len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("JSON pointer %q: ~ must be followed by 0 or 1", p)
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// removePointer removes the value p points at from doc, which is a decoded
// JSON value. A pointer to nothing is not an error: the member is optional.
func removePointer(doc any, p string) (any, error) {
	toks, err := parsePointer(p)
	if err != nil {
		return nil, err
	}
	parent := doc
	for _, t := range toks[:len(toks)-1] {
		next, ok := child(parent, t)
		if !ok {
			return doc, nil
		}
		parent = next
	}
	last := toks[len(toks)-1]
	switch c := parent.(type) {
	case map[string]any:
		delete(c, last)
	case []any:
		i, ok := arrayIndex(last, len(c))
		if !ok {
			return doc, nil
		}
		removed := append(c[:i:i], c[i+1:]...)
		// The slice header lives in its parent; write it back.
		return replaceAt(doc, toks[:len(toks)-1], removed), nil
	}
	return doc, nil
}

func child(v any, tok string) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		x, ok := c[tok]
		return x, ok
	case []any:
		i, ok := arrayIndex(tok, len(c))
		if !ok {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// replaceAt sets the value at toks (which exists) to v and returns the document.
func replaceAt(doc any, toks []string, v any) any {
	if len(toks) == 0 {
		return v
	}
	parent := doc
	for _, t := range toks[:len(toks)-1] {
		parent, _ = child(parent, t)
	}
	last := toks[len(toks)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		i, _ := arrayIndex(last, len(c))
		c[i] = v
	}
	return doc
}

// arrayIndex parses an RFC 6901 array index: 0, or digits without a leading zero.
func arrayIndex(tok string, n int) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= n {
		return 0, false
	}
	return i, true
}
