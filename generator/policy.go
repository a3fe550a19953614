package generator

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
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

// DefaultPolicy is what an empty `x-idempotent: {}` means.
func DefaultPolicy() Policy {
	return Policy{
		Header:         "Idempotency-Key",
		Required:       true,
		KeyFormat:      "uuid",
		TTL:            24 * time.Hour,
		Mode:           "atomic",
		Lease:          30 * time.Second,
		InFlight:       "reject",
		Wait:           5 * time.Second,
		SchemaVersion:  "auto",
		OnSchemaChange: "replay",
		OnExpired:      "execute",
		Profile:        "default",
	}
}

const (
	minTTL = 2 * time.Hour
	maxTTL = 24 * time.Hour
)

var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// policyPatch is a parsed x-idempotent object: only the fields present.
type policyPatch struct {
	set    map[string]bool
	policy Policy
}

// errList collects located errors; they are reported together, sorted.
type errList []string

func (e *errList) addf(format string, args ...any) { *e = append(*e, fmt.Sprintf(format, args...)) }

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
	str := func(k string, val any, allowed ...string) (string, bool) {
		s, ok := val.(string)
		if !ok {
			errs.addf("%s%s.%s: want a string, got %s", where, path, k, describe(val))
			return "", false
		}
		if len(allowed) > 0 && !contains(allowed, s) {
			errs.addf("%s%s.%s: %q is not one of %s", where, path, k, s, strings.Join(allowed, ", "))
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
			var s string
			if s, ok = str(k, val); ok {
				if !headerNameRE.MatchString(s) {
					errs.addf("%s%s.header: %q is not a valid header name", where, path, s)
					ok = false
				}
				p.policy.Header = s
			}
		case "required":
			b, isBool := val.(bool)
			if !isBool {
				errs.addf("%s%s.required: want a boolean, got %s", where, path, describe(val))
				ok = false
			}
			p.policy.Required = b
		case "keyFormat":
			p.policy.KeyFormat, ok = str(k, val, "uuid", "uuidv4", "uuidv7", "opaque")
		case "ttl":
			var d time.Duration
			if d, ok = dur(k, val); ok {
				if d < minTTL || d > maxTTL {
					errs.addf("%s%s.ttl: %s is outside 2h..24h", where, path, val)
					ok = false
				}
				p.policy.TTL = d
			}
		case "mode":
			p.policy.Mode, ok = str(k, val, "atomic", "lease")
		case "lease":
			p.policy.Lease, ok = dur(k, val)
		case "inFlight":
			p.policy.InFlight, ok = str(k, val, "reject", "wait")
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
				if !isNum || f != float64(int(f)) || f < 300 || f > 599 {
					errs.addf("%s%s.replayStatuses[%d]: want a non-2xx status code 300..599, got %s", where, path, i, describe(item))
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
					errs.addf("%s%s.fingerprint.%s: unknown field", where, path, fk)
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
					if !isStr || !strings.HasPrefix(s, "/") {
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
			p.policy.OnSchemaChange, ok = str(k, val, "replay", "reject")
		case "onExpired":
			p.policy.OnExpired, ok = str(k, val, "execute", "reject")
		case "profile":
			p.policy.Profile, ok = str(k, val, "default", "ietf")
		default:
			errs.addf("%s%s.%s: unknown field", where, path, k)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
