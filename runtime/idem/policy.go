package idem

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

// Validate reports every out-of-policy value of p, joined.
func (p Policy) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !isToken(p.Header) {
		bad("header: %q is not a valid header name", p.Header)
	}
	switch p.KeyFormat {
	case KeyFormatUUID, KeyFormatUUIDv4, KeyFormatUUIDv7, KeyFormatOpaque:
	default:
		bad("keyFormat: %q is not one of uuid, uuidv4, uuidv7, opaque", p.KeyFormat)
	}
	if p.TTL < MinTTL || p.TTL > MaxTTL {
		bad("ttl: %s is outside 2h..24h", fmtDuration(p.TTL))
	}
	switch p.Mode {
	case ModeAtomic:
	case ModeLease:
		if p.Lease <= 0 {
			bad("lease: %s must be positive in lease mode", fmtDuration(p.Lease))
		} else if p.Lease >= p.TTL {
			bad("lease: %s must be shorter than ttl %s", fmtDuration(p.Lease), fmtDuration(p.TTL))
		}
	default:
		bad("mode: %q is not one of atomic, lease", p.Mode)
	}
	switch p.InFlight {
	case InFlightReject:
	case InFlightWait:
		if p.Wait <= 0 {
			bad("wait: %s must be positive when inFlight is wait", fmtDuration(p.Wait))
		}
	default:
		bad("inFlight: %q is not one of reject, wait", p.InFlight)
	}
	seen := map[int]bool{}
	for i, s := range p.ReplayStatuses {
		if s < 400 || s > 599 {
			bad("replayStatuses[%d]: %d is not a 4xx or 5xx status", i, s)
		}
		if seen[s] {
			bad("replayStatuses[%d]: %d is listed twice", i, s)
		}
		seen[s] = true
	}
	for i, ptr := range p.FingerprintExclude {
		if _, err := parsePointer(ptr); err != nil {
			bad("fingerprint.exclude[%d]: %v", i, err)
		}
	}
	switch p.OnSchemaChange {
	case SchemaChangeReplay, SchemaChangeReject:
	default:
		bad("onSchemaChange: %q is not one of replay, reject", p.OnSchemaChange)
	}
	switch p.OnExpired {
	case ExpiredExecute, ExpiredReject:
	default:
		bad("onExpired: %q is not one of execute, reject", p.OnExpired)
	}
	switch p.Profile {
	case ProfileDefault, ProfileIETF:
	default:
		bad("profile: %q is not one of default, ietf", p.Profile)
	}
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("idem: operation %q: %w", op.ID, err)
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
