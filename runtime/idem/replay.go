package idem

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type action int

const (
	actReplay   action = iota // a stored final outcome: replay it
	actError                  // the request is refused with the error
	actClaim                  // the record may be claimed: try the claim (again)
	actInFlight               // another request holds the key now
)

// classify decides what a request does with an existing record. Expiry,
// leases and the Retry-After of a request in flight are judged by the
// database clock: GetRecord reads its now() with the record (recordOf).
func (e *Engine) classify(rq *request, rec *record) (action, error) {
	if !rec.sameKey {
		return actError, errIDCollision
	}
	pol := &rq.op.Policy
	state := rec.state
	live := state == StateInProgress || state == StateUnknown
	if !live && (rec.expired || state == StateExpired) {
		rq.expired = true
		if pol.OnExpired == ExpiredReject {
			return actError, ErrExpired
		}
		return actClaim, nil
	}
	if !rec.sameRequest {
		return actError, ErrFingerprintMismatch
	}
	switch state {
	case StateCompleted, StateFailedReplayable:
		return actReplay, nil
	case StateFailedRetryable:
		return actClaim, nil
	case StateUnknown, StateInProgress:
		if rq.mode.claimsLive(rec) {
			return actClaim, nil
		}
	}
	return actInFlight, withRetryAfter(ErrInFlight, rec.leaseLeft)
}

// replay writes a stored outcome.
func (e *Engine) replay(rq *request, rec *record) error {
	if rec.schema != rq.op.Policy.SchemaVersion && rq.op.Policy.OnSchemaChange == SchemaChangeReject {
		return fmt.Errorf("%w: stored %q, current %q", ErrSchemaChanged, rec.schema, rq.op.Policy.SchemaVersion)
	}
	hj, body, err := decodeResponse(rq.r.Context(), e.cfg.Sealer, rq.key, int(rec.status), rec.headers, rec.body)
	if err != nil {
		return err
	}
	resp := &Response{Status: int(rec.status), Header: http.Header{}, Body: body}
	if len(hj) > 0 {
		hdr, err := e.storedHeaders(hj)
		if err != nil {
			return fmt.Errorf("idem: stored response headers: %w", err)
		}
		for k, v := range hdr {
			resp.Header[k] = append([]string(nil), v...) // the cache's slices stay unshared
		}
	}
	rq.outcome = Outcome{Result: ResultReplayed, State: rec.state, Status: resp.Status, Replayed: true}
	if !rq.dup.handedOver {
		// For the duplicates waiting in this process, and, when it was
		// read from PostgreSQL, for the cache (cacheAfter).
		rq.committed = &cached{state: rec.state, fingerprint: rq.fp, completedAt: rec.completedAt,
			status: rec.status, schema: rec.schema, headers: rec.headers, body: rec.body,
			left: rec.left, leftAt: time.Now()}
	}
	rq.storedAt = rec.completedAt
	_, done := e.obs.enter(rq.r.Context(), rq, phaseReplay)
	e.writeResponse(rq, resp, &replayInfo{completedAt: rec.completedAt})
	done(nil)
	return nil
}

// maxHeaderCache bounds Engine.headers. Stored header sets repeat (one or a
// few per operation), so a small cache serves nearly every replay.
const maxHeaderCache = 256

// storedHeaders decodes a record's stored headers (canonical names, never
// the neverStored ones), through a cache: decoding JSON was the largest
// engine cost of a replay. The result is shared and must not be modified.
func (e *Engine) storedHeaders(raw []byte) (map[string][]string, error) {
	if v, ok := e.headers.Load(string(raw)); ok {
		return v.(map[string][]string), nil
	}
	var hdr map[string][]string
	if err := json.Unmarshal(raw, &hdr); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(hdr))
	for k, v := range hdr {
		if c := http.CanonicalHeaderKey(k); !neverStored[c] {
			out[c] = v
		}
	}
	if e.headerN.Load() < maxHeaderCache {
		if _, loaded := e.headers.LoadOrStore(string(raw), out); !loaded {
			e.headerN.Add(1)
		}
	}
	return out, nil
}
