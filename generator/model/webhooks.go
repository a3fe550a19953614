package model

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

// webhooks models doc.Webhooks, sorted by name. Webhooks inherit nothing
// from the document's security: only a webhook's own counts, and a warning
// says so when the root declares some.
func (b *builder) webhooks(doc *openapi3.T) []*Webhook {
	if len(doc.Webhooks) == 0 {
		return nil
	}
	b.names.pkg.reserve(reserved.Names[reserved.Webhooks]...)
	receiver := b.names.scope("methods of WebhookReceiver")
	handlers := b.names.scope("methods of webhookHandler")
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
			b.warnf(diag.WarnWebhooks, where, "no operation; skipped")
			continue
		}
		if len(ops) > 1 {
			b.warnf(diag.WarnWebhooks, where, "%d operations; only %s is generated", len(ops), strings.ToUpper(method))
		}
		w := &Webhook{Name: name, Method: strings.ToUpper(method), Summary: firstLine(op.Summary),
			Deprecated: op.Deprecated, Segment: url.PathEscape(name),
			Location: "#/webhooks/" + jsonkit.EscapeToken(name) + "/" + method}
		if w.Summary == "" {
			w.Summary = firstLine(op.Description)
		}
		if op.RequestBody == nil || op.RequestBody.Value == nil {
			b.warnf(diag.WarnWebhooks, where, "no request body; skipped")
			continue
		}
		mt, media := pickMedia(op.RequestBody.Value.Content)
		if media == nil || !speaksJSON(mt) {
			b.warnf(diag.WarnWebhooks, where, "request body is not JSON (%s); skipped", mt)
			continue
		}
		w.MediaType, w.Required = mt, op.RequestBody.Value.Required
		want := goName(name)
		wid := b.names.fixed(receiver, &w.GoName, want, w.Location, "webhook", rankOperation, closeness(name, want), true)
		b.names.affixed(b.names.pkg, &w.SenderName, wid, "Send", "", w.Location, "webhook sender")
		b.names.affixed(b.names.pkg, &w.TypeConstName, wid, "WebhookType", "", w.Location, "webhook type")
		b.names.affixed(handlers, &w.HandlerName, wid, "handleWebhook", "", w.Location, "webhook handler")
		w.Payload = b.goType(media.Schema, nameHint{parent: wid, suffix: "Payload", alone: true}, fmt.Sprintf("%s/requestBody/content/%s/schema", w.Location, jsonkit.EscapeToken(mt)))
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
		b.warnf(diag.WarnWebhooks, "webhooks", "the document's security (%s) does not apply to webhooks; without security of their own: %s (authenticate deliveries with WithWebhookVerifier)",
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
