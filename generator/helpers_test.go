package generator

import (
	"bytes"
	"testing"
)

// addRootExtension adds `x-idempotent: {}` at the document root, in memory.
func addRootExtension(t testing.TB, data []byte) []byte {
	t.Helper()
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return append([]byte(`{"x-idempotent": {},`), trimmed[1:]...)
	}
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, "x-idempotent: {}\n"...)
}
