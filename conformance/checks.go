package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// checker runs the checks of one operation and collects their results.
type checker struct {
	p       *opRun
	results []Result
}

func (c *checker) add(check string, out Outcome, evidence string, exs ...*Exchange) {
	res := Result{Operation: c.p.o.ID, Method: c.p.o.Method, Path: c.p.o.Path, Check: check, Outcome: out, Evidence: evidence}
	for _, e := range exs {
		if e != nil {
			res.Exchanges = append(res.Exchanges, *e)
		}
	}
	c.results = append(c.results, res)
}

// verdict adds check as PASS with ok, or FAIL with the problems found.
func (c *checker) verdict(check, ok string, problems []string, exs ...*Exchange) {
	if len(problems) == 0 {
		c.add(check, Pass, ok, exs...)
		return
	}
	c.add(check, Fail, strings.Join(problems, "; "), exs...)
}

// operation runs every check on one idempotent operation.
func (r *runner) operation(ctx context.Context, o *model.Operation) []Result {
	c := &checker{p: r.prepare(o)}
	c.missingKey(ctx)
	c.malformedKeys(ctx)
	c.sequence(ctx)
	c.quotedKey(ctx)
	c.tenants(ctx)
	c.concurrent(ctx)
	return c.results
}

// fixture builds a fresh request, or reports why it cannot under check.
func (c *checker) fixture(ctx context.Context, check string) (request, bool) {
	return c.fixtureFor(ctx, check, "")
}

// fixtureFor builds a fresh request whose resources belong to tenant.
func (c *checker) fixtureFor(ctx context.Context, check, tenant string) (request, bool) {
	q, exs, err := c.p.fixture(ctx, 0, tenant)
	var pe *prerequisiteError
	var ub unbuildable
	switch {
	case errors.As(err, &pe):
		c.add(check, Skip, "prerequisite failed: "+err.Error(), exs...)
		return q, false
	case errors.As(err, &ub):
		c.add(check, Skip, "no valid request can be generated: "+err.Error(), exs...)
		return q, false
	case err != nil:
		c.add(check, Fail, "cannot build a request: "+err.Error(), exs...)
		return q, false
	}
	return q, true
}

// notes is what the evidence says of how q was built: "" or "; ..." .
func notes(q request) string {
	if len(q.notes) == 0 {
		return ""
	}
	return " (" + strings.Join(q.notes, "; ") + ")"
}

// send sends q, retrying the answers the contract says to retry
// (runner.sendRetried): what a check judges is the last answer.
func (c *checker) send(ctx context.Context, q request) *Exchange {
	return c.p.r.sendRetried(ctx, c.p.keyHeader(), c.profile(), q)
}

// sendOnce sends q once: for the concurrent check's burst, whose every
// answer is judged.
func (c *checker) sendOnce(ctx context.Context, q request) *Exchange {
	e := c.p.r.send(ctx, c.p.keyHeader(), q)
	e.profile = c.profile()
	return e
}

// profile is the operation's profile: how it refuses requests and reads
// quoted keys.
func (c *checker) profile() idem.Profile { return idem.Profile(c.p.o.Policy.Profile) }

func (c *checker) missingKey(ctx context.Context) {
	const check = "missing-key"
	if !c.p.o.Policy.Required {
		c.add(check, Skip, "the key is optional (x-idempotent.required: false)")
		return
	}
	q, ok := c.fixture(ctx, check)
	if !ok {
		return
	}
	pr := c.p.probe(q)
	before := pr.list(ctx)
	ex := c.send(ctx, q)
	var problems []string
	if d := wantRefusal(ex, idem.ErrKeyRequired); d != "" {
		problems = append(problems, d)
	}
	effect := pr.expect(ctx, before, 0, "the request without a key had an effect", &problems)
	c.verdict(check, fmt.Sprintf("%s %s without %s: %s%s", q.method, q.path, c.p.keyHeader(), ex.describe(), effect), problems, ex)
}

