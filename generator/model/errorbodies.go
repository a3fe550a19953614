package model

import (
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// The refusals of a generated server (a missing key, a reused one, an
// invalid request, refused credentials, 501, ...) are answered in the body
// of the operation's profile (idem.Profile.ErrorBody: problem+json, or
// Stripe's envelope). Where an operation declares the response such a
// refusal selects (its status, its range or default) with the profile's
// media type, the declared schema must be able to hold that body: every
// member the profile writes declared with a type and values that fit (or
// allowed by an open schema), every required member one the profile always
// writes. Otherwise generation fails, naming the response, the schema and
// what is missing, rather than serve bodies the spec's clients cannot read.

// profileOf is the profile of o's refusals: its policy's, or the document
// root's for an operation outside the engine.
func profileOf(o *Operation, root *policyPatch) string {
	if o.Idempotent {
		return o.Policy.Profile
	}
	return root.apply(DefaultPolicy()).Profile
}

// defaultKeyFormat gives a policy whose keyFormat neither the root nor the
// operation sets its profile's default (printable for stripe, whose SDKs'
// keys are not UUIDs).
func defaultKeyFormat(p *Policy, root, op *policyPatch) {
	for _, patch := range []*policyPatch{root, op} {
		if patch != nil && patch.set["keyFormat"] {
			return
		}
	}
	p.KeyFormat = string(idem.Profile(p.Profile).DefaultKeyFormat())
}

// errorBodyCheck is the outcome of checking one declared schema against one
// profile's body, reported once for all the operations that declare it.
type errorBodyCheck struct {
	problems []string
	first    string // where the first operation declares it
	others   int    // other operations declaring it
}

// checkErrorBodies sets each operation's Profile and checks the error
// responses it declares against the profile's body.
func (b *builder) checkErrorBodies(ops []*Operation, root *policyPatch) {
	type key struct {
		schema  *openapi3.Schema
		profile string
	}
	checks := map[key]*errorBodyCheck{}
	var order []key
	bodies := map[string]idemproblem.ErrorBody{}
	for _, o := range ops {
		o.Profile = profileOf(o, root)
		if !slices.Contains(idem.PolicyEnums()["profile"], o.Profile) {
			continue // reported by the policy check
		}
		body, ok := bodies[o.Profile]
		if !ok {
			body = idem.Profile(o.Profile).ErrorBody()
			bodies[o.Profile] = body
		}
		op := b.doc.Paths.Value(o.Path).GetOperation(o.Method)
		if op == nil || op.Responses == nil {
			continue
		}
		seen := map[*openapi3.ResponseRef]bool{}
		for _, st := range body.Statuses {
			rr, name := op.Responses.Status(st), fmt.Sprint(st)
			if rr != nil && op.Responses.Value(name) == nil {
				name = name[:1] + "XX"
			}
			if rr == nil {
				rr, name = op.Responses.Default(), "default"
			}
			if rr == nil || rr.Value == nil || seen[rr] {
				continue
			}
			seen[rr] = true
			mt := mediaOf(rr.Value.Content, body.MediaType)
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			k := key{mt.Schema.Value, o.Profile}
			where := fmt.Sprintf("%s: operation %q: responses.%s (%s", b.file, o.ID, name, body.MediaType)
			if mt.Schema.Ref != "" {
				where += ", " + mt.Schema.Ref
			}
			where += ")"
			if c := checks[k]; c != nil {
				c.others++
				continue
			}
			checks[k] = &errorBodyCheck{problems: bodyProblems(mt.Schema.Value, body, o.Profile), first: where}
			order = append(order, k)
		}
	}
	for _, k := range order {
		c := checks[k]
		also := ""
		if c.others > 0 {
			also = fmt.Sprintf(" (and %d more operations declaring it)", c.others)
		}
		for _, p := range c.problems {
			b.errs.addf("%s: profile %s cannot answer its refusals in the declared schema%s: %s", c.first, k.profile, also, p)
		}
	}
}

// mediaOf returns the content of media type mt, ignoring case and parameters.
func mediaOf(c openapi3.Content, mt string) *openapi3.MediaType {
	for _, k := range sortedKeys(c) {
		t, _, err := mime.ParseMediaType(k)
		if err == nil && strings.EqualFold(t, mt) {
			return c[k]
		}
	}
	return nil
}

// bodyProblems lists what keeps schema s from holding the refusals of
// profile, whose body is body.
func bodyProblems(s *openapi3.Schema, body idemproblem.ErrorBody, profile string) []string {
	var out []string
	if !s.Type.Permits("object") {
		return []string{fmt.Sprintf("the schema is of type %s; %s refusals are JSON objects", strings.Join(s.Type.Slice(), " or "), profile)}
	}
	members := map[string]idemproblem.ErrorMember{"": {Type: "object", Always: true}}
	for _, m := range body.Members {
		members[m.Pointer] = m
		i := strings.LastIndexByte(m.Pointer, '/')
		parent, name := m.Pointer[:i], m.Pointer[i+1:]
		ps, ok := schemaAt(s, parent)
		if !ok {
			continue // its parent is reported, or cannot be known
		}
		p, declared, known := property(ps, name)
		switch {
		case !known:
		case !declared && m.Shape:
			out = append(out, fmt.Sprintf("it declares no %s, which every %s refusal has", m.Pointer, profile))
		case !declared && closed(ps):
			what := "some " + profile + " refusals have"
			if m.Always {
				what = "every " + profile + " refusal has"
			}
			out = append(out, fmt.Sprintf("it does not allow %s (additionalProperties: false), which %s", m.Pointer, what))
		case !declared:
		case !permits(p.Type, m.Type):
			out = append(out, fmt.Sprintf("%s is declared as %s; %s refusals have %s %s there", m.Pointer, strings.Join(p.Type.Slice(), " or "), profile, article(m.Type), m.Type))
		case m.Type == "string" && len(p.Enum) > 0:
			var missing []string
			for _, v := range m.Values {
				if !slices.Contains(p.Enum, any(v)) {
					missing = append(missing, v)
				}
			}
			switch {
			case m.Values == nil:
				out = append(out, fmt.Sprintf("%s is an enum; %s refusals put values of their own there", m.Pointer, profile))
			case missing != nil:
				out = append(out, fmt.Sprintf("%s does not allow %s, which %s refusals use", m.Pointer, strings.Join(missing, ", "), profile))
			}
		}
	}
	// What the schema requires of every object the body writes.
	for _, m := range append([]idemproblem.ErrorMember{{Type: "object"}}, body.Members...) {
		if m.Type != "object" {
			continue
		}
		ps, ok := schemaAt(s, m.Pointer)
		if !ok {
			continue
		}
		for _, r := range required(ps) {
			rm, written := members[m.Pointer+"/"+r]
			switch {
			case !written:
				out = append(out, fmt.Sprintf("it requires %s/%s, which %s refusals do not have", m.Pointer, r, profile))
			case !rm.Always:
				out = append(out, fmt.Sprintf("it requires %s/%s, which only some %s refusals have", m.Pointer, r, profile))
			}
		}
	}
	return out
}

// schemaAt returns the schema of the object member at pointer (RFC 6901,
// "" for s itself). ok is false when it cannot be known: a member s does
// not declare, or one under a oneOf or anyOf.
func schemaAt(s *openapi3.Schema, pointer string) (*openapi3.Schema, bool) {
	if pointer == "" {
		return s, true
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		p, declared, known := property(s, tok)
		if !declared || !known {
			return nil, false
		}
		s = p
	}
	return s, true
}

// property finds member name of object schema s, in its properties or its
// allOf. known is false when s composes with oneOf or anyOf, whose members
// this check does not choose between.
func property(s *openapi3.Schema, name string) (p *openapi3.Schema, declared, known bool) {
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return nil, false, false
	}
	if r := s.Properties[name]; r != nil && r.Value != nil {
		return r.Value, true, true
	}
	for _, a := range s.AllOf {
		if a == nil || a.Value == nil {
			continue
		}
		p, declared, known := property(a.Value, name)
		if declared || !known {
			return p, declared, known
		}
	}
	return nil, false, true
}

// closed reports whether object schema s allows no members besides its
// properties.
func closed(s *openapi3.Schema) bool {
	return s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
}

// required lists the members s requires, its allOf's included.
func required(s *openapi3.Schema) []string {
	out := slices.Clone(s.Required)
	for _, a := range s.AllOf {
		if a != nil && a.Value != nil {
			out = append(out, required(a.Value)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// permits reports whether a schema of types t allows a value of JSON type
// typ (an integer is a number too).
func permits(t *openapi3.Types, typ string) bool {
	return t.Permits(typ) || (typ == "integer" && t.Permits("number"))
}

func article(typ string) string {
	if strings.IndexByte("aeiou", typ[0]) >= 0 {
		return "an"
	}
	return "a"
}
