package model

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/suggest"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Policy is the resolved x-idempotent policy of one operation. Every field is
// filled: defaults, then the root annotation, then the operation's.
type Policy struct {
	Header             string
	Required           bool
	KeyFormat          string
	TTL                time.Duration
	Mode               string
	Lease              time.Duration
	MaxHold            time.Duration // 0: the engine's idem.Config.MaxHold
	InFlight           string
	Wait               time.Duration
	ReplayStatuses     []int
	FingerprintExclude []string
	// FingerprintExcludeParams are the declared parameters left out of
	// the fingerprint (tracing and request-id headers).
	FingerprintExcludeParams []ParamRef
	SchemaVersion            string // "auto" until the model resolves it
	OnSchemaChange           string
	OnExpired                string
	Profile                  string
}

// DefaultPolicy is what an empty `x-idempotent: {}` means: the runtime's
// idem.DefaultPolicy with an automatic schema version.
func DefaultPolicy() Policy {
	p := fromRuntime(idem.DefaultPolicy())
	p.SchemaVersion = "auto"
	return p
}

func fromRuntime(r idem.Policy) Policy {
	return Policy{Header: r.Header, Required: r.Required, KeyFormat: string(r.KeyFormat), TTL: r.TTL,
		Mode: string(r.Mode), Lease: r.Lease, MaxHold: r.MaxHold, InFlight: string(r.InFlight), Wait: r.Wait,
		ReplayStatuses: r.ReplayStatuses, FingerprintExclude: r.FingerprintExclude, SchemaVersion: r.SchemaVersion,
		OnSchemaChange: string(r.OnSchemaChange), OnExpired: string(r.OnExpired), Profile: string(r.Profile)}
}

// Runtime is the idem.Policy the generated operation table holds.
func (p Policy) Runtime() idem.Policy {
	return idem.Policy{Header: p.Header, Required: p.Required, KeyFormat: idem.KeyFormat(p.KeyFormat), TTL: p.TTL,
		Mode: idem.Mode(p.Mode), Lease: p.Lease, MaxHold: p.MaxHold, InFlight: idem.InFlight(p.InFlight), Wait: p.Wait,
		ReplayStatuses: p.ReplayStatuses, FingerprintExclude: p.FingerprintExclude, SchemaVersion: p.SchemaVersion,
		OnSchemaChange: idem.OnSchemaChange(p.OnSchemaChange), OnExpired: idem.OnExpired(p.OnExpired), Profile: idem.Profile(p.Profile)}
}

// policyProblems returns the runtime's objections to p: idem.Policy.Validate
// is the one definition of the rules, so that every policy that generates
// also starts.
func policyProblems(p Policy) []*idem.PolicyError {
	err := p.Runtime().Validate()
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else if err == nil {
		return nil
	}
	var out []*idem.PolicyError
	for _, e := range list {
		pe := &idem.PolicyError{Message: e.Error()}
		errors.As(e, &pe)
		out = append(out, pe)
	}
	return out
}

// checkPolicy reports the runtime's objections to the policy resolved for
// one operation (where: `openapi.yaml: operation "createOrder": `), or to the
// root's (op nil). An objection already reported at the root is not repeated
// per operation; one about a field the root set, and the operation did
// not, says so.
func (b *builder) checkPolicy(p Policy, where string, root, own *policyPatch, atRoot bool) {
	for _, pe := range policyProblems(p) {
		key := pe.Field + ": " + pe.Message
		if atRoot {
			b.rootProblems[key] = true
		} else if b.rootProblems[key] {
			continue
		}
		field := pe.Field
		if i := strings.IndexAny(field, ".["); i >= 0 {
			field = field[:i]
		}
		origin := ""
		if !atRoot && root != nil && root.set[field] && (own == nil || !own.set[field]) {
			origin = fmt.Sprintf(" (%s is set at the document root)", field)
		}
		b.errs.addf("%sx-idempotent.%s: %s%s", where, pe.Field, pe.Message, origin)
	}
}

// policyPatch is a parsed x-idempotent object: only the fields present.
type policyPatch struct {
	set    map[string]bool
	policy Policy
}

