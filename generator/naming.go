package generator

import (
	"go/token"
	"strings"
	"unicode"
)

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "http": "HTTP", "https": "HTTPS",
	"api": "API", "json": "JSON", "uuid": "UUID", "ip": "IP", "sql": "SQL", "html": "HTML",
	"tls": "TLS", "ttl": "TTL", "xml": "XML",
}

// splitWords splits an OpenAPI name into words at non-alphanumerics and at
// lower-to-upper case changes ("createPayment", "payment_id", "X-Request-ID").
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// goName turns an OpenAPI name into an exported Go identifier.
func goName(s string) string {
	var b strings.Builder
	for _, w := range splitWords(s) {
		if in, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(in)
			continue
		}
		rs := []rune(w)
		// keep all-caps words as written (e.g. "XML" handled above, "ABC" kept)
		b.WriteRune(unicode.ToUpper(rs[0]))
		b.WriteString(string(rs[1:]))
	}
	out := b.String()
	if out == "" {
		return "X"
	}
	if r := []rune(out)[0]; !unicode.IsLetter(r) {
		out = "X" + out
	}
	return out
}

// lowerName is goName with the first word lower-cased, for unexported names.
func lowerName(s string) string {
	n := goName(s)
	rs := []rune(n)
	i := 0
	for i < len(rs) && unicode.IsUpper(rs[i]) {
		i++
	}
	if i > 1 && i < len(rs) {
		i-- // "HTTPServer" -> "httpServer"
	}
	if i == 0 {
		i = 1
	}
	out := strings.ToLower(string(rs[:i])) + string(rs[i:])
	if token.IsKeyword(out) {
		out += "_"
	}
	return out
}

func isGoIdent(s string) bool { return token.IsIdentifier(s) }

// namespace hands out package-level Go identifiers and refuses a second use
// of the same one, naming both spec locations.
type namespace struct {
	owner map[string]string
	errs  *errList
	file  string
}

func newNamespace(file string, errs *errList, reserved ...string) *namespace {
	ns := &namespace{owner: map[string]string{}, errs: errs, file: file}
	for _, r := range reserved {
		ns.owner[r] = "idemgen (reserved)"
	}
	return ns
}

// claim records that name is generated for location; a clash is an error.
func (ns *namespace) claim(name, location string) bool {
	if prev, ok := ns.owner[name]; ok {
		ns.errs.addf("%s: Go identifier %s is generated for both %s and %s (set rename in the config)", ns.file, name, prev, location)
		return false
	}
	ns.owner[name] = location
	return true
}
