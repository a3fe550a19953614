package suggest

import "testing"

func TestNearest(t *testing.T) {
	fields := []string{"header", "required", "keyFormat", "ttl", "mode", "lease", "inFlight", "wait", "replayStatuses", "fingerprint", "schemaVersion", "onSchemaChange", "onExpired", "profile"}
	for _, tc := range []struct{ s, want string }{
		{"tll", "ttl"}, {"TTL", "ttl"}, {"keyformat", "keyFormat"}, {"replayStatus", "replayStatuses"},
		{"inflight", "inFlight"}, {"onExpire", "onExpired"}, {"modes", "mode"}, {"colour", ""}, {"x", ""},
	} {
		if got := Nearest(tc.s, fields); got != tc.want {
			t.Errorf("nearest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if got := Nearest("NewBookin", []string{"Booking", "NewBooking", "Error"}); got != "NewBooking" {
		t.Errorf("nearest(NewBookin) = %q", got)
	}
	if d := editDistance("abc", "acb"); d != 1 {
		t.Errorf("editDistance(abc, acb) = %d, want 1 (a transposition)", d)
	}
}
