// Package testapi is generated from openapi.yaml for the end-to-end tests of
// package webhook: an idempotent POST /notes whose handler sends the
// note.created webhook, and the typed receiver of that webhook.
package testapi

//go:generate go run ../../../../cmd/idemgen generate -config idemgen.yaml
