package idemimpl

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Limits bounds what the decoders build from one request's input, so that
// what a request costs in memory and stack is a small multiple of its size,
// whatever it holds. Each limit is enforced while the input is parsed,
// before the value it would add is built: a name nested a million levels
// deep is refused at the level past MaxDepth, not after. Input past a limit
// is a 400 naming the limit and where (an idemproblem.Violation whose Rule is the
// limit's name: maxDepth, maxFields, maxNameLength, maxValues) and leaves no
// idempotency record.
//
// The generator fills an operation's Limits from its x-request-limits
// annotation (and the document root's); the zero value of a field is its
// default (DefaultLimits).
type Limits struct {
	// MaxDepth bounds the nesting of a decoded body or parameter: the
	// arrays and objects of JSON, and the levels of a form, multipart or
	// deepObject name (deep[a][b]=1 in a form body is three: the body, deep
	// and a).
	MaxDepth int
	// MaxFields bounds the name=value pairs of a form body and of the query
	// string, the parts of a multipart body and the cookies of a request.
	MaxFields int
	// MaxNameLength bounds one form, multipart or deepObject name, in bytes
	// once percent-decoded.
	MaxNameLength int
	// MaxValues bounds the values (objects, arrays and scalars) of one
	// decoded body or parameter.
	MaxValues int
}

// DefaultLimits are the limits of an operation without x-request-limits.
func DefaultLimits() Limits {
	return Limits{MaxDepth: 32, MaxFields: 1000, MaxNameLength: 1024, MaxValues: 10000}
}

// LimitRange is the range a limit may be set to, inclusive.
type LimitRange struct{ Min, Max int }

// LimitRanges gives the allowed range of each limit by its x-request-limits
// name. Limits.Validate checks them; idemgen and its JSON Schema
// (schemas/x-request-limits.schema.json) are tested against them. The
// upper bounds keep the decoders' recursion shallow and a request's cost
// within what a server can carry.
func LimitRanges() map[string]LimitRange {
	return map[string]LimitRange{
		"maxDepth":      {1, 1000},
		"maxFields":     {1, 100000},
		"maxNameLength": {1, 65536},
		"maxValues":     {1, 10000000},
	}
}

// LimitError is one out-of-range value of Limits. Field is its name in the
// x-request-limits annotation.
type LimitError struct {
	Field   string
	Message string
}

func (e *LimitError) Error() string { return e.Field + ": " + e.Message }

// Fields returns the limits by their x-request-limits names.
func (l Limits) Fields() map[string]int {
	return map[string]int{"maxDepth": l.MaxDepth, "maxFields": l.MaxFields, "maxNameLength": l.MaxNameLength, "maxValues": l.MaxValues}
}

// Validate reports every limit outside its range (LimitRanges): the
// errors.Join of one *LimitError per problem, in the order of the names.
func (l Limits) Validate() error {
	ranges := LimitRanges()
	fields := l.Fields()
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		r, v := ranges[n], fields[n]
		if v < r.Min || v > r.Max {
			errs = append(errs, &LimitError{Field: n, Message: fmt.Sprintf("%d is outside %d..%d", v, r.Min, r.Max)})
		}
	}
	return errors.Join(errs...)
}

// orDefault returns l with its zero fields set to their defaults.
func (l *Limits) orDefault() Limits {
	d := DefaultLimits()
	if l == nil {
		return d
	}
	out := *l
	for _, f := range []struct{ v, d *int }{{&out.MaxDepth, &d.MaxDepth}, {&out.MaxFields, &d.MaxFields},
		{&out.MaxNameLength, &d.MaxNameLength}, {&out.MaxValues, &d.MaxValues}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return out
}

// SetLimits bounds the rest of the request's decoding by l (nil: the
// defaults); a zero field is its default. Generated decoders call it first
// for an operation with x-request-limits.
func (q *Request) SetLimits(l *Limits) { q.lim = l.orDefault() }

// budget counts the values one decoded body or parameter may still hold.
// A nil budget is unbounded.
type budget struct {
	left, max int
}

func newBudget(max int) *budget { return &budget{left: max, max: max} }

// take accounts for n more values; false once the budget is spent.
func (b *budget) take(n int) bool {
	if b == nil {
		return true
	}
	b.left -= n
	return b.left >= 0
}

// fits reports whether n more values would fit, without taking them.
func (b *budget) fits(n int) bool { return b == nil || b.left >= n }

func (b *budget) spent() bool { return b != nil && b.left < 0 }

// mark and reset undo what a trial (one member of an anyOf) spent.
func (b *budget) mark() int {
	if b == nil {
		return 0
	}
	return b.left
}

func (b *budget) reset(mark int) {
	if b != nil {
		b.left = mark
	}
}

func (b *budget) detail() string { return fmt.Sprintf("holds more than %d values", b.max) }

// spend accounts for n values of the value being decoded; the first time
// the budget runs out it reports it, for the whole value.
func (vd *validator) spendN(n int) bool {
	b := vd.values
	if b == nil || b.left < 0 {
		return b == nil
	}
	if b.take(n) {
		return true
	}
	ptr := "#"
	if vd.name != "" {
		ptr = ""
	}
	vd.out = append(vd.out, idemproblem.Violation{In: vd.in, Parameter: vd.name, Pointer: ptr, Rule: "maxValues", Detail: b.detail()})
	return false
}

func (vd *validator) spend() bool { return vd.spendN(1) }

// shortName quotes a name for a message, cut after 24 bytes (at a rune
// boundary) with an ellipsis: the name that broke a limit may be a megabyte
// long.
func shortName(s string) string {
	const n = 24
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	q := strconv.Quote(s[:cut])
	return q[:len(q)-1] + "…\""
}

// checkName checks a bracket name (a[b][0][]) against lim before anything
// is built from it: its nesting (levels, below a value at depth base:
// 1 for a body's members, 0 for a deepObject parameter, whose own name is
// its value) and its length. what names it in messages ("form name").
func checkName(what, name string, base int, lim *Limits) *SyntaxError {
	if base+nameDepth(name, lim.MaxDepth-base) > lim.MaxDepth {
		return &SyntaxError{Offset: -1, Rule: "maxDepth", Msg: fmt.Sprintf("%s %s nests deeper than %d levels", what, shortName(name), lim.MaxDepth)}
	}
	if len(name) > lim.MaxNameLength {
		return &SyntaxError{Offset: -1, Rule: "maxNameLength", Msg: fmt.Sprintf("%s %s is longer than %d bytes", what, shortName(name), lim.MaxNameLength)}
	}
	return nil
}

// nameDepth counts the [bracket] groups of a name, stopping once there are
// more than max.
func nameDepth(name string, max int) int {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return 0
	}
	d, rest := 0, name[i:]
	for d <= max && len(rest) > 0 && rest[0] == '[' {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			break // unbalanced: the parser reports it
		}
		d++
		rest = rest[end+1:]
	}
	return d
}
