// Package webhook delivers outbox events as HTTP webhooks and receives them
// exactly once through the inbox.
//
// # Sending
//
// Send enqueues a webhook in the caller's transaction with events.Enqueue, so
// it exists if and only if the business writes commit; inside an idempotent
// request the event's id is derived from the request's idempotency key and
// the key travels in the CloudEvents extension "idempotencykey". A relay
// (events.NewRelay) hands the outbox to an HTTPPublisher, which POSTs the
// event's data to the URL its Target func returns, with:
//
//   - Idempotency-Key: the event's "idempotencykey" extension, or its id when
//     the event was enqueued outside an idempotent request;
//   - Content-Type: the event's data content type (application/json);
//   - CloudEvents binary-mode headers ce-id, ce-type, ce-source,
//     ce-specversion (and ce-time, ce-subject when set);
//   - whatever the optional Sign hook adds (see SignHMAC).
//
// A 2xx answer is a delivery. A 4xx other than 408 and 429 is permanent
// (events.Permanent: the relay dead-letters the event at once, and
// events.Requeue revives it); anything else, and a transport error, is
// retried with the relay's backoff. Delivery is at least once.
//
// # Receiving
//
// Receiver.Receive serves one delivery: it requires the Idempotency-Key
// header (400 problem+json without it), reads the bounded body, lets the
// caller decode and validate it (a *idem.RequestError is a 400 and nothing
// is recorded), then runs the handler through the inbox (events.HandleMessage)
// keyed by the consumer and the delivery key, fingerprinted by the body:
//
//   - first delivery: the handler runs, its writes commit with the inbox
//     record, 204 No Content;
//   - the same delivery again: 204 with Idempotent-Replayed: true, the
//     handler does not run;
//   - the same key with another payload: 409 problem+json
//     (CONFLICTING_IDEMPOTENT_REQUEST), the handler does not run;
//   - the handler fails: 500, nothing is recorded, so the sender's retry
//     runs it again.
//
// The delivery key is the webhook's name (the scope), the Idempotency-Key
// header and, when the sender is CloudEvents-aware, ce-source and ce-id. One
// request may send several webhooks, all with its idempotency key; the
// CloudEvents id (derived from the key and the event's ordinal) tells them
// apart, while a redelivery keeps it. A sender without ce-id is deduplicated
// by the scope and the header alone.
package webhook

// SupportPackageIsVersion1 is referenced by generated code; a runtime that
// drops it makes stale generated code fail to compile.
const SupportPackageIsVersion1 = true

// Header names of the webhook contract.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
	HeaderCEID           = "Ce-Id"
	HeaderCEType         = "Ce-Type"
	HeaderCESource       = "Ce-Source"
	HeaderCESpecVersion  = "Ce-Specversion"
	HeaderCETime         = "Ce-Time"
	HeaderCESubject      = "Ce-Subject"
)

// ExtensionTenant is the CloudEvents extension attribute in which Send
// records the tenant of the idempotent request that enqueued the webhook, so
// that a publisher's Target can route by tenant.
const ExtensionTenant = "idemtenant"
