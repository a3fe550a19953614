// Package conformance checks a running service against idemgen's HTTP
// contract for idempotent requests, driven by the service's OpenAPI
// document: it is what `idemgen conformance` runs.
//
// For every idempotent operation of the spec (POST and PATCH unless opted
// out, and whatever opts in) it sends real requests to the service and
// reports each check as PASS, FAIL or SKIP with the evidence: what it sent
// and what came back. Request bodies come from the spec's examples or are
// generated from the request schema so that they satisfy its constraints;
// Config.Bodies and Config.Fixtures override them per operation, with
// placeholders ({{uuid}}, {{rand}}, {{seq}}, {{run}}) for services whose
// business rules refuse a value twice. Path parameters are filled by
// creating the parent resource through the spec's POST on the parent
// collection (POST /payments for /payments/{paymentId}/refunds), or taken
// from Config.Fixtures and Config.Params; when the parent cannot be
// created, the checks that need it are skipped with the reason, never run
// against an invented id.
//
// A request with a key whose answer the contract says to retry (a 409 in
// flight or lease lost, a 503 outcome unknown, no response) is sent again
// with the same key and body, as a client keeping the contract does,
// before its check judges it (Config.Settle); the evidence says "after N
// attempts". In the concurrent check's burst an in-flight refusal is
// judged as it comes (it is what the check expects); then the key is
// retried until it is final.
//
// The checks (names as printed):
//
//	missing-key             no key on a required operation: 400 IDEMPOTENCY_KEY_REQUIRED, no effect
//	malformed-key/format    a key not in the declared keyFormat: 400 IDEMPOTENCY_KEY_MALFORMED
//	malformed-key/too-long  a key one character too long: 400 IDEMPOTENCY_KEY_MALFORMED
//	malformed-key/repeated  the key header given twice: 400 IDEMPOTENCY_KEY_MALFORMED
//	first-execution         a fresh key runs: a kept status (2xx or replayStatuses), not marked replayed
//	key-echo                the key is echoed in the key header of the first response and of the replay
//	content-digest          Content-Digest is sha-256 of the request body, on the first response and the replay
//	replay                  the same request again: same status, byte-identical body, the declared response headers, Idempotent-Replayed: true, no new effect
//	replay/last-modified    the replay's Last-Modified is present and not after its Date
//	replay/canonical-json   the body with members reordered and white space added (RFC 8785-equal) replays
//	conflict                the same key with another valid body: 409 (422 under profile ietf, 400 under stripe) CONFLICTING_IDEMPOTENT_REQUEST, not the original body
//	quoted-key              the key sent as an RFC 8941 sf-string ("...") replays the bare key's response (under profile stripe: runs as another key)
//	tenants                 the same key under two tenants runs twice, and each tenant replays its own response
//	concurrent              N identical requests at once: one execution, the rest replays or in-flight refusals (409; 429 under stripe) with Retry-After, a final replay after them, one effect
//
// Statuses and error bodies follow the operation's declared profile
// (default, ietf or stripe), read back by idem.Profile.ReadError: a service
// that renders refusals in a shape of its own (idem.Config.Errors) fails
// the checks of refusals.
//
// Requests builds, with the same value generator, one request of the
// spec's own shape for every operation (parameters in their declared
// style, bodies in their media type, a credential), with malformed
// variants; idemgen's tests send them to servers generated from real specs.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/idemgen/idemgen/generator"
)

// Config is one conformance run.
type Config struct {
	// Spec is the OpenAPI document the service implements.
	Spec string
	// SpecData, when set, is used instead of reading Spec.
	SpecData []byte
	// URL is the service's base URL; spec paths are appended to it
	// (http://host:8080 or http://host/v1).
	URL string
	// Client sends the requests; default: an http.Client with Timeout.
	Client *http.Client
	// Timeout bounds each request when Client is nil; default 30s.
	Timeout time.Duration
	// Operations limits the run to these operation ids; default: every
	// idempotent operation.
	Operations []string
	// Bodies overrides the request body of an operation, by operation id;
	// it may hold the placeholders of Fixture.Body ({{uuid}}, {{seq}}...).
	Bodies map[string][]byte
	// Fixtures gives an operation's body and parameters, by operation id
	// (a body here wins over Bodies').
	Fixtures map[string]Fixture
	// Params gives parameter values by parameter name (path, query or
	// header), used before anything derived from the spec and after an
	// operation's Fixture.Params.
	Params map[string]string
	// Header is sent with every request (credentials, say).
	Header http.Header
	// TenantHeader and Tenants enable the tenants check: the header that
	// selects the tenant, and at least two of its values. The first tenant
	// is sent with every other request.
	TenantHeader string
	Tenants      []string
	// Concurrency is the number of identical requests the concurrent check
	// sends at once; default 10.
	Concurrency int
	// Settle bounds how long a request is retried, with the same key and
	// body, while its answer is one the contract says to retry (in flight,
	// lease lost, outcome unknown, a 503, no response: what idemclient
	// retries), counted from the first such answer; at most 20 attempts
	// are made, each after the answer's Retry-After (at most 5s). The
	// checks judge the last answer; the earlier ones are in its
	// Exchange.Earlier. Default 30s.
	Settle time.Duration
}

