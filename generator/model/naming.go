package model

import (
	"fmt"
	"go/token"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/idemgen/idemgen/generator/diag"
)

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "http": "HTTP", "https": "HTTPS",
	"api": "API", "json": "JSON", "uuid": "UUID", "ip": "IP", "sql": "SQL", "html": "HTML",
	"tls": "TLS", "ttl": "TTL", "xml": "XML",
}

// symbolWords spell out symbols where they carry the meaning of a name: a
// value made only of symbols ("+", "*", "/"), a sign before a number ("+1",
// "reactions--1") and a symbol that starts a name ("-created", "@type").
var symbolWords = map[rune]string{
	'+': "Plus", '-': "Minus", '*': "Star", '/': "Slash", '.': "Dot", '@': "At", '#': "Hash",
	'$': "Dollar", '%': "Percent", '&': "And", '=': "Eq", '<': "Lt", '>': "Gt", '!': "Not",
	'~': "Tilde", '^': "Caret", '?': "Question", '|': "Pipe", '\\': "Backslash", ':': "Colon",
	',': "Comma", ';': "Semicolon", '\'': "Quote", '"': "DoubleQuote", '`': "Backquote",
	'(': "LParen", ')': "RParen", '[': "LBracket", ']': "RBracket", '{': "LBrace", '}': "RBrace",
	' ': "Space", '_': "Underscore",
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// splitWords splits an OpenAPI name into words at non-alphanumerics and at
// lower-to-upper case changes ("createPayment", "payment_id", "X-Request-ID"),
// spelling out the symbols that symbolWords describes.
func splitWords(s string) []string { return splitWordsSigns(s, false) }

// splitWordsSigns is splitWords; with signs, a + or - before a digit is
// spelled out after a letter too ("Etc/GMT+1" -> Etc GMT Plus 1), where
// splitWords takes it for a separator ("utf-8", "GMT-1").
func splitWordsSigns(s string, signs bool) []string {
	rs := []rune(s)
	alnum := false
	for _, r := range rs {
		alnum = alnum || isAlnum(r)
	}
	if !alnum {
		if s == "/" {
			return []string{"Root"}
		}
		var words []string
		for _, r := range rs {
			if w, ok := symbolWords[r]; ok {
				words = append(words, w)
			} else {
				words = append(words, fmt.Sprintf("U%04X", r))
			}
		}
		return words
	}
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !isAlnum(r) {
			flush()
			atStart := i == 0 || !isAlnum(rs[i-1]) || signs && unicode.IsLetter(rs[i-1])
			sign := (r == '+' || r == '-') && atStart && i+1 < len(rs) && unicode.IsDigit(rs[i+1])
			leading := i == 0 && r != '_' && r != '/' && r != ' '
			if sign || (leading && symbolWords[r] != "") {
				words = append(words, symbolWords[r])
			}
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

// goName turns an OpenAPI name into an exported Go identifier: "+1" ->
// Plus1, "-created" -> MinusCreated, "/" -> Root, "" -> Empty.
func goName(s string) string { return goNameSigns(s, false) }

// goNameSigns is goName, with the signs of splitWordsSigns spelled out.
func goNameSigns(s string, signs bool) string {
	if s == "" {
		return "Empty"
	}
	var b strings.Builder
	for _, w := range splitWordsSigns(s, signs) {
		if in, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(in)
			continue
		}
		rs := []rune(w)
		b.WriteRune(unicode.ToUpper(rs[0]))
		b.WriteString(string(rs[1:]))
	}
	out := b.String()
	if out == "" {
		return "X"
	}
	if r := []rune(out)[0]; !unicode.IsLetter(r) || !unicode.IsUpper(r) {
		out = "X" + out // a leading digit, or a letter without case
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

func isExportedIdent(s string) bool { return token.IsIdentifier(s) && token.IsExported(s) }

// A scope is one Go namespace of generated identifiers: the package, the
// fields and methods of one struct, the methods of Server.
type scope struct {
	id       int
	what     string            // for messages: "package", "fields of CreatePaymentRequest"
	reserved map[string]string // name -> what generates it
}

// An ident is a Go identifier of the model. Its spelling is decided by
// resolve once every identifier is known, so that a clash is settled the same
// way whatever the order in which the model met the claimants.
type ident struct {
	scope *scope
	dst   *string       // where the final spelling goes
	want  func() string // preferred spelling; may read the final names of deps
	level int           // 1 + the highest level of the identifiers want reads
	floor int           // the lowest level the identifier may have
	deps  []*ident      // the identifiers want reads (a derived name's parent first)
	// prefix and suffix surround the parent's name (deps[0]) in a derived
	// name.
	prefix, suffix string
	derived        bool
	// helper: a name idemgen derives for its own declarations (affixed);
	// the config does not rename it (it follows its parent\'s).
	helper bool
	// fallback, when not nil, is the spelling taken without a warning when
	// want's is taken (a shared type's common name, share.go).
	fallback func() string
	loc      string // spec location: the rename key, named in warnings
	what     string // "schema", "property", "enum value", ... for warnings
	rank     int    // who keeps a contested name: lower first
	exact    int    // how closely the name follows the spec (exactSpelling...): higher wins a tie
	member   bool   // a field, variant, constant, operation or parameter (not a type)
}

// How closely a Go name follows the name in the spec.
const (
	spelledOut    = 0 // symbols were spelled out ("*" -> Star)
	exactWords    = 1 // letters, digits and separators only
	exactSpelling = 2 // the Go name is the spec's name
)

// closeness returns how closely goName(name) == want follows name.
func closeness(name, want string) int {
	switch {
	case name == want:
		return exactSpelling
	case strings.ContainsFunc(name, func(r rune) bool { return !isAlnum(r) && !strings.ContainsRune("_- .", r) }):
		return spelledOut
	}
	return exactWords
}

// Ranks of claimants within a level: lower keeps a contested name.
const (
	rankRenamed   = -1 // set by the config
	rankOperation = 0  // operation and webhook names
	rankComponent = 1  // #/components/schemas and properties
	// rankDerived: the names idemgen invents after an operation or a
	// webhook (XRequest, XResponse, X201Response, SendX): a user's schema
	// of the same name keeps it, the invented one gets a number.
	rankDerived  = 2
	rankInline   = 3 // types of inline schemas, generated fields
	rankConstant = 4 // enum constants
)

// namer collects identifiers while the model is built and resolves them.
type namer struct {
	file   string
	scopes []*scope
	idents []*ident
	pkg    *scope
	rename map[string]Rename
	used   map[string]bool // rename keys that matched an identifier
	warns  []diag.Warning
	errs   *errList
}

func newNamer(file string, rename map[string]Rename, errs *errList) *namer {
	n := &namer{file: file, rename: rename, used: map[string]bool{}, errs: errs}
	n.pkg = n.scope("package")
	return n
}

func (n *namer) scope(what string, reserved ...string) *scope {
	s := &scope{id: len(n.scopes), what: what, reserved: map[string]string{}}
	for _, r := range reserved {
		s.reserved[r] = "idemgen"
	}
	n.scopes = append(n.scopes, s)
	return s
}

// reserve keeps name for idemgen's own use in s.
func (s *scope) reserve(names ...string) {
	for _, r := range names {
		s.reserved[r] = "idemgen"
	}
}

// add declares an identifier whose spelling goes to *dst; want computes its
// preferred spelling from the final names of deps.
func (n *namer) add(id *ident, deps ...*ident) *ident {
	for _, d := range deps {
		if d != nil {
			id.deps = append(id.deps, d)
			if d.level >= id.level {
				id.level = d.level + 1
			}
		}
	}
	n.idents = append(n.idents, id)
	return id
}

// replace drops the identifiers whose spelling would go to a string of
// drop (those of types that share another's, see share.go), and makes the
// identifiers that read one of the keys of repoint read its value instead;
// levels follow.
func (n *namer) replace(drop map[*string]bool, repoint map[*ident]*ident) {
	kept := n.idents[:0]
	for _, id := range n.idents {
		if drop[id.dst] {
			continue
		}
		for i, d := range id.deps {
			if r := repoint[d]; r != nil {
				id.deps[i] = r
			}
		}
		kept = append(kept, id)
	}
	clear(n.idents[len(kept):])
	n.idents = kept
	levels := map[*ident]int{}
	var level func(id *ident) int
	level = func(id *ident) int {
		if l, ok := levels[id]; ok {
			return l
		}
		levels[id] = id.floor // a cycle, which re-pointing cannot make, stops here
		l := id.floor
		for _, d := range id.deps {
			l = max(l, level(d)+1)
		}
		levels[id] = l
		return l
	}
	for _, id := range n.idents {
		id.level = level(id)
	}
}

// fixed declares an identifier whose preferred spelling is known now.
func (n *namer) fixed(sc *scope, dst *string, name, loc, what string, rank, exact int, member bool) *ident {
	return n.add(&ident{scope: sc, dst: dst, want: func() string { return name }, loc: loc, what: what, rank: rank, exact: exact, member: member})
}

// typeIdent declares the package-level name of a type that is not named
// after another identifier (a component schema). It resolves one level
// after the operations' names, on the level of the types named after them
// (XRequest, XResponse), which rank after it: a schema the user named
// CreateOrderRequest keeps its name, and the operation's request type is
// numbered (a warning names the operation to rename).
func (n *namer) typeIdent(dst *string, name, loc string, rank, exact int) *ident {
	id := n.fixed(n.pkg, dst, name, loc, "schema", rank, exact, false)
	id.level, id.floor = 1, 1
	return id
}

// derived declares an identifier spelt as its parent's final name plus suffix.
func (n *namer) derived(sc *scope, dst *string, parent *ident, suffix, loc, what string, rank int, member bool) *ident {
	id := &ident{scope: sc, dst: dst, loc: loc, what: what, rank: rank, member: member, suffix: suffix, derived: true}
	id.want = func() string { return *id.deps[0].dst + suffix } // deps[0] may be re-pointed (replace)
	return n.add(id, parent)
}

// affixed declares a name idemgen derives from parent's final name for its
// own use: prefix + name + suffix (handleCreatePayment,
// decodeCreatePaymentRequest, SendEmailSent). It ranks after the spec's
// names: a clash numbers it, with a warning.
func (n *namer) affixed(sc *scope, dst *string, parent *ident, prefix, suffix, loc, what string) *ident {
	id := n.derived(sc, dst, parent, suffix, loc, what, rankDerived, false)
	id.prefix, id.helper = prefix, true
	id.want = func() string { return prefix + *id.deps[0].dst + suffix }
	return id
}

// resolve spells every identifier, level by level. Within a level and scope,
// claimants of one name are ordered by rank, then exact spelling, then spec
// location; the first keeps the name, each other gets the name with the
// lowest free number appended, and a warning names both. A config rename
// wins its name; two renames to one name, or a rename to a name idemgen
// reserves or an earlier level took, are errors.
func (n *namer) resolve() {
	members := map[string]bool{}
	for _, id := range n.idents {
		if id.member {
			members[id.loc] = true
		}
	}
	renamed := map[*ident]string{}
	for _, id := range n.idents {
		r, ok := n.rename[id.loc]
		if !ok || id.helper {
			continue
		}
		name := r.Name
		if !id.member {
			name = r.Type
			if name == "" && !members[id.loc] {
				name = r.Name
			}
		}
		if name == "" {
			continue
		}
		n.used[id.loc] = true
		if !isExportedIdent(name) {
			n.errs.addf("%s: rename %q: %q is not an exported Go identifier", n.file, id.loc, name)
			continue
		}
		renamed[id] = name
	}
	for _, loc := range sortedKeys(n.rename) {
		if !n.used[loc] {
			n.errs.addf("%s: rename %q: no Go identifier is generated at this location (see the locations in idemgen's warnings)", n.file, loc)
		}
	}

	byLevel := map[int][]*ident{}
	maxLevel := 0
	for _, id := range n.idents {
		byLevel[id.level] = append(byLevel[id.level], id)
		maxLevel = max(maxLevel, id.level)
	}
	taken := make([]map[string]*ident, len(n.scopes))
	for i := range taken {
		taken[i] = map[string]*ident{}
	}
	type key struct {
		scope int
		name  string
	}
	for level := 0; level <= maxLevel; level++ {
		ids := byLevel[level]
		groups := map[key][]*ident{}
		for _, id := range ids {
			name := id.want()
			if r, ok := renamed[id]; ok {
				name = r
			}
			k := key{id.scope.id, name}
			groups[k] = append(groups[k], id)
		}
		keys := make([]key, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].scope != keys[j].scope {
				return keys[i].scope < keys[j].scope
			}
			return keys[i].name < keys[j].name
		})
		order := func(a, b *ident) bool {
			ra, rb := a.rank, b.rank
			if _, ok := renamed[a]; ok {
				ra = rankRenamed
			}
			if _, ok := renamed[b]; ok {
				rb = rankRenamed
			}
			if ra != rb {
				return ra < rb
			}
			if a.exact != b.exact {
				return a.exact > b.exact
			}
			return a.loc < b.loc
		}
		type loser struct {
			id     *ident
			name   string
			winner string // what holds the name: a location or "idemgen"
			// yields: the loser is a name idemgen derives after an
			// operation and the winner the spec's own (a schema): the
			// documented outcome (WarnNameYields).
			yields bool
		}
		var losers []loser
		for _, k := range keys {
			g := groups[k]
			sort.SliceStable(g, func(i, j int) bool { return order(g[i], g[j]) })
			sc := g[0].scope
			holder := ""
			var holderID *ident
			if r, ok := sc.reserved[k.name]; ok {
				holder = r
			} else if prev, ok := taken[sc.id][k.name]; ok {
				holder, holderID = prev.describe(), prev
			} else {
				taken[sc.id][k.name] = g[0]
				*g[0].dst = k.name
				holder, holderID = g[0].describe(), g[0]
				g = g[1:]
			}
			for _, id := range g {
				if _, ok := renamed[id]; ok {
					n.errs.addf("%s: rename %q: %s is already generated for %s", n.file, id.loc, k.name, holder)
				}
				yields := id.rank == rankDerived && holderID != nil && holderID.rank < rankDerived
				losers = append(losers, loser{id, k.name, holder, yields})
			}
		}
		free := func(sc *scope, name string) bool {
			_, taken := taken[sc.id][name]
			_, reserved := sc.reserved[name]
			return !taken && !reserved
		}
		for _, l := range losers {
			sc := l.id.scope
			if l.id.fallback != nil {
				// A common name taken by another: the fallback, quietly
				// when it is free.
				fb := l.id.fallback()
				if free(sc, fb) {
					taken[sc.id][fb] = l.id
					*l.id.dst = fb
					continue
				}
				l.name, l.winner = fb, sc.reserved[fb]
				if prev, ok := taken[sc.id][fb]; ok {
					l.winner = prev.describe()
				}
			}
			sep := ""
			if r := l.name[len(l.name)-1]; r >= '0' && r <= '9' {
				sep = "_"
			}
			for i := 2; ; i++ {
				cand := l.name + sep + strconv.Itoa(i)
				if !free(sc, cand) {
					continue
				}
				if _, ok := groups[key{sc.id, cand}]; ok {
					continue
				}
				taken[sc.id][cand] = l.id
				*l.id.dst = cand
				break
			}
			both := fmt.Sprintf("for both %s and %s; the latter", l.winner, l.id.describe())
			if l.winner == l.id.describe() {
				both = fmt.Sprintf("twice for %s; the second", l.winner) // one location, never named twice
			}
			kind := diag.WarnNameClash
			if l.yields {
				kind = diag.WarnNameYields
			}
			n.warns = append(n.warns, diag.Warning{Where: n.file, Message: fmt.Sprintf(
				"Go identifier %s (%s) is generated %s is named %s (set rename %q in the config to choose another name)",
				l.name, sc.what, both, *l.id.dst, l.id.loc), Kind: kind})
		}
	}
}

// dryName is the identifier's spelling if no other identifier claimed its
// name or its parent's.
func (id *ident) dryName() string {
	if id.derived && len(id.deps) > 0 {
		return id.prefix + id.deps[0].dryName() + id.suffix
	}
	return id.want()
}

func (id *ident) describe() string {
	if id.what == "" {
		return id.loc
	}
	return id.what + " " + id.loc
}