func (c *checker) malformedKeys(ctx context.Context) {
	bad, err := badKeys(c.p.o.Policy.KeyFormat, c.p.newKey())
	if err != nil {
		for _, check := range []string{"malformed-key/format", "malformed-key/too-long"} {
			c.add(check, Fail, err.Error())
		}
		return
	}
	cases := []struct {
		check, what string
		keys        []string
	}{
		{"malformed-key/format", bad.what, []string{bad.wrong}},
		{"malformed-key/too-long", bad.longWhat, []string{bad.long}},
		{"malformed-key/repeated", "the header twice, with two valid keys", []string{c.p.newKey(), c.p.newKey()}},
	}
	for _, k := range cases {
		q, ok := c.fixture(ctx, k.check)
		if !ok {
			continue
		}
		ex := c.send(ctx, q.withKeys(k.keys...))
		var problems []string
		if d := wantRefusal(ex, idem.ErrKeyMalformed); d != "" {
			problems = append(problems, d)
		}
		c.verdict(k.check, fmt.Sprintf("%s: %s", k.what, ex.describe()), problems, ex)
	}
}

// badKeyset is what keyFormat refuses: a key of another shape and one
// character too long, each with what it is.
type badKeyset struct{ wrong, what, long, longWhat string }

// badKeys is what key format f refuses, the long key one character longer
// than fresh, a valid key of f; an error for a format conformance does not
// know, rather than a key another format would refuse.
func badKeys(f, fresh string) (badKeyset, error) {
	b := badKeyset{long: fresh + "0", longWhat: "a UUID with one character more (37)"}
	switch f {
	case "uuid":
		b.wrong, b.what = "not-a-uuid-"+strconv.FormatInt(time.Now().UnixNano(), 36), "a key that is not a UUID"
	case "uuidv4":
		b.wrong, b.what = uuid.Must(uuid.NewV7()).String(), "a UUIDv7 where uuidv4 is declared"
	case "uuidv7":
		b.wrong, b.what = uuid.NewString(), "a UUIDv4 where uuidv7 is declared"
	case "opaque":
		b.wrong, b.what = "conformance key\x7f", "a key with a control character (opaque keys are visible ASCII)"
		b.long, b.longWhat = strings.Repeat("k", 256), "a key of 256 characters (the limit is 255)"
	case "printable":
		b.wrong, b.what = "conformance\u200bkey", "a key with a format character, U+200B (printable keys have none)"
		b.long, b.longWhat = strings.Repeat("k", 256), "a key of 256 characters (the limit is 255)"
	default:
		return b, fmt.Errorf("conformance: no malformed key for key format %q", f)
	}
	return b, nil
}

