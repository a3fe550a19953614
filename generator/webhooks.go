package generator

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Webhook is one entry of an OpenAPI 3.1 document's `webhooks` map: a
// request the API sends to its subscribers. The generator emits a typed
// sender that enqueues it through the outbox and a typed receiver that runs
// it through the inbox (webhooks.gen.go).
type Webhook struct {
	Name       string // key in the webhooks map, e.g. "email.sent"; also the CloudEvents type
	GoName     string // exported name: EmailSent
	Method     string // the spec's method (POST); deliveries are always POSTed
	Summary    string
	Deprecated bool
	Segment    string // path segment of the receiver route: the name, path-escaped
	MediaType  string // the payload's media type (JSON)
	Payload    GoType // Go type of the request body
	Required   bool   // the spec requires a body
	// Security lists the security schemes the webhook itself declares
	// (sorted); the document's root security never applies to webhooks.
	Security []string
	Location string // JSON pointer, e.g. #/webhooks/email.sent/post

	// SenderName and TypeConstName are Send<GoName> and
	// WebhookType<GoName> unless a schema of the same name took them first.
	SenderName, TypeConstName string
}

// Sender, TypeConst, Handler name the webhook's Go identifiers.
func (w *Webhook) Sender() string    { return w.SenderName }
func (w *Webhook) TypeConst() string { return w.TypeConstName }
func (w *Webhook) Handler() string   { return "handleWebhook" + w.GoName }

// webhookNames are generated once a spec has webhooks.
var webhookNames = []string{"WebhookReceiver", "UnimplementedWebhookReceiver", "NewWebhookHandler",
	"WebhookOption", "WebhookSource", "DefaultWebhookBasePath", "WithWebhookBasePath",
	"WithWebhookMaxBodyBytes", "WithWebhookVerifier", "WithWebhookErrorHook", "WithWebhookMiddleware"}

// webhooks models doc.Webhooks, sorted by name. Webhooks inherit nothing
// from the document's security: only a webhook's own counts, and a warning
// says so when the root declares some.
func (b *builder) webhooks(doc *openapi3.T) []*Webhook {
	if len(doc.Webhooks) == 0 {
		return nil
	}
	b.names.pkg.reserve(webhookNames...)
	receiver := b.names.scope("methods of WebhookReceiver")
	var out []*Webhook
	var unsecured []string
	for _, name := range sortedKeys(doc.Webhooks) {
		item := doc.Webhooks[name]
		if item == nil {
			continue
		}
		where := fmt.Sprintf("webhook %q", name)
		ops := item.Operations()
		method := "post"
		op := ops["POST"]
		if op == nil {
			for _, m := range sortedKeys(ops) {
				method, op = strings.ToLower(m), ops[m]
				break
			}
		}
		if op == nil {
			b.warnf(where, "no operation; skipped")
			continue
		}
		if len(ops) > 1 {
			b.warnf(where, "%d operations; only %s is generated", len(ops), strings.ToUpper(method))
		}
		w := &Webhook{Name: name, Method: strings.ToUpper(method), Summary: firstLine(op.Summary),
			Deprecated: op.Deprecated, Segment: url.PathEscape(name),
			Location: "#/webhooks/" + pointerEscape(name) + "/" + method}
		if w.Summary == "" {
			w.Summary = firstLine(op.Description)
		}
		if op.RequestBody == nil || op.RequestBody.Value == nil {
			b.warnf(where, "no request body; skipped")
			continue
		}
		mt, media := pickMedia(op.RequestBody.Value.Content)
		if media == nil || !isJSON(mt) {
			b.warnf(where, "request body is not JSON (%s); skipped", mt)
			continue
		}
		w.MediaType, w.Required = mt, op.RequestBody.Value.Required
		want := goName(name)
		wid := b.names.fixed(receiver, &w.GoName, want, w.Location, "webhook", rankOperation, closeness(name, want), true)
		b.names.derived(b.names.pkg, &w.SenderName, wid, "", w.Location, "webhook sender", rankDerived, false).want = func() string { return "Send" + w.GoName }
		b.names.derived(b.names.pkg, &w.TypeConstName, wid, "", w.Location, "webhook type", rankDerived, false).want = func() string { return "WebhookType" + w.GoName }
		w.Payload = b.goType(media.Schema, nameHint{parent: wid, suffix: "Payload", alone: true}, fmt.Sprintf("%s/requestBody/content/%s/schema", w.Location, pointerEscape(mt)))
		if op.Security != nil {
			seen := map[string]bool{}
			for _, req := range *op.Security {
				for s := range req {
					if !seen[s] {
						seen[s] = true
						w.Security = append(w.Security, s)
					}
				}
			}
			sort.Strings(w.Security)
		} else {
			unsecured = append(unsecured, name)
		}
		out = append(out, w)
	}
	if root := securityNames(doc.Security); len(root) > 0 && len(unsecured) > 0 {
		b.warnf("webhooks", "the document's security (%s) does not apply to webhooks; without security of their own: %s (authenticate deliveries with WithWebhookVerifier)",
			strings.Join(root, ", "), strings.Join(unsecured, ", "))
	}
	return out
}

func securityNames(reqs openapi3.SecurityRequirements) []string {
	seen := map[string]bool{}
	for _, req := range reqs {
		for s := range req {
			seen[s] = true
		}
	}
	return sortedKeys(seen)
}
