// Package diag holds what a generation run reports beside its files: the
// warnings about what it worked around (Warning, grouped by WarningKind for
// the command), and SpecError, every problem of a spec that does not
// generate, located. The loader, the model's builder, the emitters and the
// runner in package generator all report through it.
package diag

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// WarningKind says what a warning is about. The command prints warnings
// grouped by kind (WarningLines), and -strict fails on the kinds that mean
// a request the spec allows may be refused or a type is not the one the
// spec says (Strict).
type WarningKind int

const (
	// WarnSpec is a problem of the spec generation works around without
	// changing what is accepted or how it is typed (an empty
	// info.version, what kin-openapi's validation finds, a content key
	// that is not a media type).
	WarnSpec WarningKind = iota
	// WarnNameYields is a name idemgen derives after an operation (its
	// request or response type) numbered because a schema of the spec has
	// it: the user's name wins, as docs/generate.md says. Printed only
	// when asked (-v).
	WarnNameYields
	// WarnNameClash is two things of the spec that would get one Go name:
	// the later is numbered, and renaming either in the config chooses.
	WarnNameClash
	// WarnRefused is requests the spec allows that the generated server
	// may refuse: a security scheme that is not defined (401), a media
	// type it cannot read (415), keys a schema refuses, a discriminator
	// value that names no member, routes under another base path.
	WarnRefused
	// WarnNotIdempotent is a POST or PATCH that runs outside the
	// idempotency engine because nothing annotates it.
	WarnNotIdempotent
	// WarnTyped is a value typed or validated other than the spec says: a
	// keyword or pattern that is not enforced, content read as JSON, a
	// parameter without a field, a header the engine does not replay.
	WarnTyped
	// WarnTemplates is a user template that no longer gets idemgen's
	// fixes.
	WarnTemplates
	// WarnWebhooks is a webhook generated in part, or not at all.
	WarnWebhooks
)

// kindNames name the kinds in the summary, in the order it prints them.
var kindNames = map[WarningKind]string{
	WarnNotIdempotent: "operations not idempotent",
	WarnRefused:       "requests the spec allows that may be refused",
	WarnTyped:         "values typed or validated other than the spec says",
	WarnTemplates:     "templates that no longer get idemgen's fixes",
	WarnNameClash:     "Go names numbered",
	WarnWebhooks:      "webhooks left out in part or whole",
	WarnSpec:          "spec problems worked around",
	WarnNameYields:    "request and response types numbered because a schema has their name",
}

var kindOrder = []WarningKind{WarnNotIdempotent, WarnRefused, WarnTyped, WarnTemplates, WarnNameClash, WarnWebhooks, WarnSpec, WarnNameYields}

func (k WarningKind) String() string { return kindNames[k] }

// Strict reports whether -strict fails on a warning of kind k: a request
// may be refused, an operation runs outside the engine, a value or a name
// is not what the spec says, a template misses fixes.
func (k WarningKind) Strict() bool {
	switch k {
	case WarnSpec, WarnNameYields, WarnWebhooks:
		return false
	}
	return true
}

// shown reports whether WarningLines prints warnings of kind k without
// verbose.
func (k WarningKind) shown() bool { return k != WarnNameYields }

// examplesPerKind is how many warnings of a kind WarningLines prints
// without verbose; a kind with one more than that is printed whole.
const examplesPerKind = 3

// WarningLines is what the command prints of warnings ws, each line
// starting with "warning: " or "note: ". With verbose, every warning, one
// a line. Otherwise grouped by kind: a kind of a few warnings is printed
// whole, a larger one as a count and a few examples, indented, and
// WarnNameYields as one note with the count.
func WarningLines(ws []Warning, verbose bool) []string {
	if verbose {
		out := make([]string, len(ws))
		for i, w := range ws {
			out[i] = "warning: " + w.String()
		}
		return out
	}
	byKind := map[WarningKind][]Warning{}
	for _, w := range ws {
		byKind[w.Kind] = append(byKind[w.Kind], w)
	}
	var out []string
	for _, k := range kindOrder {
		list := byKind[k]
		sort.SliceStable(list, func(i, j int) bool { return list[i].String() < list[j].String() })
		switch {
		case len(list) == 0:
		case !k.shown():
			out = append(out, fmt.Sprintf("note: %d %s, as documented (-v lists them)", len(list), k))
		case len(list) <= examplesPerKind+1:
			for _, w := range list {
				out = append(out, "warning: "+w.String())
			}
		default:
			out = append(out, fmt.Sprintf("warning: %d %s (-v lists them all), e.g.:", len(list), k))
			for _, w := range examples(list) {
				out = append(out, "warning:   "+w.String())
			}
		}
	}
	return out
}

// examples picks examplesPerKind warnings of list, the first of their
// message's shape each where the shapes differ (a message up to its first
// digit or quote), so that the examples are not three of one thing.
func examples(list []Warning) []Warning {
	var out []Warning
	seen := map[string]bool{}
	for pass := 0; pass < 2 && len(out) < examplesPerKind; pass++ {
		for _, w := range list {
			shape := w.Message
			if i := strings.IndexAny(shape, "0123456789\"#"); i >= 0 {
				shape = shape[:i]
			}
			if pass == 0 && seen[shape] || pass == 1 && containsWarning(out, w) {
				continue
			}
			seen[shape] = true
			out = append(out, w)
			if len(out) == examplesPerKind {
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func containsWarning(ws []Warning, w Warning) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// StrictWarnings returns the warnings of ws that -strict fails on.
func StrictWarnings(ws []Warning) []Warning {
	var out []Warning
	for _, w := range ws {
		if w.Kind.Strict() {
			out = append(out, w)
		}
	}
	return out
}

// Warning is a problem in the spec that generation worked around.
type Warning struct {
	Where   string // spec file and, when known, operation or component
	Message string
	Kind    WarningKind // what it is about: how it is grouped, whether -strict fails on it
}

func (w Warning) String() string {
	if w.Where == "" {
		return w.Message
	}
	return w.Where + ": " + w.Message
}

// ErrSpec is returned (wrapped) when the spec holds errors; the error text
// lists every one of them, sorted, one per line.
var ErrSpec = errors.New("invalid spec")

// SpecError lists every problem found in one spec.
type SpecError struct {
	Problems []string // sorted, each located
}

func (e *SpecError) Error() string { return strings.Join(e.Problems, "\n") }
func (e *SpecError) Unwrap() error { return ErrSpec }

var problemLine = regexp.MustCompile(`^([^:]*): line (\d+): `)

// LocatedLess orders located messages by file, then line (those without
// one last), then text.
func LocatedLess(a, b string) bool {
	fa, la := messageLine(a)
	fb, lb := messageLine(b)
	switch {
	case fa != fb:
		return a < b
	case la != lb:
		return la < lb
	}
	return a < b
}

// messageLine is the file and line a located message starts with; the
// line is math.MaxInt when it has none.
func messageLine(msg string) (file string, line int) {
	if m := problemLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[2])
		return m[1], n
	}
	file, _, _ = strings.Cut(msg, ": ")
	return file, math.MaxInt
}
