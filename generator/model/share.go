package model

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Sharing identical inline schemas.
//
// Specs repeat inline schemas: Stripe spells out the same address, metadata
// or expand list in the form body of every operation that takes one. Each
// inline schema is named where it stands (PostCustomersRequestBodyAddress),
// so each repetition would be a type of its own. shareInline gives the
// inline schemas that stand under the same name (the same property, say)
// and whose Go types are the same in everything the generated code depends
// on one type, the first of them by spec location. It is named with the words
// that end the names of all its uses (Address, CreatedVariant1), unless
// another identifier has that name: then it keeps the name of that first
// use. Its doc comment says how many schemas it stands for.
//
// "The same" is decided on the model, not on the schema: two types are the
// same when they have the same kind, fields (JSON names, types,
// required, nullable, readOnly, writeOnly, default and doc comment),
// additional properties, enum values, union members (types, JSON types,
// discriminator tags) and alias target, where a named type inside is the
// same type: a component by identity, an inline type by this same rule, bottom
// up (a Merkle hash, as the schema versions are computed, schemaversion.go). Request
// validation and decoding (form or JSON, defaults, readOnly refusal) do not
// depend on the Go type: they follow the request schema table, built per spec
// location (reqschema.go), so sharing a type changes none of them.
//
// A type whose location, or a location inside it, is a key of the config's
// rename is never shared: the rename names it alone.

// shareInline merges the inline types of the same shape into one type each.
// It runs once the model is built and before names are resolved.
func (b *builder) shareInline(ops []*Operation, hooks []*Webhook, rename map[string]Rename) {
	sh := &sharer{keys: map[*Type]string{}, ids: map[*Type]int{}, pinned: map[*Type]bool{}, b: b}
	for i, t := range b.types {
		sh.ids[t] = i
	}
	if len(rename) > 0 {
		locs := sortedKeys(rename)
		for _, t := range b.types {
			if !b.tb(t).inline {
				continue
			}
			for i := sort.SearchStrings(locs, t.Location); i < len(locs) && strings.HasPrefix(locs[i], t.Location); i++ {
				if locs[i] == t.Location || strings.HasPrefix(locs[i], t.Location+"/") {
					sh.pinned[t] = true
				}
			}
		}
	}
	groups := map[string][]*Type{}
	var order []string
	for _, t := range b.types {
		if !b.tb(t).inline || t.Kind == kindUndeclared {
			continue
		}
		k := sh.key(t)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], t)
	}
	into := map[*Type]*Type{} // a merged type -> the type that stands for it
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		sort.Slice(g, func(i, j int) bool { return g[i].Location < g[j].Location })
		rep := g[0]
		rep.Shared = len(g) - 1
		if name := b.commonName(g); name != "" {
			// The fallback is the first use's name as if no identifier
			// had taken it or its parent's: its parent may be a shared
			// type too, named with a common name.
			id, own := b.tb(rep).ident, b.tb(rep).ident.dryName()
			id.want, id.fallback = func() string { return name }, func() string { return own }
		}
		for _, t := range g[1:] {
			into[t] = rep
			if t.Doc != rep.Doc {
				rep.Doc = "" // the schemas describe themselves differently: say only where they are
			}
		}
	}
	if len(into) == 0 {
		return
	}

	redirect := func(gt *GoType) { redirectType(gt, into) }
	drop := map[*string]bool{}
	repoint := map[*ident]*ident{}
	kept := b.types[:0]
	for _, t := range b.types {
		if rep := into[t]; rep != nil {
			drop[&t.Name] = true
			for i := range t.Enum {
				drop[&t.Enum[i].Name] = true
			}
			for _, f := range t.Fields {
				drop[&f.Name] = true
			}
			if t.AdditionalProperties != nil {
				drop[&t.AdditionalProperties.Name] = true
			}
			for _, v := range t.Variants {
				drop[&v.Name] = true
			}
			repoint[b.tb(t).ident] = b.tb(rep).ident
			continue
		}
		kept = append(kept, t)
	}
	clear(b.types[len(kept):])
	b.types = kept
	for _, t := range b.types {
		for _, f := range t.Fields {
			redirect(&f.Type)
			redirect(&b.fb(f).baseType)
		}
		if f := t.AdditionalProperties; f != nil {
			redirect(&f.Type)
		}
		redirect(&t.Alias)
		for _, v := range t.Variants {
			redirect(&v.Type)
		}
	}
	for _, f := range b.defaults {
		redirect(&b.fb(f).baseType)
	}
	for _, o := range ops {
		for _, p := range o.Params {
			redirect(&p.Type)
		}
		if o.Body != nil {
			redirect(&o.Body.Type)
		}
		for _, r := range o.Responses {
			redirect(&r.Body)
			for _, h := range r.Headers {
				redirect(&h.Type)
			}
		}
	}
	for _, w := range hooks {
		redirect(&w.Payload)
	}
	b.names.replace(drop, repoint)
}

