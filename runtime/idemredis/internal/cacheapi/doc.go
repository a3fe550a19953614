// Package cacheapi is generated from openapi.yaml for the tests of the
// engine's cache (idem.Config.Cache through runtime/idemredis) against a
// generated server, a real Redis and a real PostgreSQL: entries copied,
// edited or forged in Redis, services on two databases sharing one Redis,
// Redis faults under a retrying duplicate load, and a typed-nil cache.
package cacheapi

//go:generate go run ../../../../cmd/idemgen generate -config idemgen.yaml
