package idemimpl

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

// Kind is the JSON kind of a Value.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Value is a decoded request value: the body, or a structured parameter, as
// one tree, whatever media type it came in. Generated decoders validate it
// against the operation's schema, encode it canonically for the fingerprint
// and make the typed request from the tree (fill.go, or unmarshalled from
// that encoding): equal canonical forms decode to equal typed requests.
//
// A Value is 80 bytes, a Member 96: a request's tree is what its decoding
// holds in memory, so a number is kept in a word and its text in Str
// rather than as a Number.
type Value struct {
	Kind    Kind
	Bool    bool     // KindBool
	isInt   bool     // KindNumber: an integer an int64 holds
	bits    uint64   // KindNumber: the int64, or else the float64's bits
	Str     string   // KindString: valid UTF-8; KindNumber: Number.Text
	Items   []Value  // KindArray
	Members []Member // KindObject, names unique, sorted (see SortMembers)
}

// NumberValue is the Value of number n.
func NumberValue(n Number) Value {
	v := Value{Kind: KindNumber, isInt: n.IsInt, Str: n.Text, bits: math.Float64bits(n.Float)}
	if n.IsInt {
		v.bits = uint64(n.Int)
	}
	return v
}

// Num returns the number a KindNumber Value holds.
func (v *Value) Num() Number {
	if v.isInt {
		i := int64(v.bits)
		return Number{Text: v.Str, IsInt: true, Int: i, Float: float64(i)}
	}
	return Number{Text: v.Str, Float: math.Float64frombits(v.bits)}
}

// Member is one member of an object Value.
type Member struct {
	Name  string
	Value Value
}

// Number is a JSON number in canonical form. An integral value that fits an
// int64 is kept exactly (Int, and Text its decimal digits), whatever its
// spelling (`2`, `2.0`, `0.2e1`). A larger integral value keeps every digit
// in Text too (18446744073709551617; 1.2345678901234567890123e+22 past
// 10^21, where ECMAScript switches to an exponent), with Float the nearest
// float64. Any other value is the nearest float64, Text its RFC 8785
// (ECMAScript) spelling. Integers are never rounded through a float64:
// 9007199254740993 stays itself, and two integers an untyped value carries
// are two requests however large.
type Number struct {
	Text  string
	IsInt bool
	Int   int64
	Float float64 // the value as a float64, also for integers
}

// maxNumberLen bounds the spelling of a number: exact arithmetic on
// thousands of digits would let one request burn CPU.
const maxNumberLen = 400

var errNumberRange = errors.New("number is outside the range of a 64-bit float")

// ParseNumber parses a JSON number literal into its canonical form.
func ParseNumber(lit string) (Number, error) {
	if len(lit) > maxNumberLen {
		return Number{}, fmt.Errorf("number has more than %d characters", maxNumberLen)
	}
	s := lit
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		es := s[i+1:]
		if es != "" && (es[0] == '+' || es[0] == '-') {
			es = es[1:]
		}
		if es == "" || !allDigits(es) {
			return Number{}, fmt.Errorf("%q is not a JSON number", lit)
		}
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			exp = 2000 // beyond any float64; decided below
		} else {
			exp = e
		}
	}
	intPart, frac, dot := strings.Cut(mant, ".")
	if intPart == "" || dot && frac == "" || !allDigits(intPart) || !allDigits(frac) ||
		len(intPart) > 1 && intPart[0] == '0' {
		return Number{}, fmt.Errorf("%q is not a JSON number", lit)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return Number{Text: "0", IsInt: true}, nil
	}
	if exp == 2000 {
		return Number{}, errNumberRange
	}
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if exp >= 0 && len(digits)+exp <= 19 {
		text := digits + strings.Repeat("0", exp)
		if neg {
			text = "-" + text
		}
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return Number{Text: text, IsInt: true, Int: n, Float: float64(n)}, nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f == 0 {
		// Overflow, or a non-zero value too small to tell from zero.
		return Number{}, errNumberRange
	}
	if exp >= 0 {
		return Number{Text: integerText(neg, digits, exp), Float: f}, nil
	}
	return Number{Text: string(jsontext.AppendFloat(nil, f, 64)), Float: f}, nil
}

