package idemvet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/idemgen/idemgen/analysis/idemvet"
)

// TestPool: statements through the pool, database/sql, a transaction of
// the handler's own and sqlc Queries built on them are reported, with the
// fix where one is mechanical (pool.go.golden); tx and what derives from
// it (New(tx), WithTx, a savepoint, tx.Conn(), a helper or struct given
// tx) and the pool in a GET handler or a method that is no handler are not.
func TestPool(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), idemvet.Analyzer, "example.com/app/pool")
}

// TestOutbound: net/http, gRPC, an SDK method named with -outbound, and a
// call in a helper are reported in an atomic operation and a webhook
// receiver; not in lease mode, a GET, or when the call carries what a
// -keyed function returned.
func TestOutbound(t *testing.T) {
	setFlag(t, "outbound", "example.com/sdk.Client.Refund")
	setFlag(t, "keyed", "example.com/sdk.DownstreamKey")
	analysistest.Run(t, analysistest.TestData(), idemvet.Analyzer, "example.com/app/outbound")
}

// TestSavepoint: a statement's error handled and answered without an
// error (or passed over) is reported, through a helper and a scanned row
// too; not when it ran in a savepoint rolled back on failure, pgx.BeginFunc,
// SAVEPOINT statements, or when the error is no rows.
func TestSavepoint(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), idemvet.Analyzer, "example.com/app/savepoint")
}

func setFlag(t *testing.T, name, value string) {
	t.Helper()
	if err := idemvet.Analyzer.Flags.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idemvet.Analyzer.Flags.Set(name, "") })
}

// TestWithoutMarkers: a Server generated before the //idemgen:tx lines is
// still found by its pgx.Tx parameters, in a file idemgen generated; its
// mode is unknown, so only the outbound rule is left out.
func TestWithoutMarkers(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), idemvet.Analyzer, "example.com/legacy/svc")
}

// TestDerivedKeys: a generated client's call (a method calling
// idemclient.Do, known by the fact exported on it), idemclient.Do, net/http
// and stripe-go in an atomic operation are accepted when their key is
// derived from the request: the client given the handler's ctx (or one
// made from it) with no key of the caller's, or a key from downstream.Key
// or KeyAs given the handler's ctx, as an option, in the request's key
// field, a header or stripe's params. A context of another origin, a
// fresh, incoming, Derive'd or constant key, an operation without a key
// and a webhook receiver's call are reported; lease mode is not.
func TestDerivedKeys(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), idemvet.Analyzer, "example.com/pay/api", "example.com/app/derived")
}
