package generator

import "testing"

// TestStripeLike generates a server from testdata/stripelike/openapi.yaml, a
// small spec modelled on the encodings of Stripe's, and runs
// testdata/stripelike/stripelike_test.go in the generated package: typed
// decoding of forms in bracket notation, deepObject queries, expandable
// fields, JSON-or-form bodies and a discriminated union over real HTTP, with
// the idempotency engine on PostgreSQL (DATABASE_URL; under CI=true the
// inner test fails without it, through runtime/pgtest).
func TestStripeLike(t *testing.T) {
	t.Logf("%s", runGeneratedTests(t, "stripelike"))
}
