package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

type runner struct {
	cfg    Config
	spec   *generator.Spec
	base   string
	ops    map[string]*opRun // prepared operations, by id (parents included)
	bodies *bodies           // renders the placeholders of given bodies
}

// param is the value given for an operation's parameter: the operation's
// fixture's, else Config.Params'.
func (r *runner) param(op, name string) (string, bool) {
	if v, ok := r.cfg.Fixtures[op].Params[name]; ok {
		return v, true
	}
	v, ok := r.cfg.Params[name]
	return v, ok
}

// unbuildable is why the value generator cannot build a value the spec
// describes as valid (a pattern with length bounds it cannot meet, a
// discriminator value the member's own schema refuses): the checks that
// need a request are skipped with it, and a body (-body) or a parameter
// (-param) given for the operation is the way out.
type unbuildable struct{ error }

func (e unbuildable) Unwrap() error { return e.error }

// opRun is one operation prepared for checking: its body and parameters.
type opRun struct {
	r      *runner
	o      *model.Operation
	kin    *openapi3.Operation
	schema *openapi3.SchemaRef // JSON body schema; nil without one
	ctype  string
	isJSON bool
	body   any    // the JSON body, decoded (numbers as json.Number)
	raw    []byte // the body as sent on a first execution
	tmpl   []byte // the given body when it holds placeholders: each fixture renders it anew
	source string // where the body came from, for evidence
	err    error  // why no request can be built
}

func (r *runner) prepare(o *model.Operation) *opRun {
	if r.ops == nil {
		r.ops = map[string]*opRun{}
	}
	if p, ok := r.ops[o.ID]; ok {
		return p
	}
	p := &opRun{r: r, o: o, kin: r.spec.Operation(o)}
	r.ops[o.ID] = p
	if err := p.keyFormatKnown(); err != nil {
		p.err = err
		return p
	}
	if o.Body == nil {
		return p
	}
	p.ctype = o.Body.MediaType
	p.isJSON = o.Body.JSON
	var media *openapi3.MediaType
	if p.kin != nil && p.kin.RequestBody != nil && p.kin.RequestBody.Value != nil {
		media = p.kin.RequestBody.Value.Content.Get(o.Body.MediaType)
	}
	if media != nil {
		p.schema = media.Schema
	}
	if raw, ok := r.cfg.Bodies[o.ID]; ok {
		p.raw, p.source = raw, "the body given for "+o.ID
		if t, _ := templated(raw); t && r.bodies != nil {
			p.tmpl, p.raw = raw, r.bodies.render(raw)
			p.source = "the body template given for " + o.ID
		}
		if p.isJSON {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&p.body); err != nil {
				p.err = fmt.Errorf("the body given for %s is not JSON: %w", o.ID, err)
			}
		}
		return p
	}
	if !p.isJSON && o.Body.MediaType != "application/x-www-form-urlencoded" {
		p.err = fmt.Errorf("no body can be generated for media type %s; supply one for %s", o.Body.MediaType, o.ID)
		return p
	}
	if ex, where, ok := example(media); ok && validate(p.schema, ex) == nil {
		p.body, p.source = ex, where
	} else {
		v, err := generate(p.schema, 0)
		if err == nil {
			err = validate(p.schema, v)
		}
		if err != nil {
			p.err = unbuildable{fmt.Errorf("generating a body from the request schema: %w; supply one for %s", err, o.ID)}
			return p
		}
		p.body, p.source = v, "a body generated from the request schema"
	}
	p.raw = p.encode(p.body)
	return p
}

// encode serialises a body in the operation's media type.
func (p *opRun) encode(v any) []byte {
	if p.isJSON || p.ctype != "application/x-www-form-urlencoded" {
		b, _ := json.Marshal(v)
		return b
	}
	return formEncode(v)
}

// formEncode writes v as application/x-www-form-urlencoded in bracket
// notation: members as name[member], items as name[0] (as name[] again
// for a name that ends in []).
func formEncode(v any) []byte {
	form := url.Values{}
	var add func(prefix string, v any)
	add = func(prefix string, v any) {
		switch c := v.(type) {
		case map[string]any:
			for _, k := range sortedMapKeys(c) {
				name := k
				if prefix != "" {
					name = prefix + "[" + k + "]"
				}
				add(name, c[k])
			}
		case []any:
			for i, x := range c {
				if strings.HasSuffix(prefix, "[]") { // PHP's tags[]: the name repeated
					add(prefix, x)
				} else {
					add(fmt.Sprintf("%s[%d]", prefix, i), x)
				}
			}
		default:
			form.Add(prefix, scalarString(c))
		}
	}
	add("", v)
	return []byte(form.Encode())
}

