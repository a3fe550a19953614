// Package templates holds the default templates of idemgen's generated
// server. They are embedded in the generator; a user's templates directory
// replaces any of them by file name. See README.md for the data model, the
// func map and the slots.
package templates

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"regexp"
)

// FS holds the default templates: every *.tmpl file of this directory.
//
//go:embed *.tmpl
var FS embed.FS

// Files maps each default template file to the generated file it renders;
// an empty output means the file only defines templates used by others. A
// template that renders only white space produces no file (webhooks.go.tmpl
// for a spec without webhooks).
var Files = []struct{ Template, Output string }{
	{"server.go.tmpl", "server.gen.go"},
	{"webhooks.go.tmpl", "webhooks.gen.go"},
	{"client.go.tmpl", "client.gen.go"},
	{"slots.tmpl", ""},
}

// Sum is the short SHA-256 of the default template name ("" for none):
// what `idemgen templates eject` records in a copy, so that generate can
// tell a copy of today's template from one of an older idemgen.
func Sum(name string) string {
	data, err := FS.ReadFile(name)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// EjectHeader is the first line of a copy of the default template name:
// a template comment that renders nothing.
func EjectHeader(name string) string {
	return fmt.Sprintf("{{- /* idemgen templates eject: %s sha256:%s. This copy replaces the built-in template and no longer gets idemgen's fixes; prefer the slots of slots.tmpl. */ -}}\n", name, Sum(name))
}

var ejectHeader = regexp.MustCompile(`^\{\{- /\* idemgen templates eject: (\S+) sha256:([0-9a-f]+)\.`)

// EjectedSum returns the sum recorded in a copy's header, or "" when data
// has none (a copy made by hand, or by an idemgen before the header).
func EjectedSum(data []byte) string {
	if m := ejectHeader.FindSubmatch(data); m != nil {
		return string(m[2])
	}
	return ""
}
