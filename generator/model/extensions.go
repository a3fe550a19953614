package model

import (
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/internal/suggest"
)

// readExtensions are the specification extensions idemgen reads, at the
// document root and on operations (nowhere else).
var readExtensions = []string{"x-idempotent", limitsExt}

// misspelt returns the extension idemgen reads that key is a near miss
// of: the same but for case (X-Idempotent), or within two edits
// (x-idempotant, x-idempotnet, idempotent); "" for none. Two edits, not
// nearest's third of the length: x-request-id is no x-request-limits.
func misspelt(key string) string {
	if slices.Contains(readExtensions, key) {
		return ""
	}
	return suggest.NearestWithin(key, readExtensions, 2)
}

// misspeltExtensions reports the near misses among ext, the extensions
// (kin-openapi's name for the keys it does not know) of an operation or of
// the document root. Misspelt, an extension is dropped in silence, and
// with it what it says: an operation would run in atomic mode when its
// x-idempotant says lease. So it is an error, where is the prefix of its
// messages.
func (b *builder) misspeltExtensions(where string, ext map[string]any) {
	for _, k := range sortedKeys(ext) {
		if n := misspelt(k); n != "" {
			b.errs.addf("%s%s: not an extension idemgen reads (did you mean %s?)", where, k, n)
		}
	}
}

// pathItemExtensions reports an extension idemgen reads, or a near miss of
// one, on a path item, where idemgen does not read it.
func (b *builder) pathItemExtensions(path string, item *openapi3.PathItem) {
	for _, k := range sortedKeys(item.Extensions) {
		n := misspelt(k)
		if slices.Contains(readExtensions, k) {
			n = k
		}
		if n != "" {
			b.errs.addf("%s: path %q: %s: idemgen reads %s on the operations and at the document root, not on a path item", b.file, path, k, n)
		}
	}
}

// rootExtensions reports the near misses among the document root's
// extensions.
func (b *builder) rootExtensions(doc *openapi3.T) {
	b.misspeltExtensions(strings.TrimSuffix(b.file, ": ")+": ", doc.Extensions)
	for _, path := range doc.Paths.InMatchingOrder() {
		if item := doc.Paths.Value(path); item != nil {
			b.pathItemExtensions(path, item)
		}
	}
}
