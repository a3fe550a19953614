// Package pgpipe is the engine's pipelined transport over pgx: a connection
// held for one request (Conn), the pgx.Tx handed to handlers on it (Tx,
// whose BEGIN travels with the first statement, and savepoints for nested
// transactions), and Batch, which sends one statement between fixed ones
// (BEGIN before, COMMIT after) in a single round trip. It knows nothing of
// idempotency records: the engine's session (runtime/idem's pipeline.go)
// decides what goes in which batch.
package pgpipe
