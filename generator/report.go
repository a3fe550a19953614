package generator

import (
	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/gofile"
)

// What a run returns, declared where the model and the emitters reach them
// too (package diag, package gofile).
type (
	// File is one generated file.
	File = gofile.File
	// Warning is a problem in the spec that generation worked around.
	Warning = diag.Warning
	// WarningKind says what a warning is about (diag.WarningKind).
	WarningKind = diag.WarningKind
	// SpecError lists every problem found in one spec.
	SpecError = diag.SpecError
)

// The kinds of warnings (diag.WarningKind).
const (
	WarnSpec          = diag.WarnSpec
	WarnNameYields    = diag.WarnNameYields
	WarnNameClash     = diag.WarnNameClash
	WarnRefused       = diag.WarnRefused
	WarnNotIdempotent = diag.WarnNotIdempotent
	WarnTyped         = diag.WarnTyped
	WarnTemplates     = diag.WarnTemplates
	WarnWebhooks      = diag.WarnWebhooks
)

// ErrSpec is returned (wrapped) when the spec holds errors; the error text
// lists every one of them, sorted, one per line.
var ErrSpec = diag.ErrSpec

// WarningLines is what the command prints of warnings ws (diag.WarningLines).
func WarningLines(ws []Warning, verbose bool) []string { return diag.WarningLines(ws, verbose) }

// StrictWarnings returns the warnings of ws that -strict fails on.
func StrictWarnings(ws []Warning) []Warning { return diag.StrictWarnings(ws) }
