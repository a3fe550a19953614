package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/tutorial/api"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Service implements the operations of openapi.yaml (api.Server).
type Service struct {
	db      *pgxpool.Pool
	carrier *Carrier
}

var _ api.Server = (*Service)(nil)

// CreateOrder reserves the stock of every item and records the order, in
// tx: the transaction that also stores the idempotency record. Stock is
// reserved under a savepoint: when an item is short, the reservations made
// so far and the order row roll back to it, and the 422 (a replayStatus:
// a final answer) commits alone with its record, so a retry gets the same
// 422 and nothing was reserved.
func (s *Service) CreateOrder(ctx context.Context, tx pgx.Tx, req api.CreateOrderRequest) (api.CreateOrderResponse, error) {
	tenant, id := tenantFrom(ctx), uuid.New()
	sp, err := tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return nil, err
	}
	items, err := json.Marshal(req.Body.Items)
	if err != nil {
		return nil, err
	}
	if _, err := sp.Exec(ctx, `INSERT INTO orders (tenant, id, items) VALUES ($1, $2, $3)`, tenant, id, items); err != nil {
		return nil, fmt.Errorf("insert order: %w", err)
	}
	for _, it := range req.Body.Items {
		tag, err := sp.Exec(ctx, `UPDATE stock SET available = available - $3
			WHERE tenant = $1 AND sku = $2 AND available >= $3`, tenant, it.Sku, it.Quantity)
		if err != nil {
			return nil, fmt.Errorf("reserve %s: %w", it.Sku, err)
		}
		if tag.RowsAffected() == 0 {
			if err := sp.Rollback(ctx); err != nil { // ROLLBACK TO SAVEPOINT
				return nil, err
			}
			return api.CreateOrder422Response{Body: api.Error{Code: "out_of_stock",
				Message: fmt.Sprintf("%d × %s are not available", it.Quantity, it.Sku)}}, nil
		}
	}
	if err := sp.Commit(ctx); err != nil { // RELEASE SAVEPOINT
		return nil, err
	}
	return api.CreateOrder201Response{Body: api.Order{ID: id, Items: req.Body.Items}}, nil
}

// GetOrder reads one of the tenant's orders. It is not idempotent (a GET):
// no tx, the pool.
func (s *Service) GetOrder(ctx context.Context, req api.GetOrderRequest) (api.GetOrderResponse, error) {
	tenant := tenantFrom(ctx)
	var items []byte
	err := s.db.QueryRow(ctx, `SELECT items FROM orders WHERE tenant = $1 AND id = $2`, tenant, req.OrderID).Scan(&items)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.GetOrder404Response{Body: api.Error{Code: "not_found", Message: "no such order"}}, nil
	}
	if err != nil {
		return nil, err
	}
	o := api.Order{ID: req.OrderID}
	if err := json.Unmarshal(items, &o.Items); err != nil {
		return nil, err
	}
	return api.GetOrder200Response{Body: o}, nil
}

// pointLabelled is createShipment's recovery point: the carrier booked a
// label (the data is the label, as JSON).
const pointLabelled = "labelled"

// carrierKey is the key the carrier deduplicates by: the request's
// idempotency key within its tenant.
func carrierKey(ctx context.Context) string {
	k, _ := idem.KeyFromContext(ctx)
	return k.Tenant + "/" + k.Value
}

// CreateShipment books the order's shipment with the carrier, then records
// it in tx. Lease mode: the engine committed a claim before this runs, so a
// duplicate cannot book a second label while this one is in flight, and
// after a crash the retry asks RecoverCreateShipment first.
func (s *Service) CreateShipment(ctx context.Context, tx pgx.Tx, req api.CreateShipmentRequest) (api.CreateShipmentResponse, error) {
	tenant := tenantFrom(ctx)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders WHERE tenant = $1 AND id = $2)`, tenant, req.OrderID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return api.CreateShipment404Response{Body: api.Error{Code: "not_found", Message: "no such order"}}, nil
	}
	var label Label
	if point, data, ok := idem.RecoveryPointFrom(ctx); ok && point == pointLabelled {
		// An earlier attempt booked the label and died before recording it.
		if err := json.Unmarshal(data, &label); err != nil {
			return nil, fmt.Errorf("recovery point %q: %w", point, err)
		}
	} else {
		var err error
		if label, err = s.carrier.Book(ctx, carrierKey(ctx), req.Body.Address); err != nil {
			// A 5xx is not kept: the retry asks the recovery hook, which
			// finds the label if the carrier booked it despite the error.
			return api.CreateShipment502Response{Body: api.Error{Code: "carrier_unavailable",
				Message: "the carrier did not answer; retry with the same Idempotency-Key"}}, nil
		}
	}
	id := uuid.New()
	if _, err := tx.Exec(ctx, `INSERT INTO shipments (tenant, id, order_id, tracking_number) VALUES ($1, $2, $3, $4)`,
		tenant, id, req.OrderID, label.TrackingNumber); err != nil {
		return nil, fmt.Errorf("insert shipment: %w", err)
	}
	return api.CreateShipment201Response{Body: api.Shipment{ID: id, OrderID: req.OrderID, TrackingNumber: label.TrackingNumber}}, nil
}

// RecoverCreateShipment is createShipment's recovery hook (idem.RecoverFunc):
// a retry took over a claim whose holder died, or follows an attempt that
// failed after calling the carrier. It asks the carrier whether it booked
// the key: a label found is handed to the handler as the recovery point, so
// the label is recorded, never booked twice; a carrier that cannot be asked
// makes the outcome UNKNOWN (503, asked again on the next retry).
func (s *Service) RecoverCreateShipment(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
	if rec.HasPoint && rec.Point == pointLabelled {
		return idem.NotExecuted(), nil
	}
	label, ok, err := s.carrier.Lookup(ctx, carrierKey(ctx))
	if err != nil {
		return idem.Unknown(), fmt.Errorf("recover createShipment: ask the carrier: %w", err)
	}
	if ok {
		data, err := json.Marshal(label)
		if err != nil {
			return idem.Unknown(), err
		}
		if err := idem.SaveRecoveryPoint(ctx, pointLabelled, data); err != nil {
			return idem.Unknown(), err
		}
	}
	return idem.NotExecuted(), nil
}