// sequence runs one key through first execution, replay, reordered replay
// and a conflicting body.
func (c *checker) sequence(ctx context.Context) {
	const first = "first-execution"
	dependent := []string{"key-echo", "content-digest", "replay", "replay/last-modified", "replay/canonical-json", "conflict"}
	skipAll := func(why string) {
		for _, d := range dependent {
			c.add(d, Skip, why)
		}
	}
	q, ok := c.fixture(ctx, first)
	if !ok {
		why := "no request could be built (see first-execution)"
		if c.results[len(c.results)-1].Outcome == Skip {
			why = "a prerequisite failed (see first-execution)"
		}
		skipAll(why)
		return
	}
	key := c.p.newKey()
	q = q.withKeys(key)
	pr := c.p.probe(q)
	before := pr.list(ctx)

	e1 := c.send(ctx, q)
	var problems []string
	switch {
	case e1.Status == 0:
		problems = append(problems, "no response: "+e1.Error)
	case !c.p.kept(e1.Status):
		problems = append(problems, fmt.Sprintf("got %s, a status the contract does not keep (a 2xx or one of replayStatuses %v); the body (%s) or parameters may not suit this service: supply them", e1.describe(), c.p.o.Policy.ReplayStatuses, c.p.source))
	case e1.replayed() && e1.attempts() == 1:
		// After retries a replay is the execution of an earlier attempt.
		problems = append(problems, "a fresh key was answered as a replay (Idempotent-Replayed: true)")
	}
	if e1.header("Last-Modified") != "" && e1.replayed() {
		problems = append(problems, "a first execution carries Last-Modified")
	}
	effect := ""
	if len(problems) == 0 {
		effect = pr.expect(ctx, before, 1, "one request had several effects", &problems)
		before = pr.list(ctx)
	}
	c.verdict(first, fmt.Sprintf("%s %s with a fresh key and %s%s: %s, %d bytes%s", q.method, q.path, c.p.source, notes(q), e1.describe(), len(e1.raw), effect), problems, e1)
	if len(problems) > 0 {
		skipAll("the first execution was not kept (see first-execution)")
		return
	}

	e2 := c.send(ctx, q)

	// key-echo: first response and replay.
	problems = nil
	for _, e := range []*Exchange{e1, e2} {
		if got := e.header(c.p.keyHeader()); got != key {
			problems = append(problems, fmt.Sprintf("%s echoed %s %q, want %q", which(e, e1), c.p.keyHeader(), got, key))
		}
	}
	c.verdict("key-echo", fmt.Sprintf("%s: %s on the first response and on the replay", c.p.keyHeader(), key), problems, e1, e2)

	// content-digest
	problems = nil
	want := digest(q.body)
	for _, e := range []*Exchange{e1, e2} {
		if got := e.header("Content-Digest"); got != want {
			problems = append(problems, fmt.Sprintf("%s has Content-Digest %q, want %q (SHA-256 of the request body)", which(e, e1), got, want))
		}
	}
	c.verdict("content-digest", "Content-Digest: "+want+" on the first response and on the replay", problems, e1, e2)

	// replay: also the response headers the spec declares, which the engine
	// stores with the response.
	problems = sameResponse(e1, e2)
	for _, h := range c.p.o.StoredHeaders(e1.Status) {
		if a, b := e1.header(h), e2.header(h); a != b {
			problems = append(problems, fmt.Sprintf("declared response header %s is %q on the replay, %q on the first response", h, b, a))
		}
	}
	effect = pr.expect(ctx, before, 0, "the replay had an effect", &problems)
	c.verdict("replay", fmt.Sprintf("the same request again: %s, %d bytes identical to the first%s", e2.describe(), len(e2.raw), effect), problems, e1, e2)

	// replay/last-modified
	problems = nil
	lm, errLM := http.ParseTime(e2.header("Last-Modified"))
	date, errDate := http.ParseTime(e2.header("Date"))
	switch {
	case e2.header("Last-Modified") == "":
		problems = append(problems, "the replay has no Last-Modified")
	case errLM != nil:
		problems = append(problems, fmt.Sprintf("Last-Modified %q is not an HTTP date", e2.header("Last-Modified")))
	case errDate != nil:
		problems = append(problems, fmt.Sprintf("Date %q is missing or not an HTTP date", e2.header("Date")))
	case lm.After(date):
		problems = append(problems, fmt.Sprintf("Last-Modified %s is after Date %s", e2.header("Last-Modified"), e2.header("Date")))
	}
	c.verdict("replay/last-modified", fmt.Sprintf("Last-Modified %s, Date %s", e2.header("Last-Modified"), e2.header("Date")), problems, e2)

	// replay/canonical-json
	if !c.p.isJSON {
		c.add("replay/canonical-json", Skip, "the body is not JSON ("+c.p.ctype+")")
	} else if re := reordered(c.p.bodyOf(q)); bytes.Equal(re, q.body) {
		c.add("replay/canonical-json", Skip, "the body has no members to reorder")
	} else {
		e3 := c.send(ctx, q.withBody(re))
		c.verdict("replay/canonical-json", fmt.Sprintf("members reversed and white space added (%d bytes instead of %d): %s", len(re), len(q.body), e3.describe()),
			sameResponse(e1, e3), e1, e3)
	}

	// conflict
	c.conflict(ctx, q, e1)
}

// bodyOf is the JSON body of q, decoded.
func (p *opRun) bodyOf(q request) any {
	if bytes.Equal(q.body, p.raw) {
		return p.body
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(q.body))
	dec.UseNumber()
	_ = dec.Decode(&v)
	return v
}

func (c *checker) conflict(ctx context.Context, q request, e1 *Exchange) {
	const check = "conflict"
	if !c.p.isJSON {
		c.add(check, Skip, "another body can only be derived for JSON bodies ("+c.p.ctype+")")
		return
	}
	other, ok := variant(c.p.schema, c.p.bodyOf(q), c.p.o.Policy.FingerprintExclude)
	if !ok {
		c.add(check, Fail, "cannot derive another valid body from "+c.p.source+" (no member can change outside fingerprint.exclude); supply a body with more members")
		return
	}
	ob := c.p.encode(other)
	e := c.send(ctx, q.withBody(ob))
	var problems []string
	if d := wantRefusal(e, idem.ErrFingerprintMismatch); d != "" {
		problems = append(problems, d)
	}
	if e.Status != 0 && bytes.Equal(e.raw, e1.raw) {
		problems = append(problems, "the answer is the original request's body")
	}
	if e.replayed() {
		problems = append(problems, "the answer is marked Idempotent-Replayed: another body's response was replayed")
	}
	c.verdict(check, fmt.Sprintf("the same key with %s: %s (profile %s)", ob, e.describe(), c.p.o.Policy.Profile), problems, e1, e)
}