// integerText spells an integer past int64, digits (no leading or
// trailing zeros) times 10^exp, exactly: as ECMAScript (RFC 8785) does
// below 10^21, in digits, and past it as d.ddde+N, but with every digit
// sent rather than the nearest float64's, so that integers an untyped
// value carries keep their identity in the canonical form and the
// fingerprint (18446744073709551617 is not 18446744073709551616).
func integerText(neg bool, digits string, exp int) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if n := len(digits) + exp; n <= 21 {
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", exp))
	} else {
		b.WriteString(digits[:1])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteString("e+")
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String()
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SyntaxError is a body that does not parse as its media type says, or
// that exceeds a limit of its operation (Limits), with where (an RFC 6901
// pointer) and what.
type SyntaxError struct {
	Pointer string // "" for the whole body
	Offset  int64  // byte offset, -1 when unknown
	Msg     string
	// Rule is the limit the input exceeds (maxDepth, maxFields,
	// maxNameLength, maxValues), "" for a syntax error.
	Rule string
}

func (e *SyntaxError) Error() string {
	s := e.Msg
	if e.Pointer != "" {
		s = "at " + e.Pointer + ": " + s
	}
	if e.Offset >= 0 {
		s += " (byte " + strconv.FormatInt(e.Offset, 10) + ")"
	}
	return s
}

// ParseJSON decodes one JSON text strictly: valid UTF-8, no duplicate member
// names, nothing after the value, within the default Limits (nesting and
// number of values). Members are sorted (SortMembers).
func ParseJSON(body []byte) (Value, error) {
	lim := DefaultLimits()
	return parseJSON(body, 0, lim.MaxDepth, newBudget(lim.MaxValues))
}

// parseJSON is ParseJSON for a value at depth base (1 for a multipart part,
// which is a member of the body) nesting at most maxDepth arrays and
// objects in all and holding what values allows, both counted as the
// tokens come.
func parseJSON(body []byte, base, maxDepth int, values *budget) (Value, error) {
	p := newParser(body)
	p.maxDepth, p.values = maxDepth, values
	defer p.release()
	v, err := p.value(base)
	if err != nil {
		return Value{}, jsonError(p.dec, err)
	}
	if _, err := p.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the JSON value")
		}
		return Value{}, jsonError(p.dec, err)
	}
	return v, nil
}

func jsonError(dec *jsontext.Decoder, err error) error {
	var se *SyntaxError
	if errors.As(err, &se) {
		return se
	}
	out := &SyntaxError{Offset: dec.InputOffset()}
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &syn):
		out.Offset = syn.ByteOffset
		out.Pointer = string(syn.JSONPointer)
		msg := syn.Err
		if msg == nil {
			msg = err
		}
		out.Msg = strings.TrimPrefix(msg.Error(), "jsontext: ")
		if errors.Is(err, io.ErrUnexpectedEOF) {
			out.Msg = "unexpected end of JSON input"
		}
		if errors.Is(err, jsontext.ErrDuplicateName) {
			out.Msg = "duplicate member " + strconv.Quote(syn.JSONPointer.LastToken())
			out.Pointer = string(syn.JSONPointer.Parent())
		}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		out.Msg = "unexpected end of JSON input"
	default:
		out.Msg = strings.TrimPrefix(err.Error(), "jsontext: ")
	}
	return out
}

// jsonParser reads one JSON text into a Value. The items and members of
// the containers being read wait on two stacks shared by all levels and
// are copied into slices of their exact size when their container ends:
// appending to each container's own slice would allocate up to five times
// what it finally holds (append grows large slices by a quarter).
type jsonParser struct {
	in       bytes.Buffer // the body being read: dec's input
	dec      *jsontext.Decoder
	maxDepth int
	values   *budget
	items    []Value
	members  []Member
}

// parsers keeps the stacks of finished parses for the next: a request's
// transient memory is then the values it holds, not also the stacks they
// waited on.
var parsers = sync.Pool{New: func() any { return new(jsonParser) }}

// maxPooledStack is the capacity beyond which a stack is not kept.
const maxPooledStack = 1 << 14

