package idem

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ResultNotIdempotent is the Result of a request to an operation that is
// not idempotent (a GET, an opted-out POST), seen through Engine.Plain.
const ResultNotIdempotent Result = "not_idempotent"

// Plain lets the engine see a request of an operation that is not
// idempotent — a GET, a POST with `x-idempotent: false` — which it does not
// otherwise serve: the request gets the observers' context (a trace span,
// the in-flight gauge), and once the response is written done reports it
// like a keyed request — the log line, the metrics, Hooks.OnOutcome — with
// the outcome "not_idempotent", or "failed" for a 5xx. Generated handlers
// call it first:
//
//	w, r, done := h.engine.Plain(w, r, "listPayments")
//	defer done()
//
// A nil engine returns w and r as they are and a done that does nothing.
func (e *Engine) Plain(w http.ResponseWriter, r *http.Request, operationID string) (http.ResponseWriter, *http.Request, func()) {
	if e == nil {
		return w, r, func() {}
	}
	op := e.plainOperation(operationID, r)
	// One allocation for the request, its writer and what done needs.
	p := &plainRequest{e: e, request: request{op: op, r: r, start: time.Now()}}
	if len(e.cfg.Observers) > 0 {
		var ctx context.Context
		ctx, p.observed = observers(e.cfg.Observers).request(r.Context(), op)
		p.r = r.WithContext(ctx)
	}
	p.sw.ResponseWriter, p.sw.rq = w, &p.request
	p.w = &p.sw
	return &p.sw, p.r, p.done
}

// plainRequest is a request Plain sees.
type plainRequest struct {
	request
	e        *Engine
	sw       statusWriter
	observed func(Outcome)
}

// done reports the request once its response is written.
func (p *plainRequest) done() {
	rq, sw := &p.request, &p.sw
	status := sw.status
	if status == 0 {
		status = http.StatusOK // net/http's answer when the handler writes nothing
	}
	rq.outcome = Outcome{Result: ResultNotIdempotent, Status: status, Err: sw.err}
	rq.bytes = sw.bytes // report copies it to the outcome
	if status >= 500 || errors.Is(sw.err, ErrClientGone) {
		rq.outcome.Result = ResultFailed
	}
	ctx := rq.r.Context()
	p.e.report(ctx, rq)
	if p.observed != nil {
		p.observed(rq.outcome)
	}
	if h := p.e.cfg.Hooks.OnOutcome; h != nil {
		h(ctx, rq.op, rq.outcome)
	}
}

// plainOperations caches the descriptors Plain builds, by operation id and
// route pattern, so that observers see one *Operation per operation.
var plainOperations sync.Map // [2]string{id, pattern} -> *Operation

func (e *Engine) plainOperation(id string, r *http.Request) *Operation {
	k := [2]string{id, r.Pattern}
	if op, ok := plainOperations.Load(k); ok {
		return op.(*Operation)
	}
	pattern := r.Pattern
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = pattern[i+1:] // "GET /payments" is the route /payments
	}
	op, _ := plainOperations.LoadOrStore(k, &Operation{ID: id, Method: r.Method, Pattern: pattern})
	return op.(*Operation)
}

// statusWriter records the status and the body size a handler writes, and
// the error WriteError answered through it, which the request's log line
// then carries (with the operation) instead of a line of its own.
type statusWriter struct {
	http.ResponseWriter
	rq            *request
	status, bytes int
	err           error
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