// errList collects located errors; they are reported together, sorted.
type errList []string

func (e *errList) addf(format string, args ...any) { *e = append(*e, fmt.Sprintf(format, args...)) }

func (e errList) err() error {
	if len(e) == 0 {
		return nil
	}
	p := append([]string(nil), e...)
	sort.Strings(p)
	// drop exact duplicates (a schema reached twice reports once)
	out := p[:1]
	for _, s := range p[1:] {
		if s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return &diag.SpecError{Problems: out}
}

// policyFields are the fields of an x-idempotent object.
var policyFields = []string{"header", "required", "keyFormat", "ttl", "mode", "lease", "inFlight", "wait",
	"replayStatuses", "fingerprint", "schemaVersion", "onSchemaChange", "onExpired", "profile"}

// parseExtension parses one x-idempotent value. It returns optOut for
// `false`, a patch for `true` or an object. where prefixes messages, e.g.
// `openapi.yaml: operation "createOrder": `.
func parseExtension(v any, where string, errs *errList) (patch *policyPatch, optOut bool) {
	const path = "x-idempotent"
	switch v := v.(type) {
	case bool:
		if !v {
			return nil, true
		}
		return &policyPatch{set: map[string]bool{}}, false
	case map[string]any:
	default:
		errs.addf("%s%s: want an object or a boolean, got %s", where, path, describe(v))
		return nil, false
	}
	m := v.(map[string]any)
	p := &policyPatch{set: map[string]bool{}}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Only types are checked here; values are the runtime's business
	// (idem.Policy.Validate, applied to the resolved policies).
	str := func(k string, val any) (string, bool) {
		s, ok := val.(string)
		if !ok {
			errs.addf("%s%s.%s: want a string, got %s", where, path, k, describe(val))
			return "", false
		}
		return s, true
	}
	dur := func(k string, val any) (time.Duration, bool) {
		s, ok := str(k, val)
		if !ok {
			return 0, false
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs.addf("%s%s.%s: %q is not a positive duration such as 30s or 24h", where, path, k, s)
			return 0, false
		}
		return d, true
	}
	for _, k := range keys {
		val := m[k]
		ok := true
		switch k {
		case "header":
			p.policy.Header, ok = str(k, val)
		case "required":
			b, isBool := val.(bool)
			if !isBool {
				errs.addf("%s%s.required: want a boolean, got %s", where, path, describe(val))
				ok = false
			}
			p.policy.Required = b
		case "keyFormat":
			p.policy.KeyFormat, ok = str(k, val)
		case "ttl":
			p.policy.TTL, ok = dur(k, val)
		case "mode":
			p.policy.Mode, ok = str(k, val)
		case "lease":
			p.policy.Lease, ok = dur(k, val)
		case "maxHold":
			p.policy.MaxHold, ok = dur(k, val)
		case "inFlight":
			p.policy.InFlight, ok = str(k, val)
		case "wait":
			p.policy.Wait, ok = dur(k, val)
		case "replayStatuses":
			list, isList := val.([]any)
			if !isList {
				errs.addf("%s%s.replayStatuses: want a list of status codes, got %s", where, path, describe(val))
				ok = false
				break
			}
			p.policy.ReplayStatuses = []int{}
			for i, item := range list {
				f, isNum := item.(float64)
				if !isNum || f != float64(int(f)) || f < 100 || f > 999 {
					errs.addf("%s%s.replayStatuses[%d]: want a status code, got %s", where, path, i, describe(item))
					ok = false
					continue
				}
				p.policy.ReplayStatuses = append(p.policy.ReplayStatuses, int(f))
			}
			sort.Ints(p.policy.ReplayStatuses)
		case "fingerprint":
			fm, isMap := val.(map[string]any)
			if !isMap {
				errs.addf("%s%s.fingerprint: want an object, got %s", where, path, describe(val))
				ok = false
				break
			}
			fkeys := make([]string, 0, len(fm))
			for fk := range fm {
				fkeys = append(fkeys, fk)
			}
			sort.Strings(fkeys)
			for _, fk := range fkeys {
				if fk == "excludeParameters" {
					ok = parseExcludeParams(fm[fk], &p.policy, where+path+".fingerprint.excludeParameters", errs) && ok
					continue
				}
				if fk != "exclude" {
					errs.addf("%s%s.fingerprint.%s: unknown field%s", where, path, fk, suggest.DidYouMean(fk, []string{"exclude", "excludeParameters"}))
					ok = false
					continue
				}
				list, isList := fm[fk].([]any)
				if !isList {
					errs.addf("%s%s.fingerprint.exclude: want a list of JSON pointers, got %s", where, path, describe(fm[fk]))
					ok = false
					continue
				}
				p.policy.FingerprintExclude = []string{}
				for i, item := range list {
					s, isStr := item.(string)
					if !isStr {
						errs.addf("%s%s.fingerprint.exclude[%d]: want a JSON pointer such as /metadata/sentAt, got %s", where, path, i, describe(item))
						ok = false
						continue
					}
					p.policy.FingerprintExclude = append(p.policy.FingerprintExclude, s)
				}
			}
			if ok {
				p.set["fingerprint"] = true
			}
			continue
		case "schemaVersion":
			var s string
			if s, ok = str(k, val); ok && s == "" {
				errs.addf("%s%s.schemaVersion: want auto or a non-empty version string", where, path)
				ok = false
			}
			p.policy.SchemaVersion = s
		case "onSchemaChange":
			p.policy.OnSchemaChange, ok = str(k, val)
		case "onExpired":
			p.policy.OnExpired, ok = str(k, val)
		case "profile":
			p.policy.Profile, ok = str(k, val)
		default:
			errs.addf("%s%s.%s: unknown field%s", where, path, k, suggest.DidYouMean(k, policyFields))
			ok = false
		}
		if ok {
			p.set[k] = true
		}
	}
	return p, false
}

// apply returns base with the fields set in p replaced.
func (p *policyPatch) apply(base Policy) Policy {
	if p == nil {
		return base
	}
	q := p.policy
	for k := range p.set {
		switch k {
		case "header":
			base.Header = q.Header
		case "required":
			base.Required = q.Required
		case "keyFormat":
			base.KeyFormat = q.KeyFormat
		case "ttl":
			base.TTL = q.TTL
		case "mode":
			base.Mode = q.Mode
		case "lease":
			base.Lease = q.Lease
		case "maxHold":
			base.MaxHold = q.MaxHold
		case "inFlight":
			base.InFlight = q.InFlight
		case "wait":
			base.Wait = q.Wait
		case "replayStatuses":
			base.ReplayStatuses = q.ReplayStatuses
		case "fingerprint":
			base.FingerprintExclude = q.FingerprintExclude
			base.FingerprintExcludeParams = q.FingerprintExcludeParams
		case "schemaVersion":
			base.SchemaVersion = q.SchemaVersion
		case "onSchemaChange":
			base.OnSchemaChange = q.OnSchemaChange
		case "onExpired":
			base.OnExpired = q.OnExpired
		case "profile":
			base.Profile = q.Profile
		}
	}
	return base
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return "number " + strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return "string " + strconv.Quote(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// ParamRef names a parameter: its location and name.
type ParamRef struct{ In, Name string }

// parseExcludeParams reads fingerprint.excludeParameters: a list of
// {in, name} objects. The model checks that each names a parameter.
func parseExcludeParams(val any, pol *Policy, path string, errs *errList) bool {
	list, isList := val.([]any)
	if !isList {
		errs.addf("%s: want a list of {in, name} objects, got %s", path, describe(val))
		return false
	}
	ok := true
	pol.FingerprintExcludeParams = []ParamRef{}
	for i, item := range list {
		m, isMap := item.(map[string]any)
		in, _ := m["in"].(string)
		name, _ := m["name"].(string)
		if !isMap || len(m) != 2 || name == "" || (in != "path" && in != "query" && in != "header" && in != "cookie") {
			errs.addf("%s[%d]: want {in: path|query|header|cookie, name: <parameter>}, got %s", path, i, describe(item))
			ok = false
			continue
		}
		pol.FingerprintExcludeParams = append(pol.FingerprintExcludeParams, ParamRef{In: in, Name: name})
	}
	return ok
}
