package idem

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
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
// database clock: GetRecord computes them.
func (e *Engine) classify(rq *request, rec *store.GetRecordRow) (action, error) {
	if !rec.SameKey {
		return actError, errIDCollision
	}
	pol := &rq.op.Policy
	state := State(rec.State)
	live := state == StateInProgress || state == StateUnknown
	if !live && (rec.Expired || state == StateExpired) {
		rq.expired = true
		if pol.OnExpired == ExpiredReject {
			return actError, ErrExpired
		}
		return actClaim, nil
	}
	if !rec.SameRequest {
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
	return actInFlight, withRetryAfter(ErrInFlight, time.Duration(rec.LeaseLeftMs)*time.Millisecond)
}

// replay writes a stored outcome.
func (e *Engine) replay(rq *request, rec *store.GetRecordRow) error {
	if rec.SchemaVersion != rq.op.Policy.SchemaVersion && rq.op.Policy.OnSchemaChange == SchemaChangeReject {
		return fmt.Errorf("%w: stored %q, current %q", ErrSchemaChanged, rec.SchemaVersion, rq.op.Policy.SchemaVersion)
	}
	hj, body, err := decodeResponse(rq.r.Context(), e.cfg.Sealer, rq.key, int(rec.ResponseStatus), rec.ResponseHeaders, rec.ResponseBody)
	if err != nil {
		return err
	}
	resp := &Response{Status: int(rec.ResponseStatus), Header: http.Header{}, Body: body}
	if len(hj) > 0 {
		hdr, err := e.storedHeaders(hj)
		if err != nil {
			return fmt.Errorf("idem: stored response headers: %w", err)
		}
		for k, v := range hdr {
			resp.Header[k] = append([]string(nil), v...) // the cache's slices stay unshared
		}
	}
	rq.outcome = Outcome{Result: ResultReplayed, State: State(rec.State), Status: resp.Status, Replayed: true}
	if !rq.handedOver {
		// For the duplicates waiting in this process, and, when it was
		// read from PostgreSQL, for the cache (cacheAfter).
		rq.committed = &cached{state: State(rec.State), fingerprint: rq.fp, completedAt: rec.CompletedAt.Time,
			status: rec.ResponseStatus, schema: rec.SchemaVersion, headers: rec.ResponseHeaders, body: rec.ResponseBody,
			left: time.Duration(rec.ExpiresLeftMs) * time.Millisecond, leftAt: time.Now()}
	}
	rq.storedAt = rec.CompletedAt.Time
	_, done := e.obs.enter(rq.r.Context(), rq, phaseReplay)
	e.writeResponse(rq, resp, &replayInfo{completedAt: rec.CompletedAt.Time})
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