func (c *checker) quotedKey(ctx context.Context) {
	const check = "quoted-key"
	q, ok := c.fixture(ctx, check)
	if !ok {
		return
	}
	key := c.p.newKey()
	e1 := c.send(ctx, q.withKeys(key))
	if !c.p.kept(e1.Status) {
		c.add(check, Fail, "the bare key's request was not kept: "+e1.describe(), e1)
		return
	}
	quoted := strconv.Quote(key)
	e2 := c.send(ctx, q.withKeys(quoted))
	if c.profile() == idem.ProfileStripe {
		// Keys are taken as sent: the quoted key is another key, whose
		// request runs (and may fail, acting on the same resource again).
		var problems []string
		p, refused := e2.refusal()
		switch {
		case e2.Status == 0:
			problems = append(problems, "no response: "+e2.Error)
		case e2.replayed():
			problems = append(problems, "the quoted key replayed the bare key's response: it was read as an sf-string, not as sent (profile stripe)")
		case refused && (p.Reason == idemproblem.ReasonKeyMalformed || p.Reason == idemproblem.ReasonKeyRequired):
			problems = append(problems, "the quoted key was refused: "+e2.describe())
		}
		c.verdict(check, fmt.Sprintf("%s then %s: %s, run as another key (profile stripe)", key, quoted, e2.describe()), problems, e1, e2)
		return
	}
	c.verdict(check, fmt.Sprintf("%s then %s: %s, the same response", key, quoted, e2.describe()), sameResponse(e1, e2), e1, e2)
}

func (c *checker) tenants(ctx context.Context) {
	const check = "tenants"
	cfg := c.p.r.cfg
	if cfg.TenantHeader == "" {
		c.add(check, Skip, "no tenant header and tenants given")
		return
	}
	// The same request under both tenants: resources the path names are
	// created by each tenant, as a tenant cannot act on another's.
	a, b := cfg.Tenants[0], cfg.Tenants[1]
	qa, ok := c.fixtureFor(ctx, check, a)
	if !ok {
		return
	}
	qb, ok := c.fixtureFor(ctx, check, b)
	if !ok {
		return
	}
	key := c.p.newKey()
	qa, qb = qa.withKeys(key), qb.withKeys(key)
	ea := c.send(ctx, qa)
	eb := c.send(ctx, qb)
	ea2 := c.send(ctx, qa)
	var problems []string
	if !c.p.kept(ea.Status) || ea.replayed() {
		problems = append(problems, fmt.Sprintf("tenant %s's first request: %s", a, ea.describe()))
	}
	switch {
	case eb.replayed() && (eb.attempts() == 1 || bytes.Equal(eb.raw, ea.raw)):
		// After retries a replay may be of b's own earlier attempt, not of
		// a's response.
		problems = append(problems, fmt.Sprintf("tenant %s got a replay for a key only tenant %s used: %s", b, a, eb.describe()))
	case !c.p.kept(eb.Status):
		problems = append(problems, fmt.Sprintf("tenant %s's request with the same key: %s, want it executed", b, eb.describe()))
	}
	if d := sameResponse(ea, ea2); len(d) > 0 {
		problems = append(problems, fmt.Sprintf("tenant %s's retry: %s", a, strings.Join(d, ", ")))
	}
	c.verdict(check, fmt.Sprintf("one key under %s %s and %s: %s executed, %s executed, %s's retry replayed", cfg.TenantHeader, a, b, ea.describe(), eb.describe(), a), problems, ea, eb, ea2)
}

