package e2e

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/examples/payments/internal/harness"
)

// TestChargedThenRecordFails: createPayment charges the card at the gateway,
// then its INSERT of the payment fails, in the two ways a database restart
// under load produced: the statement errors while the connection stays
// open, or the backend is killed. The client retries with the same key.
// The retry must not charge again: the engine runs the recovery hook first,
// which finds the charge at the gateway, and the handler records that
// charge. What the gateway saw of the key (KeyAudit) proves it: one call
// reached the charging step, and its caller was told the outcome.
func TestChargedThenRecordFails(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	// A trigger makes the payment's INSERT fail for the keys listed in
	// fail_payment: an error, or its own backend terminated.
	if _, err := s.db.Exec(ctx, `
		CREATE TABLE fail_payment (idempotency_key text PRIMARY KEY, how text NOT NULL);
		CREATE FUNCTION fail_payment() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE how text;
		BEGIN
			SELECT f.how INTO how FROM fail_payment f WHERE f.idempotency_key = NEW.idempotency_key;
			IF how = 'error' THEN
				RAISE EXCEPTION 'payment % refused by the test', NEW.idempotency_key;
			ELSIF how = 'kill' THEN
				PERFORM pg_terminate_backend(pg_backend_pid());
				PERFORM pg_sleep(5);
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fail_payment BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION fail_payment();`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		how    string
		status int
		reason string
	}{
		{"error", 500, "INTERNAL_ERROR"},
		{"kill", 503, "IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN"},
	} {
		t.Run(tc.how, func(t *testing.T) {
			k := harness.NewKey()
			if _, err := s.db.Exec(ctx, `INSERT INTO fail_payment VALUES ($1, $2)`, k, tc.how); err != nil {
				t.Fatal(err)
			}
			first := mustDo(t, s.c, "POST", "/payments", k, newPayment(4300))
			p, _ := first.Problem()
			if first.Status != tc.status || p.Reason != tc.reason {
				t.Fatalf("first attempt: %d %s, want %d %s", first.Status, first.RespBody, tc.status, tc.reason)
			}
			charged, ok, _ := s.gw.Lookup(ctx, k)
			if !ok {
				t.Fatal("the first attempt did not reach the gateway's charge")
			}
			if _, err := s.db.Exec(ctx, `DELETE FROM fail_payment WHERE idempotency_key = $1`, k); err != nil {
				t.Fatal(err)
			}
			retry := mustDo(t, s.c, "POST", "/payments", k, newPayment(4300))
			wantStatus(t, retry, 201)
			var pay paymentBody
			_ = retry.Decode(&pay)
			if pay.ChargeID != charged.ID {
				t.Errorf("payment charge %s, gateway charge %s", pay.ChargeID, charged.ID)
			}
			a := s.gw.Audit()[k]
			if a.Raw != 1 || a.Ambiguous != 0 || a.Calls != 1 {
				t.Errorf("gateway saw %d charge calls, %d reached the charge (%d left the caller unsure): the retry charged again",
					a.Calls, a.Raw, a.Ambiguous)
			}
			if l := readLedger(t, s.db); l.count[k] != 1 {
				t.Errorf("ledger holds %d payments for the key", l.count[k])
			}
		})
	}
}
