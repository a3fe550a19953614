package idemimpl

import (
	"encoding/base64"
	"net/mail"
	"net/netip"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// checkFormat returns what is wrong with s as a value of format f, or "".
func checkFormat(f Format, s string) string {
	switch f {
	case FormatDateTime:
		// As time.Time's UnmarshalJSON reads it: RFC 3339 with an upper-case
		// T and Z.
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return "must be a date-time as RFC 3339 writes it, e.g. 2024-05-01T12:30:00Z"
		}
	case FormatDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a full-date as RFC 3339 writes it, e.g. 2024-05-01"
		}
	case FormatUUID:
		// uuid.Parse also takes {braced} and urn:uuid: forms; JSON Schema
		// means the 36-character form.
		if len(s) != 36 {
			return "must be a UUID such as 3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10"
		}
		if _, err := uuid.Parse(s); err != nil {
			return "must be a UUID such as 3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10"
		}
	case FormatEmail:
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an e-mail address (RFC 5321), without a display name"
		}
	case FormatURI:
		if u, err := url.Parse(s); err != nil || !u.IsAbs() {
			return "must be an absolute URI (RFC 3986) with a scheme"
		}
	case FormatIPv4:
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return "must be an IPv4 address in dotted-decimal form"
		}
	case FormatIPv6:
		if a, err := netip.ParseAddr(s); err != nil || !a.Is6() || a.Zone() != "" {
			return "must be an IPv6 address (RFC 4291)"
		}
	case FormatByte:
		if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
			return "must be base64-encoded (RFC 4648, with padding)"
		}
	}
	return ""
}
