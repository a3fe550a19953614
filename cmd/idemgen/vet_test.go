package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bookingsSpec declares six atomic operations, implemented below: four
// with one of the handler mistakes of issue 34 each, two calling the
// refunds service (refundsSpec) through its generated client.
const bookingsSpec = `openapi: 3.1.0
info: {title: Bookings, version: 1.0.0}
x-idempotent: {mode: atomic}
paths:
  /bookings:
    post:
      operationId: createBooking
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Booking'}}}}
      responses:
        '201': {description: Booked., content: {application/json: {schema: {$ref: '#/components/schemas/Booking'}}}}
  /bookings/{id}/cancel:
    post:
      operationId: cancelBooking
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: Cancelled.}
  /holds:
    post:
      operationId: createHold
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Booking'}}}}
      responses:
        '201': {description: Held.}
        '409': {description: The room is held already.}
  /reservations:
    post:
      operationId: reserveRoom
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Booking'}}}}
      responses:
        '201': {description: Reserved.}
        '409': {description: The room is taken then.}
  /bookings/{id}/refund:
    post:
      operationId: refundBooking
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: Refunded.}
  /bookings/{id}/void:
    post:
      operationId: voidBooking
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: Voided.}
components:
  schemas:
    Booking:
      type: object
      required: [room]
      properties:
        id: {type: integer}
        room: {type: string}
`

// refundsSpec is another service's: its client is generated into the
// bookings module (package refunds).
const refundsSpec = `openapi: 3.1.0
info: {title: Refunds, version: 1.0.0}
x-idempotent: {mode: atomic}
paths:
  /refunds:
    post:
      operationId: createRefund
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Refund'}}}}
      responses:
        '201': {description: Refunded., content: {application/json: {schema: {$ref: '#/components/schemas/Refund'}}}}
components:
  schemas:
    Refund:
      type: object
      required: [booking]
      properties:
        booking: {type: integer}
`

// bookingsService makes the mistakes: a write through the pool (1), a
// call to another service in an atomic operation (2), a unique violation
// (3) and an exclusion violation (4) answered with 409 without a
// savepoint, a call of the refunds service under a fresh key (5). Its
// calls of the refunds service with derived keys, the generated client's
// own and downstream.Key's, are fine. The lines ending in a marker
// comment are where idemgen vet must point.
const bookingsService = `package bookings

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idemclient"

	"example.com/bookings/api"
	"example.com/bookings/refunds"
)

type Service struct {
	db      *pgxpool.Pool
	client  *http.Client
	refunds *refunds.Client
}

var _ api.Server = (*Service)(nil)

func (s *Service) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	b := req.Body
	err := s.db.QueryRow(ctx, "INSERT INTO bookings (room) VALUES ($1) RETURNING id", b.Room).Scan(&b.ID) // mistake 1
	if err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{Body: b}, nil
}

func (s *Service) CancelBooking(ctx context.Context, tx pgx.Tx, req api.CancelBookingRequest) (api.CancelBookingResponse, error) {
	if _, err := tx.Exec(ctx, "DELETE FROM bookings WHERE id = $1", req.ID); err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("http://payments/refunds?booking=%d", req.ID), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(r) // mistake 2
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return api.CancelBooking200Response{}, nil
}

func (s *Service) CreateHold(ctx context.Context, tx pgx.Tx, req api.CreateHoldRequest) (api.CreateHoldResponse, error) {
	_, err := tx.Exec(ctx, "INSERT INTO holds (room) VALUES ($1)", req.Body.Room) // mistake 3
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // inspected 3
		return api.CreateHold409Response{}, nil // answered 3
	}
	if err != nil {
		return nil, err
	}
	return api.CreateHold201Response{}, nil
}

func (s *Service) ReserveRoom(ctx context.Context, tx pgx.Tx, req api.ReserveRoomRequest) (api.ReserveRoomResponse, error) {
	if err := s.reserve(ctx, tx, req.Body.Room); err != nil {
		return nil, err
	}
	return api.ReserveRoom201Response{}, nil
}

func (s *Service) reserve(ctx context.Context, tx pgx.Tx, room string) error {
	var id int64
	err := tx.QueryRow(ctx, "INSERT INTO reservations (room) VALUES ($1) RETURNING id", room).Scan(&id) // mistake 4
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) { // inspected 4
		switch pgErr.Code {
		case "23P01":
			return nil // answered 4
		}
	}
	return err
}

func (s *Service) RefundBooking(ctx context.Context, tx pgx.Tx, req api.RefundBookingRequest) (api.RefundBookingResponse, error) {
	// The generated client derives the key from this request's.
	if _, err := s.refunds.CreateRefund(ctx, refunds.CreateRefundRequest{Body: refunds.Refund{Booking: req.ID}}); err != nil {
		return nil, err
	}
	fee, err := downstream.Key(ctx, "refunds/fee")
	if err != nil {
		return nil, err
	}
	if _, err := s.refunds.CreateRefund(ctx, refunds.CreateRefundRequest{Body: refunds.Refund{Booking: -req.ID}}, idemclient.WithIdempotencyKey(fee)); err != nil {
		return nil, err
	}
	return api.RefundBooking200Response{}, nil
}

func (s *Service) VoidBooking(ctx context.Context, tx pgx.Tx, req api.VoidBookingRequest) (api.VoidBookingResponse, error) {
	fresh, err := idemclient.NewKey("uuid")
	if err != nil {
		return nil, err
	}
	if _, err := s.refunds.CreateRefund(ctx, refunds.CreateRefundRequest{Body: refunds.Refund{Booking: req.ID}}, idemclient.WithIdempotencyKey(fresh)); err != nil { // mistake 5
		return nil, err
	}
	return api.VoidBooking200Response{}, nil
}
`