// commonName is the name a shared type takes when no other identifier has
// it: the words that end the names of all its uses, unless they are only
// words idemgen adds (RequestBody, Item, Value, Variant1); "" when there are
// none.
func (b *builder) commonName(uses []*Type) string {
	var common []string
	for i, t := range uses {
		words := splitWords(b.tb(t).ident.dryName())
		if i == 0 {
			common = words
			continue
		}
		n := 0
		for n < len(common) && n < len(words) && common[len(common)-1-n] == words[len(words)-1-n] {
			n++
		}
		common = common[len(common)-n:]
	}
	for _, w := range common {
		if !addedWords[w] && !strings.HasPrefix(w, "Variant") {
			name := strings.Join(common, "")
			if isExportedIdent(name) {
				return name
			}
			return ""
		}
	}
	return ""
}

// addedWords are the words idemgen adds to the names of inline types.
var addedWords = map[string]bool{"Request": true, "Response": true, "Body": true, "Item": true, "Value": true, "Payload": true}

// redirectType makes the named types of gt that were merged the types that
// stand for them. The elements of a GoType may be shared between GoTypes:
// each is replaced, never changed in place.
func redirectType(gt *GoType, into map[*Type]*Type) {
	switch gt.Kind {
	case GoNamed:
		if rep := into[gt.Named]; rep != nil {
			gt.Named = rep
		}
	case GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty:
		elem := *gt.Elem
		redirectType(&elem, into)
		if elem != *gt.Elem {
			gt.Elem = &elem
		}
	}
}

type sharer struct {
	keys   map[*Type]string // inline type -> its shape's hash
	ids    map[*Type]int    // every type -> its index: the identity of a type that is not shared
	pinned map[*Type]bool   // inline types a rename names
	b      *builder
}

// key is the hash of an inline type's shape; a type that cannot be shared
// (not inline, renamed, or on a cycle) is only itself.
func (sh *sharer) key(t *Type) string {
	if k, ok := sh.keys[t]; ok {
		return k
	}
	own := "type " + strconv.Itoa(sh.ids[t])
	if !sh.b.tb(t).inline || sh.pinned[t] {
		return own
	}
	sh.keys[t] = own // a cycle through inline types (none is known) is not shared
	var w strings.Builder
	fmt.Fprintf(&w, "kind %d %q\n", t.Kind, sh.b.tb(t).suffix)
	for _, f := range t.Fields {
		def := ""
		if f.Default != nil {
			def = f.Default.JSON
		}
		fmt.Fprintf(&w, "field %q %s %t %t %t %t %q %q\n", f.JSONName, sh.goKey(f.Type), f.Required, f.Nullable, f.ReadOnly, f.WriteOnly, def, f.Doc)
	}
	if f := t.AdditionalProperties; f != nil {
		fmt.Fprintf(&w, "additional %s %q\n", sh.goKey(f.Type), f.Doc)
	}
	for _, e := range t.Enum {
		fmt.Fprintf(&w, "value %q\n", e.Value)
	}
	fmt.Fprintf(&w, "alias %s\ndiscriminator %q\n", sh.goKey(t.Alias), t.Discriminator)
	for _, v := range t.Variants {
		fmt.Fprintf(&w, "variant %s %q %q\n", sh.goKey(v.Type), v.JSON, v.Tags)
	}
	sum := sha256.Sum256([]byte(w.String()))
	k := string(sum[:])
	sh.keys[t] = k
	return k
}

func (sh *sharer) goKey(gt GoType) string {
	switch gt.Kind {
	case GoNamed:
		return fmt.Sprintf("named(%x)", sh.key(gt.Named))
	case GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty:
		return fmt.Sprintf("%d(%s)", gt.Kind, sh.goKey(*gt.Elem))
	}
	return fmt.Sprintf("%d:%s", gt.Kind, gt.Name)
}