// maxPooledInput is the body size beyond which a parser's decoder is not
// kept; emptyInput is what a kept one is left reading.
const maxPooledInput = 1 << 16

var emptyInput bytes.Buffer

// newParser takes a parser from the pool, reading body. The decoder reads
// body in place (a bytes.Buffer is not copied) and is kept with the parser,
// its stacks and name sets with it.
func newParser(body []byte) *jsonParser {
	p := parsers.Get().(*jsonParser)
	p.in = *bytes.NewBuffer(body)
	if p.dec == nil {
		p.dec = jsontext.NewDecoder(&p.in)
	} else {
		p.dec.Reset(&p.in)
	}
	return p
}

func (p *jsonParser) release() {
	clear(p.items[:cap(p.items)])
	clear(p.members[:cap(p.members)])
	p.items, p.members = p.items[:0], p.members[:0]
	if cap(p.items) > maxPooledStack {
		p.items = nil
	}
	if cap(p.members) > maxPooledStack {
		p.members = nil
	}
	// A large body may have grown the decoder's name sets: not kept.
	if p.in.Cap() > maxPooledInput {
		p.dec = nil
	} else {
		p.dec.Reset(&emptyInput) // lets go of the body
	}
	p.in = bytes.Buffer{}
	p.values = nil
	parsers.Put(p)
}

// grow makes room for one more element, doubling the capacity.
func grow[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	out := make([]T, len(s), max(16, 2*cap(s)))
	copy(out, s)
	return out
}

func (p *jsonParser) value(depth int) (Value, error) {
	dec := p.dec
	tok, err := dec.ReadToken()
	if err != nil {
		return Value{}, err
	}
	if !p.values.take(1) {
		return Value{}, &SyntaxError{Offset: dec.InputOffset(), Rule: "maxValues", Msg: p.values.detail()}
	}
	switch tok.Kind() {
	case 'n':
		return Value{Kind: KindNull}, nil
	case 't', 'f':
		return Value{Kind: KindBool, Bool: tok.Bool()}, nil
	case '"':
		return Value{Kind: KindString, Str: tok.String()}, nil
	case '0':
		n, err := ParseNumber(tok.String())
		if err != nil {
			return Value{}, &SyntaxError{Pointer: string(dec.StackPointer()), Offset: dec.InputOffset(), Msg: err.Error()}
		}
		return NumberValue(n), nil
	case '[', '{':
		if depth >= p.maxDepth {
			return Value{}, &SyntaxError{Pointer: string(dec.StackPointer()), Offset: dec.InputOffset(), Rule: "maxDepth",
				Msg: fmt.Sprintf("nests deeper than %d levels", p.maxDepth)}
		}
	}
	if tok.Kind() == '[' {
		start := len(p.items)
		for dec.PeekKind() != ']' {
			item, err := p.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			p.items = append(grow(p.items), item)
		}
		v := Value{Kind: KindArray, Items: append([]Value{}, p.items[start:]...)}
		clear(p.items[start:]) // let the copied values go
		p.items = p.items[:start]
		_, err := dec.ReadToken()
		return v, err
	}
	start := len(p.members)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return Value{}, err
		}
		name := tok.String() // before the next read voids tok
		item, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		p.members = append(grow(p.members), Member{Name: name, Value: item})
	}
	v := Value{Kind: KindObject, Members: append([]Member{}, p.members[start:]...)}
	clear(p.members[start:])
	p.members = p.members[:start]
	if _, err := dec.ReadToken(); err != nil {
		return Value{}, err
	}
	v.SortMembers()
	return v, nil
}

// SortMembers sorts an object's members by name in the order of RFC 8785
// (UTF-16 code units).
func (v *Value) SortMembers() {
	if len(v.Members) < 2 {
		return
	}
	slices.SortFunc(v.Members, func(a, b Member) int { return compareUTF16(a.Name, b.Name) })
}

