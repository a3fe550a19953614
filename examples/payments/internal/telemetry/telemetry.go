// Package telemetry sets up the example's traces and metrics from the
// environment, for cmd/payments and cmd/bookkeeper.
//
//	OTEL_TRACES_EXPORTER   none (default), stdout (JSON lines on standard
//	                       output) or otlp (OTLP over HTTP; the endpoint and
//	                       headers come from the standard OTEL_EXPORTER_OTLP_*
//	                       variables, by default http://localhost:4318)
//	OTEL_SERVICE_NAME      the service name on every span (default: the command's)
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/idemgen/idemgen/runtime/idemotel"
)

// Tracing is the process's tracing: Tracer is nil when it is off.
type Tracing struct {
	Tracer   *idemotel.Tracer
	Exporter string
	shutdown func(context.Context) error
}

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// SetupTracing reads OTEL_TRACES_EXPORTER and installs a TracerProvider and
// the W3C trace-context propagator as OpenTelemetry's globals.
func SetupTracing(ctx context.Context, service string) (*Tracing, error) {
	kind := os.Getenv("OTEL_TRACES_EXPORTER")
	var exp sdktrace.SpanExporter
	var err error
	switch kind {
	case "", "none":
		return &Tracing{Exporter: "none"}, nil
	case "stdout", "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
	case "otlp":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want none, stdout or otlp", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: %w", kind, err)
	}
	if name := os.Getenv("OTEL_SERVICE_NAME"); name != "" {
		service = name
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return &Tracing{Tracer: idemotel.New(idemotel.Options{TracerProvider: tp}), Exporter: kind, shutdown: tp.Shutdown}, nil
}