// example returns the media type's example, or its schema's; where says
// which.
func example(media *openapi3.MediaType) (any, string, bool) {
	if media == nil {
		return nil, "", false
	}
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return v
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var out any
		_ = dec.Decode(&out)
		return out
	}
	if media.Example != nil {
		return norm(media.Example), "the spec's example", true
	}
	names := make([]string, 0, len(media.Examples))
	for n := range media.Examples {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ex := media.Examples[n]; ex != nil && ex.Value != nil && ex.Value.Value != nil {
			return norm(ex.Value.Value), fmt.Sprintf("the spec's example %q", n), true
		}
	}
	if media.Schema != nil && media.Schema.Value != nil {
		if media.Schema.Value.Example != nil {
			return norm(media.Schema.Value.Example), "the schema's example", true
		}
		if len(media.Schema.Value.Examples) > 0 {
			return norm(media.Schema.Value.Examples[0]), "the schema's example", true
		}
	}
	return nil, "", false
}

func scalarString(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case json.Number:
		return c.String()
	case nil:
		return ""
	case []any:
		parts := make([]string, len(c))
		for i, x := range c {
			parts[i] = scalarString(x)
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// newKey returns a fresh key in the operation's format, minted as the
// generated client mints it (idemclient.NewKey); "" for a format it does
// not know, which keyFormatKnown reports.
func (p *opRun) newKey() string {
	k, _ := idemclient.NewKey(p.o.Policy.KeyFormat)
	return k
}

// keyFormatKnown is an error for an idempotent operation whose key format
// conformance cannot mint or break keys of (a format added to the runtime
// and not here): no request is sent for it.
func (p *opRun) keyFormatKnown() error {
	if !p.o.Idempotent {
		return nil
	}
	if _, err := idemclient.NewKey(p.o.Policy.KeyFormat); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if _, err := badKeys(p.o.Policy.KeyFormat, ""); err != nil {
		return err
	}
	return nil
}

// keyHeader is the header carrying the operation's key ("" when it has no
// policy).
func (p *opRun) keyHeader() string {
	if !p.o.Idempotent {
		return ""
	}
	return p.o.Policy.Header
}

// kept reports whether status is an outcome the contract stores and
// replays: a 2xx or one of the operation's replayStatuses.
func (p *opRun) kept(status int) bool {
	if status >= 200 && status < 300 {
		return true
	}
	for _, s := range p.o.Policy.ReplayStatuses {
		if s == status {
			return true
		}
	}
	return false
}

// fixture builds a fresh request for the operation: path parameters filled
// (creating parent resources as needed), required query and header
// parameters set, the body. exs are the requests made to create parents.
// tenant is sent with every request ("": the first of Config.Tenants).
func (p *opRun) fixture(ctx context.Context, depth int, tenant string) (q request, exs []*Exchange, err error) {
	if p.err != nil {
		return q, nil, p.err
	}
	if depth > 4 {
		return q, nil, fmt.Errorf("parent resources nest deeper than 4 levels")
	}
	q = request{method: p.o.Method, query: url.Values{}, header: http.Header{}, body: p.raw, ctype: p.ctype, tenant: tenant}
	if p.tmpl != nil {
		q.body = p.r.bodies.render(p.tmpl) // a new value per request; its retries repeat it
	}
	path := p.o.Path
	for _, prm := range p.o.Params {
		if prm.In == "header" && strings.EqualFold(prm.Name, p.keyHeader()) {
			continue
		}
		val, given := p.r.param(p.o.ID, prm.Name)
		switch {
		case given:
		case prm.In == "path":
			v, ex, creator, perr := p.parent(ctx, prm.Name, depth, tenant)
			exs = append(exs, ex...)
			if perr == nil {
				val = v
				break
			}
			if creator != nil {
				// Never an invented id where the spec says how to make a
				// real one: the checks that need it are skipped.
				return q, exs, &prerequisiteError{fmt.Errorf("path parameter %q: %w; give it a value (-param %s=VALUE) or a body for %s", prm.Name, perr, prm.Name, creator.ID)}
			}
			gv, gerr := p.paramValue(prm)
			if gerr != nil {
				return q, exs, fmt.Errorf("path parameter %q: %w (give it a value)", prm.Name, perr)
			}
			val = gv
			q.notes = append(q.notes, fmt.Sprintf("path parameter %s=%s is generated from its schema: %v", prm.Name, gv, perr))
		case prm.Required:
			if val, err = p.paramValue(prm); err != nil {
				return q, exs, fmt.Errorf("%s: %w (give it a value)", prm.Where(), err)
			}
		default:
			continue
		}
		switch prm.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+prm.Name+"}", url.PathEscape(val))
		case "query":
			q.query.Set(prm.Name, val)
		case "header":
			q.header.Set(prm.Name, val)
		case "cookie":
			q.header.Add("Cookie", (&http.Cookie{Name: prm.Name, Value: val}).String())
		}
	}
	q.path = path
	return q, exs, nil
}