// sameResponse lists how b fails to replay a.
func sameResponse(a, b *Exchange) []string {
	var out []string
	if b.Status == 0 {
		return []string{"no response: " + b.Error}
	}
	if b.Status != a.Status {
		out = append(out, fmt.Sprintf("status %s, the original was %d", b.describe(), a.Status))
	}
	if !bytes.Equal(a.raw, b.raw) {
		out = append(out, fmt.Sprintf("the body differs from the original (%d bytes vs %d, first difference at byte %d)", len(b.raw), len(a.raw), firstDiff(a.raw, b.raw)))
	}
	if !b.replayed() {
		out = append(out, "Idempotent-Replayed: true is missing")
	}
	return out
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func which(e, first *Exchange) string {
	if e == first {
		return "the first response"
	}
	return "the replay"
}

// concurrent sends Concurrency identical requests at once.
func (c *checker) concurrent(ctx context.Context) {
	const check = "concurrent"
	q, ok := c.fixture(ctx, check)
	if !ok {
		return
	}
	n := c.p.r.cfg.Concurrency
	q = q.withKeys(c.p.newKey())
	pr := c.p.probe(q)
	before := pr.list(ctx)

	exs := make([]*Exchange, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			exs[i] = c.sendOnce(ctx, q)
		}()
	}
	close(start)
	wg.Wait()
	// An answer to retry that is not an in-flight refusal (an unknown
	// outcome, a 503, no response) is retried as a client would; its
	// request is then judged by its last answer.
	for i, e := range exs {
		if e.retryable() && !inFlight(e) {
			last := c.send(ctx, q)
			last.Earlier = append([]Exchange{*e}, last.Earlier...)
			exs[i] = last
		}
	}

	var executed []*Exchange
	inFlightN, replays := 0, 0
	var problems []string
	for _, e := range exs {
		switch {
		case inFlight(e):
			inFlightN++
			want := idem.ErrInFlight
			if p, _ := e.refusal(); p.Reason == idemproblem.ReasonLeaseLost {
				want = idem.ErrLeaseLost
			}
			if d := wantRefusal(e, want); d != "" {
				problems = appendOnce(problems, "in flight: "+d)
			}
			if _, ok := e.retryAfter(); !ok {
				problems = appendOnce(problems, fmt.Sprintf("a %d IDEMPOTENT_REQUEST_IN_PROGRESS without a valid Retry-After", e.Status))
			}
		case e.replayed():
			replays++
		case c.p.kept(e.Status):
			executed = append(executed, e)
		default:
			problems = appendOnce(problems, "unexpected answer "+e.describe())
		}
	}
	if len(executed) != 1 {
		problems = append(problems, fmt.Sprintf("%d of %d requests were executed (answered without Idempotent-Replayed), want exactly 1", len(executed), n))
	}
	var ref *Exchange
	if len(executed) > 0 {
		ref = executed[0]
		for _, e := range exs {
			if e.replayed() {
				if d := sameResponse(ref, e); len(d) > 0 {
					problems = appendOnce(problems, "a replay differs from the execution: "+strings.Join(d, ", "))
				}
			}
		}
		for _, e := range executed[1:] {
			if !bytes.Equal(e.raw, ref.raw) {
				problems = appendOnce(problems, "the executions answered different bodies")
			}
		}
	}

	// Retry until the outcome is final: no claim may be left in flight.
	final := c.send(ctx, q)
	switch {
	case final.retryable():
		problems = append(problems, fmt.Sprintf("still in flight after %s (the last answered %d)", plural(final.attempts(), "attempt"), final.Status))
	case ref != nil:
		if d := sameResponse(ref, final); len(d) > 0 {
			problems = append(problems, "the retry after the burst: "+strings.Join(d, ", "))
		}
	}
	effect := pr.expect(ctx, before, 1, "the duplicates had several effects", &problems)
	all := append(append([]*Exchange(nil), exs...), final)
	c.verdict(check, fmt.Sprintf("%d identical requests at once: %d executed, %d replayed, %d in flight (%d with Retry-After); then the same request: %s%s",
		n, len(executed), replays, inFlightN, idem.ProblemFor(idem.ErrInFlight, c.profile()).Status, final.describe(), effect), problems, all...)
}

// inFlight reports whether e refuses a request because its key's first
// request still runs (or its lease was taken over), in e's profile.
func inFlight(e *Exchange) bool {
	p, ok := e.refusal()
	return ok && (p.Reason == idemproblem.ReasonInProgress || p.Reason == idemproblem.ReasonLeaseLost)
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