// Member returns the member named name, or nil.
func (v *Value) Member(name string) *Value {
	ms := v.Members
	i := sort.Search(len(ms), func(i int) bool { return compareUTF16(ms[i].Name, name) >= 0 })
	if i < len(ms) && ms[i].Name == name {
		return &ms[i].Value
	}
	return nil
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// lessUTF16 does, comparing bytes up to the first that differ: where one
// of them is ASCII, the byte order is the code units' order (an ASCII code
// unit is below every other, surrogates included); only two non-ASCII
// characters are decoded (lessUTF16, from their first byte on).
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	switch {
	case i == n:
		return cmp.Compare(len(a), len(b))
	case a[i] < utf8.RuneSelf || b[i] < utf8.RuneSelf:
		return cmp.Compare(a[i], b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // the same bytes in b: both at the start of the differing characters
	}
	if lessUTF16(a[i:], b[i:]) {
		return -1
	}
	return 1
}

// lessUTF16 orders valid UTF-8 strings by their UTF-16 code units.
func lessUTF16(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return utf16First(ra) < utf16First(rb) || utf16First(ra) == utf16First(rb) && ra < rb
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b != ""
}

// utf16First is the first UTF-16 code unit of r.
func utf16First(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// appendQuoted appends s, valid UTF-8 (by construction in a Value), as a
// JSON string in RFC 8785's form, as jsontext.AppendQuote writes it:
// printable ASCII that needs no escape is copied as it is, anything else
// goes through jsontext.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			dst, _ = jsontext.AppendQuote(dst, s)
			return dst
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// AppendJSON appends the canonical JSON encoding of v to dst: no white
// space, members sorted, strings in RFC 8785's minimal form, numbers as
// Number.Text. Members at the RFC 6901 pointers in exclude (parsed by
// ParsePointers) are left out.
//
// It is RFC 8785 (the module's one canonicaliser of JSON text is
// internal/jsonkit.Canonical, github.com/gowebpki/jcs) but for integers
// an int64 holds, which stay exact where RFC 8785 rounds them to a double
// past 2^53: the handler reads them exactly, so the fingerprint must too.
// It encodes the tree it is given rather than a text, so no library
// serves; the fuzz target FuzzParseJSON holds the two equal wherever
// every number is a double.
func AppendJSON(dst []byte, v *Value, exclude [][]string) []byte {
	return appendJSON(dst, v, exclude, 0)
}

func appendJSON(dst []byte, v *Value, exclude [][]string, depth int) []byte {
	switch v.Kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		return strconv.AppendBool(dst, v.Bool)
	case KindNumber:
		return append(dst, v.Str...)
	case KindString:
		return appendQuoted(dst, v.Str)
	case KindArray:
		dst = append(dst, '[')
		first := true
		for i := range v.Items {
			sub, skip := descend(exclude, depth, strconv.Itoa(i))
			if skip {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSON(dst, &v.Items[i], sub, depth+1)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	first := true
	for i := range v.Members {
		m := &v.Members[i]
		sub, skip := descend(exclude, depth, m.Name)
		if skip {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendQuoted(dst, m.Name)
		dst = append(dst, ':')
		dst = appendJSON(dst, &m.Value, sub, depth+1)
	}
	return append(dst, '}')
}

// descend returns the exclusions that continue below the member tok at
// depth, and whether one of them ends there (the member is left out).
func descend(exclude [][]string, depth int, tok string) ([][]string, bool) {
	if len(exclude) == 0 {
		return nil, false
	}
	var sub [][]string
	for _, p := range exclude {
		if len(p) <= depth || p[depth] != tok {
			continue
		}
		if len(p) == depth+1 {
			return nil, true
		}
		sub = append(sub, p)
	}
	return sub, false
}

// ParsePointers parses RFC 6901 JSON pointers into their unescaped
// reference tokens. The empty pointer (the whole document) is refused.
func ParsePointers(ps ...string) ([][]string, error) {
	out := make([][]string, 0, len(ps))
	for _, p := range ps {
		toks, err := jsonkit.ParsePointer(p)
		if err != nil {
			return nil, err
		}
		out = append(out, toks)
	}
	return out, nil
}

// MustParsePointers is ParsePointers for pointers the generator checked.
func MustParsePointers(ps ...string) [][]string {
	out, err := ParsePointers(ps...)
	if err != nil {
		panic("idemimpl: " + err.Error())
	}
	return out
}