// paramValue generates a value for a parameter from its schema (its
// media type's for one declared with content), in its style.
func (p *opRun) paramValue(prm *model.Param) (string, error) {
	sr := model.ParameterSchema(p.kinParam(prm))
	v, err := generate(sr, 0)
	if err == nil {
		err = validate(sr, v)
	}
	if err != nil {
		return "", unbuildable{err}
	}
	if prm.Style == idemimpl.StyleJSON {
		b, _ := json.Marshal(v)
		return string(b), nil
	}
	return scalarString(v), nil
}

// kinParam is the spec's parameter prm was built from: the operation's,
// else its path item's; nil when there is none.
func (p *opRun) kinParam(prm *model.Param) *openapi3.Parameter {
	if p.kin == nil {
		return nil
	}
	params := p.kin.Parameters
	if item := p.r.spec.Doc.Paths.Value(p.o.Path); item != nil {
		params = append(append(openapi3.Parameters{}, item.Parameters...), params...)
	}
	var found *openapi3.Parameter
	for _, pr := range params {
		if pr != nil && pr.Value != nil && pr.Value.In == prm.In && pr.Value.Name == prm.Name {
			found = pr.Value // the operation's, listed last, wins
		}
	}
	return found
}

// parent creates the resource a path parameter names through the POST on
// the parent collection (POST /payments for /payments/{paymentId}/...),
// and returns the new resource's id: the member named like the parameter,
// or "id". creator is that POST, nil when the spec has none.
func (p *opRun) parent(ctx context.Context, param string, depth int, tenant string) (id string, exs []*Exchange, creator *model.Operation, err error) {
	i := strings.Index(p.o.Path, "/{"+param+"}")
	if i < 0 {
		return "", nil, nil, fmt.Errorf("not in the path")
	}
	prefix := p.o.Path[:i]
	var parentOp *model.Operation
	for _, o := range p.r.spec.Model.Operations {
		if o.Method == http.MethodPost && o.Path == prefix {
			parentOp = o
		}
	}
	if parentOp == nil {
		return "", nil, nil, fmt.Errorf("no POST %s in the spec creates it", prefix)
	}
	pp := p.r.prepare(parentOp)
	q, exs, err := pp.fixture(ctx, depth+1, tenant)
	if err != nil {
		return "", exs, parentOp, fmt.Errorf("creating it with %s: %w", parentOp.ID, err)
	}
	if pp.keyHeader() != "" {
		q = q.withKeys(pp.newKey())
	}
	ex := p.r.sendRetried(ctx, pp.keyHeader(), idem.Profile(parentOp.Policy.Profile), q)
	exs = append(exs, ex)
	if ex.Status < 200 || ex.Status > 299 {
		return "", exs, parentOp, fmt.Errorf("creating it with %s answered %s", parentOp.ID, ex.describe())
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(ex.raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return "", exs, parentOp, fmt.Errorf("%s answered a body that is not a JSON object", parentOp.ID)
	}
	for _, name := range []string{param, "id"} {
		if v, ok := obj[name]; ok && v != nil {
			return scalarString(v), exs, parentOp, nil
		}
	}
	return "", exs, parentOp, fmt.Errorf("%s's response has no member %q or \"id\"", parentOp.ID, param)
}
