// Package templates holds the default templates of idemgen's generated
// server. They are embedded in the generator; a user's templates directory
// replaces any of them by file name. See README.md for the data model, the
// func map and the slots.
package templates

import "embed"

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
