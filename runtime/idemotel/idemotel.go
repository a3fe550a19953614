// Package idemotel traces idempotent requests and the events they send with
// OpenTelemetry. It lives outside runtime/idem so a service that does not
// trace does not compile OpenTelemetry.
//
//	tr := idemotel.New(idemotel.Options{})                        // the global TracerProvider
//	engine, _ := idem.New(pool, idem.Config{Observers: []idem.Observer{tr}, ...})
//	relay := events.NewRelay(pool, tr.Publisher(publisher), cfg)  // publish spans
//	consumer handler: tr.Handler(handler)                          // process spans
//
// Each request gets a span "idem <operationId>" (a child of the HTTP
// server's span when there is one) with children for its phases: idem.read,
// idem.claim, idem.handler, idem.recover, idem.store, idem.replay; spans the
// handler starts are children of idem.handler. When the request ends its
// span carries idem.operation, idem.outcome (idem.Outcome.Label),
// idem.replayed, idem.attempt, idem.fence, idem.key_hash and
// http.response.status_code. The key itself is never recorded, only its
// hash (idem.Key.Hash), and neither are bodies.
//
// Events the handler enqueues (runtime/events) carry the trace context in
// the CloudEvents distributed-tracing extension (traceparent, tracestate).
// The relay's publish span and the consumer's process span continue that
// trace, so one trace runs from the request through the event to the
// consumer.
package idemotel

import (
	"context"
	"errors"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/extensions"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/idemgen/idemgen/runtime/idemotel"

// Options tune New.
type Options struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// TenantAttribute adds idem.tenant to request spans. Off by default:
	// a tenant may identify a customer.
	TenantAttribute bool
}

// Tracer traces an engine (as an idem.Observer), a relay's publisher and
// a consumer's handler.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
	opts   Options
}

var _ idem.Observer = (*Tracer)(nil)

// New returns a Tracer.
func New(opts Options) *Tracer {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), opts: opts}
}

// Request implements idem.Observer: it starts the request's span, and makes
// events enqueued under it carry its trace.
func (t *Tracer) Request(ctx context.Context, op *idem.Operation) (context.Context, func(idem.Outcome)) {
	ctx, span := t.tracer.Start(ctx, "idem "+op.ID, trace.WithAttributes(
		attribute.String("idem.operation", op.ID),
		attribute.String("idem.mode", string(op.Policy.Mode)),
		attribute.String("http.request.method", op.Method),
		attribute.String("http.route", op.Pattern),
	))
	ctx = events.WithExtensions(ctx, t.extensions)
	return ctx, func(o idem.Outcome) {
		label := o.Label()
		attrs := []attribute.KeyValue{
			attribute.String("idem.outcome", label),
			attribute.Bool("idem.replayed", o.Replayed),
			attribute.Int("idem.attempt", o.Attempt),
			attribute.Int64("idem.fence", o.Fence),
			attribute.Int("http.response.status_code", o.Status),
		}
		if o.KeyHash != "" {
			attrs = append(attrs, attribute.String("idem.key_hash", o.KeyHash))
		}
		if t.opts.TenantAttribute && o.Tenant != "" {
			attrs = append(attrs, attribute.String("idem.tenant", o.Tenant))
		}
		span.SetAttributes(attrs...)
		if o.Status >= 500 || label == "failed" {
			span.SetStatus(codes.Error, label)
		}
		span.End()
	}
}

// Phase implements idem.Observer: a child span per phase. A claim that
// finds the key held (pgx.ErrNoRows) is not an error: idem.claimed=false.
func (t *Tracer) Phase(ctx context.Context, op *idem.Operation, p idem.Phase) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, "idem."+string(p))
	return ctx, func(err error) {
		switch {
		case err == nil:
			if p == "claim" {
				span.SetAttributes(attribute.Bool("idem.claimed", true))
			}
		case errors.Is(err, pgx.ErrNoRows) && p == "claim":
			span.SetAttributes(attribute.Bool("idem.claimed", false))
		default:
			// The phase's error kind, not its text: a driver's message may
			// quote values.
			span.SetStatus(codes.Error, "idem."+string(p)+" failed")
		}
		span.End()
	}
}

// extensions returns the trace context of ctx as CloudEvents extension
// attributes, for events.WithExtensions.
func (t *Tracer) extensions(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	out := map[string]string{}
	if v := c[extensions.TraceParentExtension]; v != "" {
		out[extensions.TraceParentExtension] = v
		if s := c[extensions.TraceStateExtension]; s != "" {
			out[extensions.TraceStateExtension] = s
		}
	}
	return out
}

// EventContext returns ctx carrying the trace context an event brought in
// its traceparent and tracestate extensions (ctx unchanged without them).
func (t *Tracer) EventContext(ctx context.Context, ev cloudevents.Event) context.Context {
	c := propagation.MapCarrier{}
	if ext, ok := extensions.GetDistributedTracingExtension(ev); ok {
		c[extensions.TraceParentExtension] = ext.TraceParent
		c[extensions.TraceStateExtension] = ext.TraceState
	}
	return t.prop.Extract(ctx, c)
}

// eventSpan starts a span for ev in the trace ev carries.
func (t *Tracer) eventSpan(ctx context.Context, name string, kind trace.SpanKind, ev cloudevents.Event) (context.Context, trace.Span) {
	return t.tracer.Start(t.EventContext(ctx, ev), name+" "+ev.Type(), trace.WithSpanKind(kind), trace.WithAttributes(
		attribute.String("messaging.operation.type", name),
		attribute.String("messaging.message.id", ev.ID()),
		attribute.String("cloudevents.event_id", ev.ID()),
		attribute.String("cloudevents.event_type", ev.Type()),
		attribute.String("cloudevents.event_source", ev.Source()),
	))
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Publisher wraps a relay's publisher: each event is published under a
// producer span "publish <type>" in the trace the event carries. Events are
// passed on unchanged. A BatchPublisher stays one.
func (t *Tracer) Publisher(p events.Publisher) events.Publisher {
	if bp, ok := p.(events.BatchPublisher); ok {
		return &batchPublisher{publisher{t, p}, bp}
	}
	return publisher{t, p}
}

type publisher struct {
	t *Tracer
	p events.Publisher
}

func (p publisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	ctx, span := p.t.eventSpan(ctx, "publish", trace.SpanKindProducer, ev)
	err := p.p.Publish(ctx, ev)
	endSpan(span, err)
	return err
}

type batchPublisher struct {
	publisher
	bp events.BatchPublisher
}

func (p *batchPublisher) PublishBatch(ctx context.Context, evs []cloudevents.Event) []error {
	spans := make([]trace.Span, len(evs))
	for i, ev := range evs {
		_, spans[i] = p.t.eventSpan(ctx, "publish", trace.SpanKindProducer, ev)
		spans[i].SetAttributes(attribute.Int("messaging.batch.message_count", len(evs)))
	}
	errs := p.bp.PublishBatch(ctx, evs)
	for i, span := range spans {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		endSpan(span, err)
	}
	return errs
}

// Handler wraps a consumer's handler (natsjs.ConsumerConfig.Handler, or a
// function given to events.Handle): it runs under a consumer span
// "process <type>" in the trace the event carries.
func (t *Tracer) Handler(h func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error) func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
	return func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
		ctx, span := t.eventSpan(ctx, "process", trace.SpanKindConsumer, ev)
		err := h(ctx, tx, ev)
		endSpan(span, err)
		return err
	}
}
