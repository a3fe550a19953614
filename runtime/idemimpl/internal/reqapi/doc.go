// Package reqapi is generated from openapi.yaml for the tests of request
// decoding, validation and fingerprinting over real HTTP and PostgreSQL, and
// for FuzzGeneratedRequests, which fuzzes the generated decoders and the
// fingerprint together.
package reqapi

//go:generate go run ../../../../cmd/idemgen generate -config idemgen.yaml
