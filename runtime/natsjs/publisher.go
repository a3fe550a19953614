// Package natsjs connects idemgen's outbox and inbox (package events) to
// NATS JetStream.
//
// Publisher publishes outbox events to a stream, with the event id as
// Nats-Msg-Id so that the stream's duplicate window drops an event the relay
// publishes again. Consumer applies a stream's messages through the inbox and
// acknowledges them according to the outcome.
//
// Events travel in CloudEvents' structured content mode: the message body is
// the JSON-encoded event, with Content-Type application/cloudevents+json.
package natsjs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/runtime/events"
)

// ContentType is the Content-Type header of the messages Publisher sends.
const ContentType = "application/cloudevents+json"

// PublisherConfig tunes a Publisher. The zero value is usable.
type PublisherConfig struct {
	// Subject maps an event to the subject it is published on; by default
	// the event's type.
	Subject func(ev cloudevents.Event) string
	// ExpectStream, when set, makes the server refuse a publish that would
	// land in another stream.
	ExpectStream string
	// Timeout bounds PublishBatch's wait for the stream's acknowledgements
	// (Publish uses ctx's deadline, or the JetStream context's default
	// timeout); 5s by default.
	Timeout time.Duration
	// OnDuplicate is called for an event the stream reported as a
	// duplicate (dropped within its duplicate window): a relay re-published
	// it. Nil ignores it.
	OnDuplicate func(ev cloudevents.Event)
}

// Publisher publishes events to JetStream. It implements events.Publisher
// and events.BatchPublisher.
type Publisher struct {
	js  jetstream.JetStream
	cfg PublisherConfig
}

var _ events.BatchPublisher = (*Publisher)(nil)

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream, cfg PublisherConfig) *Publisher {
	if cfg.Subject == nil {
		cfg.Subject = func(ev cloudevents.Event) string { return ev.Type() }
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &Publisher{js: js, cfg: cfg}
}

func (p *Publisher) msg(ev cloudevents.Event) (*nats.Msg, []jetstream.PublishOpt, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, nil, events.Permanent(fmt.Errorf("natsjs: encode event %s: %w", ev.ID(), err))
	}
	m := nats.NewMsg(p.cfg.Subject(ev))
	m.Data = body
	m.Header.Set("Content-Type", ContentType)
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(ev.ID())}
	if p.cfg.ExpectStream != "" {
		opts = append(opts, jetstream.WithExpectStream(p.cfg.ExpectStream))
	}
	return m, opts, nil
}

// Publish publishes ev and waits for the stream's acknowledgement.
func (p *Publisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	m, opts, err := p.msg(ev)
	if err != nil {
		return err
	}
	ack, err := p.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return fmt.Errorf("natsjs: publish %s on %s: %w", ev.ID(), m.Subject, err)
	}
	if ack.Duplicate && p.cfg.OnDuplicate != nil {
		p.cfg.OnDuplicate(ev)
	}
	return nil
}

// PublishBatch publishes evs without waiting between them (JetStream's
// asynchronous publish), then waits for every acknowledgement or ctx.
func (p *Publisher) PublishBatch(ctx context.Context, evs []cloudevents.Event) []error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	errs := make([]error, len(evs))
	futures := make([]jetstream.PubAckFuture, len(evs))
	for i, ev := range evs {
		m, opts, err := p.msg(ev)
		if err != nil {
			errs[i] = err
			continue
		}
		futures[i], err = p.js.PublishMsgAsync(m, opts...)
		if err != nil {
			errs[i] = fmt.Errorf("natsjs: publish %s on %s: %w", ev.ID(), m.Subject, err)
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			if ack.Duplicate && p.cfg.OnDuplicate != nil {
				p.cfg.OnDuplicate(evs[i])
			}
		case err := <-f.Err():
			errs[i] = fmt.Errorf("natsjs: publish %s on %s: %w", evs[i].ID(), f.Msg().Subject, err)
		case <-ctx.Done():
			errs[i] = fmt.Errorf("natsjs: publish %s: %w", evs[i].ID(), ctx.Err())
		}
	}
	return errs
}
