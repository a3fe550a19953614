package model

import "testing"

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"createPayment": "CreatePayment", "payment_id": "PaymentID", "X-Request-ID": "XRequestID",
		"+1": "Plus1", "-1": "Minus1", "/": "Root", "": "Empty", "*": "Star", "<=": "LtEq",
		"-created": "MinusCreated", "reactions-+1": "ReactionsPlus1", "reactions--1": "ReactionsMinus1",
		"x-1": "X1", "_links": "Links", "@type": "AtType", "200": "X200", "2fa": "X2fa", "/docs": "Docs",
		"ünïcode": "Ünïcode", "日本": "X日本",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}
