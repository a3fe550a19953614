package generator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/model"
)

// Severity of a lint finding.
type Severity int

const (
	// SeverityNote is information: a deliberate opt-out (`x-idempotent:
	// false`). It does not fail lint.
	SeverityNote Severity = iota
	// SeverityWarning is a problem generation works around (an identifier
	// clash settled with a number, what kin-openapi's validation of the whole
	// document finds). It does not fail lint.
	SeverityWarning
	// SeverityError fails lint: a POST or PATCH that is silently not
	// idempotent, an invalid x-idempotent value, anything generation refuses,
	// and an opt-out when the config requires idempotency.
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityNote:
		return "note"
	case SeverityWarning:
		return "warning"
	}
	return "error"
}

// Finding is one result of Lint.
type Finding struct {
	Severity Severity
	Message  string // located: `openapi.yaml: operation "createOrder" (POST /orders): ...`
	// Kind is a warning's kind (SeverityWarning), by which the command
	// groups them (WarningLines).
	Kind WarningKind
}

func (f Finding) String() string { return f.Severity.String() + ": " + f.Message }

// Lint checks a spec for what `idemgen lint` gates on: every POST and PATCH
// must be idempotent or opt out explicitly (an error without either; a note
// with `x-idempotent: false`, an error too when cfg.RequireIdempotent), and
// the spec must generate. It returns the findings, errors first, each group
// sorted (by file and line where they have one); err is only for a spec
// that cannot be loaded at all.
func Lint(cfg Config) ([]Finding, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	doc, err := loadSpec(&cfg)
	if err != nil {
		return nil, err
	}
	file := specName(&cfg)
	var findings []Finding
	add := func(s Severity, format string, args ...any) {
		findings = append(findings, Finding{Severity: s, Message: fmt.Sprintf(format, args...)})
	}
	warn := func(w Warning) {
		findings = append(findings, Finding{Severity: SeverityWarning, Message: w.String(), Kind: w.Kind})
	}
	for _, w := range specWarnings(doc, file, true) {
		warn(w)
	}
	// Opt-outs are judged below, not by the model; so is the base path.
	opts := modelOptions(&cfg)
	opts.RequireIdempotent, opts.BasePath, opts.Source = false, new(string), ""
	if m, err := model.Build(doc, opts); err != nil {
		var se *SpecError
		if !errors.As(err, &se) {
			return nil, err
		}
		for _, p := range se.Problems {
			add(SeverityError, "%s", p)
		}
	} else {
		for _, w := range m.Warnings {
			if w.Message != model.NotIdempotentGap { // an error below
				warn(w)
			}
		}
	}
	_, hasRoot := doc.Extensions["x-idempotent"]
	for _, path := range doc.Paths.InMatchingOrder() {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			m := strings.ToUpper(method)
			if !model.IdempotentByDefault(m) {
				continue
			}
			op := ops[method]
			id := op.OperationID
			if id == "" {
				id = model.DefaultOperationID(m, path)
			}
			v, ok := op.Extensions["x-idempotent"]
			switch {
			case ok && v == false && cfg.RequireIdempotent:
				add(SeverityError, "%s: operation %q (%s %s): x-idempotent: false is not allowed: every POST and PATCH must be idempotent (-require)", file, id, m, path)
			case ok && v == false:
				add(SeverityNote, "%s: operation %q (%s %s): not idempotent: it opts out with x-idempotent: false", file, id, m, path)
			case !ok && !hasRoot:
				add(SeverityError, "%s: operation %q (%s %s): %s", file, id, m, path, model.NotIdempotentGap)
			}
		}
	}
	sort.SliceStable(findings, func(i, j int) bool {
		a, b := findings[i], findings[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		return diag.LocatedLess(a.Message, b.Message)
	})
	return findings, nil
}
