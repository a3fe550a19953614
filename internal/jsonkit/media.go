package jsonkit

import (
	"mime"
	"strings"
)

// ParseMediaType parses a Content-Type header value (RFC 9110 section 8.3)
// with mime.ParseMediaType: its essence (type/subtype, lower-cased) and its
// parameters (names lower-cased). A blank value is "" and no error. A value
// that does not parse is an error, and the essence is the lower-cased text
// before its first ; so that a caller that needs only the essence can go on.
func ParseMediaType(ct string) (essence string, params map[string]string, err error) {
	if strings.TrimSpace(ct) == "" {
		return "", nil, nil
	}
	if plainEssence(ct) {
		return ct, nil, nil // what mime.ParseMediaType returns, without its work
	}
	essence, params, err = mime.ParseMediaType(ct)
	if err != nil {
		essence, _, _ = strings.Cut(ct, ";")
		essence = strings.ToLower(strings.TrimSpace(essence))
	}
	return essence, params, err
}

// plainEssence reports whether ct is a media type without parameters, in
// lower case, written as mime.ParseMediaType returns it (the usual
// "application/json"): lower-case token characters around one slash.
func plainEssence(ct string) bool {
	slash := strings.IndexByte(ct, '/')
	if slash <= 0 || slash == len(ct)-1 {
		return false
	}
	for i := 0; i < len(ct); i++ {
		c := ct[i]
		switch {
		case i == slash, 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// MediaType returns the essence of a Content-Type header value: type and
// subtype, lower-cased, without parameters; "" when there is none.
func MediaType(ct string) string {
	mt, _, _ := ParseMediaType(ct)
	return mt
}

// IsJSON reports whether a body of media type mt (an essence, or a
// Content-Type value: parameters are ignored) is JSON: application/json,
// any structured syntax suffix +json (RFC 6839: application/problem+json,
// application/merge-patch+json, application/vnd.api+json), and the
// unregistered aliases older APIs still declare, a subtype json or x-json
// (text/json, application/x-json). A range is not JSON: */* and
// application/* say what a server takes or may send, not what a body is.
func IsJSON(mt string) bool {
	mt = essenceOf(mt)
	_, sub, _ := strings.Cut(mt, "/")
	return isStandardJSON(mt) || sub == "json" || sub == "x-json"
}

// IsStandardJSON is IsJSON without the unregistered aliases: only
// application/json and the +json suffix.
func IsStandardJSON(mt string) bool { return isStandardJSON(essenceOf(mt)) }

func isStandardJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// essenceOf is mt without parameters, lower-cased; white space is left as
// it is (an essence never holds any).
func essenceOf(mt string) string {
	mt, _, _ = strings.Cut(mt, ";")
	return strings.ToLower(mt)
}

// IsRange reports whether a declared media type is a range: */* or type/*.
func IsRange(declared string) bool { return strings.HasSuffix(declared, "/*") }

// MatchRange reports how well a declared media type or range (RFC 9110
// section 12.5.1) matches the essence mt: 3 when they are equal, 2 when
// declared is mt's type/*, 1 when it is */*, 0 when it does not match.
// Both are lower-cased essences.
func MatchRange(declared, mt string) int {
	switch {
	case declared == mt:
		return 3
	case strings.HasSuffix(declared, "/*") && declared != "*/*" && strings.HasPrefix(mt, declared[:len(declared)-1]):
		return 2
	case declared == "*/*":
		return 1
	}
	return 0
}
