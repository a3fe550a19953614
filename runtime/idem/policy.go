package idem

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// Bounds of Policy.TTL.
const (
	MinTTL = 2 * time.Hour
	MaxTTL = 24 * time.Hour
)

// DefaultPolicy returns the policy of an operation that sets nothing: a
// required UUID key in the Idempotency-Key header, remembered 24h, atomic
// mode, duplicates in flight rejected, no non-2xx status replayed.
func DefaultPolicy() Policy {
	return Policy{
		Header:         "Idempotency-Key",
		Required:       true,
		KeyFormat:      KeyFormatUUID,
		TTL:            24 * time.Hour,
		Mode:           ModeAtomic,
		Lease:          30 * time.Second,
		InFlight:       InFlightReject,
		Wait:           5 * time.Second,
		OnSchemaChange: SchemaChangeReplay,
		OnExpired:      ExpiredExecute,
		Profile:        ProfileDefault,
	}
}

// PolicyError is one out-of-policy value of a Policy. Field is its path in
// the x-idempotent annotation (ttl, lease, replayStatuses[1],
// fingerprint.exclude[0]), so that idemgen can name where in the spec it is.
type PolicyError struct {
	Field   string
	Message string
}

func (e *PolicyError) Error() string { return e.Field + ": " + e.Message }

// PolicyEnums lists the allowed values of each enumerated policy field, by
// its x-idempotent name. Policy.Validate checks them; idemgen and its JSON
// Schema (schemas/x-idempotent.schema.json) are tested against them.
func PolicyEnums() map[string][]string {
	formats := make([]string, len(keyFormats))
	for i, f := range keyFormats {
		formats[i] = string(f)
	}
	return map[string][]string{
		"keyFormat":      formats,
		"mode":           {string(ModeAtomic), string(ModeLease)},
		"inFlight":       {string(InFlightReject), string(InFlightWait)},
		"onSchemaChange": {string(SchemaChangeReplay), string(SchemaChangeReject)},
		"onExpired":      {string(ExpiredExecute), string(ExpiredReject)},
		"profile":        {string(ProfileDefault), string(ProfileIETF), string(ProfileStripe)},
	}
}

// Validate reports every out-of-policy value of p: the errors.Join of one
// *PolicyError per problem. These are the rules of x-idempotent: idemgen
// applies them at generation time, New and Register at start-up.
func (p Policy) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &PolicyError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	enums := PolicyEnums()
	oneOf := func(field, v string) {
		if !slices.Contains(enums[field], v) {
			bad(field, "%q is not one of %s", v, strings.Join(enums[field], ", "))
		}
	}
	if !isToken(p.Header) {
		bad("header", "%q is not a valid header name", p.Header)
	}
	oneOf("keyFormat", string(p.KeyFormat))
	if p.TTL < MinTTL || p.TTL > MaxTTL {
		bad("ttl", "%s is outside 2h..24h", fmtDuration(p.TTL))
	}
	oneOf("mode", string(p.Mode))
	if p.Mode == ModeLease {
		if p.Lease <= 0 {
			bad("lease", "%s must be positive in lease mode", fmtDuration(p.Lease))
		} else if p.Lease >= p.TTL {
			bad("lease", "%s must be shorter than ttl %s", fmtDuration(p.Lease), fmtDuration(p.TTL))
		}
		switch {
		case p.MaxHold < 0:
			bad("maxHold", "%s must be positive", fmtDuration(p.MaxHold))
		case p.MaxHold == 0: // the engine's Config.MaxHold
		case p.MaxHold < p.Lease:
			bad("maxHold", "%s must be at least the lease %s", fmtDuration(p.MaxHold), fmtDuration(p.Lease))
		case p.MaxHold >= p.TTL:
			bad("maxHold", "%s must be shorter than ttl %s", fmtDuration(p.MaxHold), fmtDuration(p.TTL))
		}
	}
	oneOf("inFlight", string(p.InFlight))
	if p.InFlight == InFlightWait && p.Wait <= 0 {
		bad("wait", "%s must be positive when inFlight is wait", fmtDuration(p.Wait))
	}
	seen := map[int]bool{}
	for i, s := range p.ReplayStatuses {
		if s < 400 || s > 599 {
			bad(fmt.Sprintf("replayStatuses[%d]", i), "%d is not a 4xx or 5xx status", s)
		}
		if seen[s] {
			bad(fmt.Sprintf("replayStatuses[%d]", i), "%d is listed twice", s)
		}
		seen[s] = true
	}
	for i, ptr := range p.FingerprintExclude {
		if _, err := jsonkit.ParsePointer(ptr); err != nil {
			bad(fmt.Sprintf("fingerprint.exclude[%d]", i), "%v", err)
		}
	}
	oneOf("onSchemaChange", string(p.OnSchemaChange))
	oneOf("onExpired", string(p.OnExpired))
	oneOf("profile", string(p.Profile))
	return errors.Join(errs...)
}

// Validate checks the operation's identity and its policy; errors name the
// operation.
func (op *Operation) Validate() error {
	if op == nil {
		return errors.New("idem: nil operation")
	}
	var errs []error
	if op.ID == "" {
		errs = append(errs, errors.New("empty operation ID"))
	} else if err := checkName(op.ID, MaxOperationIDBytes); err != nil {
		// Part of every record's key: see MaxOperationIDBytes.
		errs = append(errs, fmt.Errorf("operation ID: %w", err))
	}
	if !isToken(op.Method) || strings.ToUpper(op.Method) != op.Method {
		errs = append(errs, fmt.Errorf("method: %q is not an upper-case HTTP method", op.Method))
	}
	if !strings.HasPrefix(op.Pattern, "/") {
		errs = append(errs, fmt.Errorf("pattern: %q must start with /", op.Pattern))
	}
	if err := op.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, status := range slices.Sorted(maps.Keys(op.ResponseHeaders)) {
		names := op.ResponseHeaders[status]
		if !isResponseKey(status) {
			errs = append(errs, fmt.Errorf("responseHeaders: %q is not a status, a range like 2XX or default", status))
		}
		for _, n := range names {
			if !isToken(n) {
				errs = append(errs, fmt.Errorf("responseHeaders[%s]: %q is not a valid header name", status, n))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("idem: operation %q: %w", clip(op.ID), err)
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token (a valid header name or method).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// fmtDuration writes d as the spec would: 72h, 90m, 1h30m, 500ms.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// isResponseKey reports whether s keys an OpenAPI response: a status code
// 100..599, a range 1XX..5XX, or "default".
func isResponseKey(s string) bool {
	if s == "default" {
		return true
	}
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return false
	}
	if s[1:] == "XX" || s[1:] == "xx" {
		return true
	}
	return s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9'
}
