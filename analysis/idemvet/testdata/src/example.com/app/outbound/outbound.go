package outbound

import (
	"context"
	"net/http"
	"strings"

	"example.com/app/api"
	"example.com/sdk"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
)

type deps struct {
	client *http.Client
	cc     *grpc.ClientConn
	pay    *sdk.Client
}

// Calls out of the process in an atomic operation.

type atomic struct{ deps }

func (s *atomic) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if _, err := http.Post("http://rooms/hold", "text/plain", strings.NewReader(req.Room)); err != nil { // want `CreateBooking: http.Post calls out of the process in createBooking, an atomic operation: it runs again when the client hangs up or the transaction rolls back after it returned \(the retry runs the handler anew\); if the other side is idempotent by key, send it a key derived from this request \(downstream.Key, or a generated client given the handler's ctx: docs/downstream.md\), else use x-idempotent mode: lease with a recovery hook \(idem.Config.Recover\)`
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, "POST", "http://rooms/hold", nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.client.Do(r); err != nil { // want `CreateBooking: s.client.Do calls out of the process`
		return nil, err
	}
	if err := s.cc.Invoke(ctx, "/rooms.Hold", nil, nil); err != nil { // want `s.cc.Invoke calls out of the process`
		return nil, err
	}
	if err := s.pay.Refund(ctx, "", 100); err != nil { // want `s.pay.Refund calls out of the process`
		return nil, err
	}
	if err := s.notify(ctx); err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{}, nil
}

func (s *atomic) notify(ctx context.Context) error {
	_, err := s.client.Get("http://rooms/notify") // want `CreateBooking → s.notify: s.client.Get calls out of the process`
	return err
}

// A webhook receiver is retried by its sender when its transaction rolls back.
func (s *atomic) BookingMade(ctx context.Context, tx pgx.Tx, payload api.CreateBookingRequest) error {
	_, err := http.Get("http://rooms/made") // want `BookingMade: http.Get calls out of the process in the receiver of webhook booking.made: .* send it through the outbox in tx \(events.Enqueue\) instead`
	return err
}

// What is fine: lease mode, a GET, a call that carries a derived key.

func (s *atomic) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if _, err := http.Post("http://cards/charge", "text/plain", nil); err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{}, s.notify(ctx)
}

func (s *atomic) GetBooking(ctx context.Context, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	_, err := http.Get("http://rooms/" + req.Room)
	return nil, err
}

type keyed struct{ deps }

func (s *keyed) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if err := s.pay.Refund(ctx, sdk.DownstreamKey(ctx, "refund"), 100); err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, "POST", "http://rooms/hold", nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Idempotency-Key", sdk.DownstreamKey(ctx, "hold"))
	if _, err := s.client.Do(r); err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{}, nil
}