// Outcome of a check.
type Outcome string

const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP" // not applicable, or not possible with what was given
)

// Result is one check of one operation.
type Result struct {
	Operation string     `json:"operation"`
	Method    string     `json:"method"`
	Path      string     `json:"path"`
	Check     string     `json:"check"`
	Outcome   Outcome    `json:"outcome"`
	Evidence  string     `json:"evidence"`
	Exchanges []Exchange `json:"exchanges,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	Spec    string   `json:"spec"`
	URL     string   `json:"url"`
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped"`
}

// OK reports whether no check failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// Find returns the result of check on operation, or nil.
func (r *Report) Find(operation, check string) *Result {
	for i := range r.Results {
		if r.Results[i].Operation == operation && r.Results[i].Check == check {
			return &r.Results[i]
		}
	}
	return nil
}

// Run loads the spec and checks the service at cfg.URL. The error is for
// what prevents checking at all (an unreadable spec, a bad URL, an unknown
// operation); a service that breaks the contract yields a Report with
// failures.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.URL == "" {
		return nil, errors.New("conformance: the service URL is required")
	}
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("conformance: URL %q: want http(s)://host[:port][/base]", cfg.URL)
	}
	if cfg.TenantHeader != "" && len(cfg.Tenants) < 2 {
		return nil, errors.New("conformance: the tenants check needs at least two tenants")
	}
	spec, err := generator.Load(generator.Config{Spec: cfg.Spec, SpecData: cfg.SpecData})
	if err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		if cfg.Timeout <= 0 {
			cfg.Timeout = 30 * time.Second
		}
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 30 * time.Second
	}
	r := &runner{cfg: cfg, spec: spec, base: strings.TrimSuffix(base.String(), "/"), bodies: newBodies()}
	want := map[string]bool{}
	for _, id := range cfg.Operations {
		want[id] = true
	}
	ids := map[string]bool{}
	for _, o := range spec.Model.Operations {
		ids[o.ID] = true
	}
	var unknown []string
	for id := range want {
		if !ids[id] {
			unknown = append(unknown, id)
		}
	}
	for id := range cfg.Bodies {
		if !ids[id] {
			unknown = append(unknown, id)
		}
	}
	bodies := map[string][]byte{}
	for id, b := range cfg.Bodies {
		bodies[id] = b
	}
	for id, f := range cfg.Fixtures {
		if !ids[id] {
			unknown = append(unknown, id)
		} else if f.Body != nil {
			bodies[id] = f.Body
		}
	}
	cfg.Bodies, r.cfg.Bodies = bodies, bodies
	for _, id := range sortedMapKeys(cfg.Bodies) {
		if _, err := templated(cfg.Bodies[id]); err != nil {
			return nil, fmt.Errorf("conformance: the body given for %s: %w", id, err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("conformance: %s: no operation %s", cfg.Spec, strings.Join(unknown, ", "))
	}

	rep := &Report{Spec: cfg.Spec, URL: cfg.URL}
	for _, o := range spec.Model.Operations {
		if len(want) > 0 && !want[o.ID] {
			continue
		}
		switch {
		case o.Idempotent:
			rep.Results = append(rep.Results, r.operation(ctx, o)...)
		case o.Method == http.MethodPost || o.Method == http.MethodPatch:
			rep.Results = append(rep.Results, Result{Operation: o.ID, Method: o.Method, Path: o.Path, Check: "idempotent",
				Outcome: Skip, Evidence: "not idempotent (x-idempotent: false): nothing to check"})
		case want[o.ID]:
			return nil, fmt.Errorf("conformance: operation %q (%s %s) is not idempotent", o.ID, o.Method, o.Path)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	for _, res := range rep.Results {
		switch res.Outcome {
		case Pass:
			rep.Passed++
		case Fail:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	return rep, nil
}