// mark is where expr starts on the line of src ending in the comment
// "// mark": "service.go:LINE:COL", and that line.
func mark(t *testing.T, src, mark, expr string) (pos string, line int) {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.HasSuffix(l, "// "+mark) {
			col := strings.Index(l, expr)
			if col < 0 {
				t.Fatalf("line %q has no %q", l, expr)
			}
			return fmt.Sprintf("service.go:%d:%d", i+1, col+1), i + 1
		}
	}
	t.Fatalf("no line marked %q", mark)
	return "", 0
}

// bookingsFindings are the five findings idemgen vet must print for
// bookingsService, in order.
func bookingsFindings(t *testing.T) []string {
	p1, _ := mark(t, bookingsService, "mistake 1", "s.db.QueryRow")
	p2, _ := mark(t, bookingsService, "mistake 2", "s.client.Do")
	p3, _ := mark(t, bookingsService, "mistake 3", "tx.Exec")
	_, i3 := mark(t, bookingsService, "inspected 3", "errors.As")
	_, a3 := mark(t, bookingsService, "answered 3", "return")
	p4, _ := mark(t, bookingsService, "mistake 4", "tx.QueryRow")
	p5, _ := mark(t, bookingsService, "mistake 5", "s.refunds.CreateRefund")
	_, i4 := mark(t, bookingsService, "inspected 4", "errors.As")
	_, a4 := mark(t, bookingsService, "answered 4", "return")
	savepoint := "but PostgreSQL has aborted the transaction (SQLSTATE 25P02): storing %s's idempotency record fails, a 500; run the statement in a savepoint (sp, err := tx.Begin(ctx); on its error sp.Rollback(ctx), else sp.Commit(ctx))"
	return []string{
		p1 + ": CreateBooking: s.db.QueryRow runs outside tx, the transaction that also stores createBooking's idempotency record: what it writes commits even when the request fails, and the retry writes it again; use tx",
		p2 + ": CancelBooking: s.client.Do calls out of the process in cancelBooking, an atomic operation: it runs again when the client hangs up or the transaction rolls back after it returned (the retry runs the handler anew); if the other side is idempotent by key, send it a key derived from this request (downstream.Key, or a generated client given the handler's ctx: docs/downstream.md), else use x-idempotent mode: lease with a recovery hook (idem.Config.Recover)",
		fmt.Sprintf("%s: CreateHold: the error of tx.Exec is handled (service.go:%d) and returns without an error at service.go:%d, "+savepoint, p3, i3, a3, "createHold"),
		fmt.Sprintf("%s: ReserveRoom → s.reserve: the error of tx.QueryRow is handled (service.go:%d) and returns without an error at service.go:%d, "+savepoint, p4, i4, a4, "reserveRoom"),
		p5 + ": VoidBooking: s.refunds.CreateRefund may act twice in voidBooking, an atomic operation: its idempotency key fresh is not derived from this request, so a retry of the handler does not send the call the key it sent before; it gets a derived key without an explicit key (the client derives one from the handler's ctx) or with one from downstream.Key (docs/downstream.md)",
	}
}

// bookingsModule writes the module of bookingsService, its server
// generated, its dependencies tidied.
func bookingsModule(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/bookings\n\ngo 1.26.0\n\n"+
		"require github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/idemgen/idemgen => "+repo+"\n")
	write(t, filepath.Join(dir, "openapi.yaml"), bookingsSpec)
	write(t, filepath.Join(dir, "service.go"), bookingsService)
	write(t, filepath.Join(dir, "refunds.yaml"), refundsSpec)
	if code, _, stderr := runCmd(t, "generate", "-spec", filepath.Join(dir, "openapi.yaml"), "-output", filepath.Join(dir, "api")); code != 0 {
		t.Fatalf("generate: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "generate", "-spec", filepath.Join(dir, "refunds.yaml"), "-output", filepath.Join(dir, "refunds"), "-package", "refunds", "-client"); code != 0 {
		t.Fatalf("generate refunds: exit %d\n%s", code, stderr)
	}
	goCmd(t, dir, nil, "mod", "tidy")
	return dir
}

// TestVet: idemgen vet reports the five mistakes of bookingsService, each
// at its statement with its message, and exits 1; go vet with idemgen as
// its vet tool reports the same; an idemgen init project passes both
// (the examples pass make test's vet-handlers).
func TestVet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modules (-short)")
	}
	bin := binary(t)
	dir := bookingsModule(t)
	want := bookingsFindings(t)
	code, stdout, stderr := execute(t, dir, "vet", "./...")
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); code != 1 || stderr != "" || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("idemgen vet: exit %d, stderr %q, stdout:\n%s\nwant exit 1 and:\n%s", code, stderr, stdout, strings.Join(want, "\n"))
	}

	vet := func(dir string) (int, string) {
		cmd := exec.Command("go", "vet", "-vettool="+bin, "./...")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("go vet: %v\n%s", err, out)
		return 0, ""
	}
	code, out := vet(dir)
	for _, w := range want {
		if !strings.Contains("\n"+out, "\n"+w+"\n") {
			t.Errorf("go vet -vettool=idemgen: exit %d, output lacks\n%s\n--- output:\n%s", code, w, out)
		}
	}
	if code != 1 {
		t.Errorf("go vet -vettool=idemgen: exit %d, want 1", code)
	}

	initDir, _ := initProject(t)
	goCmd(t, initDir, nil, "mod", "tidy")
	if code, stdout, stderr := execute(t, initDir, "vet", "./..."); code != 0 || stdout+stderr != "" {
		t.Errorf("idemgen vet in an init project: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, out := vet(initDir); code != 0 || out != "" {
		t.Errorf("go vet -vettool=idemgen in an init project: exit %d\n%s", code, out)
	}
}
