// Package downstream is a stub of idemgen's runtime/downstream.
package downstream

import "context"

type Format func(sum [32]byte) string

var UUID Format

type Record struct{ Tenant, Operation, Key string }

func Key(ctx context.Context, site string) (string, error) { return site, nil }

func KeyAs(ctx context.Context, site string, f Format) (string, error) { return site, nil }

func Derive(secret []byte, rec Record, site string, f Format) (string, error) { return site, nil }
